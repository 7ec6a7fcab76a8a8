"""One loop run: the outer follow-up loop around the inner turn loop.

``_Run`` holds the state of a single invocation; ``_turn.py`` runs a turn and
``_dispatch.py`` a tool batch. The public entry points live in ``_entry.py``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import msgspec

from ._agent_queues import QueuePoll
from ._config import AgentLoopConfig, TransformContext
from ._errors import HookFailed, single_exception
from ._events import (
    AgentEnd,
    AgentStart,
    MessageEnd,
    MessageStart,
    TurnEnd,
    TurnEndReason,
    TurnStart,
)
from ._history import History, error_result
from ._instrumentation import Observer, RunInfo, enter, inherited
from ._policy import MessagesView
from ._run_policies import RunPolicies
from ._stream import Accumulator
from ._tools import RunLink
from ._turn import resume_turn, run_turn
from ._types import (
    AgentContext,
    AgentMessage,
    AgentResult,
    AssistantMessage,
    Cost,
    ErrorKind,
    ModelSpec,
    StopReason,
    ToolResultMessage,
    ToolSchema,
    Usage,
    add_cost,
    add_usage,
)

if TYPE_CHECKING:
    from types import TracebackType

    from anyio.abc import TaskGroup

    from ._abc import AgentTool, Instrumentation
    from ._channel import EventChannel
    from ._dispatch import Batch
    from ._events import AgentEvent

__all__ = ["Emit", "ToolIndex", "_Run"]

log = logging.getLogger("agentloop.loop")

Emit = Callable[["AgentEvent"], None]


class ToolIndex:
    """Tools as a run uses them: by name, and as the schemas its requests offer.

    A run never changes its index, so one can serve many: an agent keeps the index of its
    tools, current (see ``current``), and hands it to each of its runs, which take it when their
    tools are its ``tools`` and then make neither the map nor the schemas.
    """

    __slots__ = ("by_name", "schemas", "tools")

    def __init__(self, tools: Sequence[AgentTool]) -> None:
        self.tools = tools
        by_name = self.by_name = {t.name: t for t in tools}
        self.schemas = [
            ToolSchema(name=t.name, description=t.description, parameters=t.parameters)
            for t in by_name.values()
        ]

    def current(self) -> bool:
        """Whether each tool is still named and described as its schema says (a tool may
        change between runs); whoever hands the index to runs checks this first."""
        for schema, tool in zip(self.schemas, self.by_name.values(), strict=True):
            if (
                schema.parameters is not tool.parameters
                or schema.description != tool.description
                or schema.name != tool.name
            ):
                return False
        return True


class _Run(RunPolicies):
    """The state of one loop invocation. Not reusable."""

    __slots__ = (
        "acc",
        "answer_open",
        "batch",
        "channel",
        "_cost",
        "_spent",
        "_usage",
        "config",
        "emit",
        "emit_update",
        "ended",
        "error",
        "error_kind",
        "fatal",
        "fatal_note",
        "finished",
        "history",
        "in_turn",
        "incremental",
        "learned_window",
        "link",
        "loop_thread",
        "messages",
        "new_messages",
        "observed",
        "observer",
        "overflow_signal",
        "pending",
        "scope",
        "stop_reason",
        "stopped_by",
        "suspended",
        "system_prompt",
        "tasks",
        "token",
        "tool_schemas",
        "static_tools",
        "steering_queue",
        "tools",
        "toolset_tools",
        "turn",
        "turn_message",
        "update_failed",
        "validators",
        "view",
    )

    def __init__(
        self,
        context: AgentContext,
        config: AgentLoopConfig,
        emit: Emit,
        *,
        cancel_scope: anyio.CancelScope | None = None,
        channel: EventChannel | None = None,
        history: History | None = None,
        tools: ToolIndex | None = None,
        observed: bool = True,
    ) -> None:
        self.config = config
        self.emit = emit
        # ``MessageUpdate`` events, once per streamed token, may take a path of their own, set
        # by the run's owner (what it returns is ignored: it may be a user's callback, see
        # ``update_failed``).
        self.emit_update: Callable[[AgentEvent], object] = emit
        self.channel = channel
        # Whether anyone sees the events only observers need (all but ``MessageEnd``, whose
        # message an agent keeps, records or hands to its ``on_message``): when no one does,
        # the run makes none of those of every turn and token (the rare ones, a retry or a
        # compaction, are made anyway). An agent turns it on when a subscriber joins mid-run.
        self.observed = observed
        # Called (in an ``except`` block) when ``emit_update`` raised; ``None``: it is an error.
        self.update_failed: Callable[[], None] | None = None
        self.scope = cancel_scope if cancel_scope is not None else anyio.CancelScope()
        # The task group of the run's tool calls, opened at its first batch (see ``run_turn``):
        # each call is a child task of the run, inside the cancel scope of its task handle.
        self.tasks: TaskGroup | None = None
        # The turn waiting for the task group to open: its answer and the calls to execute.
        self.suspended: tuple[AssistantMessage, list[Any]] | None = None
        self.system_prompt = context.system_prompt
        self.static_tools: Sequence[AgentTool] = config.tools or context.tools
        self.toolset_tools: Sequence[AgentTool] = ()
        if tools is None or tools.tools is not self.static_tools:
            tools = ToolIndex(self.static_tools)
        self.tools = tools.by_name
        self.tool_schemas = tools.schemas
        # The validators of the tools with no ``validate_arguments``, made at their first call.
        self.validators: dict[str, Callable[[Any], Any]] | None = None
        # An agent's own steering queue says when it is empty: no check, no poll, then.
        poll = config.get_steering_messages
        self.steering_queue = poll if isinstance(poll, QueuePoll) else None
        self.incremental = (
            config.transform_context is None and config.async_transform_context is None
        )
        if history is None or not history.fits(config.convert_to_llm):
            history = History(list(context.messages), convert=config.convert_to_llm)
        self.history = history
        self.messages = history.messages
        self.view = MessagesView(self.messages)
        self.new_messages: list[AgentMessage] = []
        # The messages for the next turn; empty (the common case while a run waits) it is the
        # one empty tuple, not a list of its own.
        self.pending: Sequence[AgentMessage] = ()
        self.overflow_signal = False
        # The context window a provider stated in an overflow error, for a model whose spec
        # has none: the recovery and the transformers budget by it for the rest of the run.
        self.learned_window: int | None = None
        self.turn = 0
        # What the run spent: the answers not yet added up, then the sums (see ``usage``),
        # made when first added up or asked for.
        self._spent: list[AssistantMessage] = []
        self._usage: Usage | None = None
        self._cost: Cost | None = None
        self.stop_reason = StopReason.STOP
        self.error: str | None = None
        self.error_kind: ErrorKind | None = None
        self.stopped_by: str | None = None
        self.ended = False
        # Per-turn state, read by ``close_turn`` when a turn ends abnormally.
        self.in_turn = False
        self.answer_open = False
        self.acc: Accumulator | None = None
        self.turn_message: AssistantMessage | None = None
        self.batch: Batch | None = None
        self.finished: AgentResult[str] | None = None
        # Something that is not an ``Exception`` (KeyboardInterrupt, SystemExit) raised in the
        # run: it ends the run like an abort, then propagates from ``run`` as itself.
        self.fatal: BaseException | None = None
        self.fatal_note = ""
        self.loop_thread = 0
        self.token: object = None
        # The run's instrumentation, when one took the run on (see ``_instrumentation``).
        self.observer: Observer | None = None
        self.link = RunLink(self, approval=config.approval, agent=config.agent_name)
        last = self.messages[-1] if self.messages else None
        if type(last) is AssistantMessage and last.error_kind is ErrorKind.CONTEXT_OVERFLOW:
            # Continuing after an overflow error: the first request prunes harder.
            self.overflow_signal = True

    # ---------------------------------------------------------------- tools

    def refresh_tools(self) -> None:
        """Take the toolsets' current tools (called at the start of every turn).

        The tool list is rebuilt only when a toolset's tools changed (compared by identity);
        a static tool and a toolset's tool of the same name: the toolset's wins.

        Raises:
            HookFailed: a toolset's ``get_tools`` raised.
        """
        current: list[AgentTool] = []
        for toolset in self.config.toolsets:
            try:
                current.extend(toolset.get_tools())
            except Exception as exc:
                name = getattr(toolset, "name", None) or type(toolset).__name__
                raise HookFailed.wrap(f"toolset {name!r}", exc) from exc
        previous = self.toolset_tools
        if len(current) == len(previous) and all(
            a is b for a, b in zip(current, previous, strict=True)
        ):
            return
        self.toolset_tools = current
        index = ToolIndex([*self.static_tools, *current])
        self.tools, self.tool_schemas = index.by_name, index.schemas

    # ---------------------------------------------------------------- committing

    def _append(self, message: AgentMessage) -> None:
        self.history.append(message)
        self.new_messages.append(message)
        if type(message) is AssistantMessage:
            self._spent.append(message)

    # ---------------------------------------------------------------- spending

    @property
    def usage(self) -> Usage:
        """The tokens the run has spent so far: its answers' and its sub-agents'.

        Added up when asked for (policies, the result), not as each answer is committed.
        """
        if self._spent:
            self._add_up()
        usage = self._usage
        if usage is None:
            usage = self._usage = Usage()
        return usage

    @property
    def cost(self) -> Cost:
        """What the run has spent so far, as ``usage``."""
        if self._spent:
            self._add_up()
        cost = self._cost
        if cost is None:
            cost = self._cost = Cost()
        return cost

    def _add_up(self) -> None:
        spent, usage, cost = self._spent, self._usage, self._cost
        self._usage = add_usage(_NOTHING_USED if usage is None else usage, [m.usage for m in spent])
        self._cost = add_cost(_NOTHING_SPENT if cost is None else cost, [m.cost for m in spent])
        spent.clear()

    def account(self, usage: Usage, cost: Cost) -> None:
        """Count what a sub-agent spent as this run's (its result sums the whole tree)."""
        self._usage = self.usage + usage
        self._cost = self.cost + cost

    def commit(self, message: AgentMessage) -> None:
        """Add a complete message to the context, with its start/end events."""
        if self.observed:
            self.emit(MessageStart(message=message))
        self._append(message)
        self.emit(MessageEnd(message=message))

    def commit_streamed(self, message: AssistantMessage) -> None:
        """Commit the assistant's answer (its ``MessageStart`` was emitted when it began)."""
        self.answer_open = False
        self._append(message)
        self.emit(MessageEnd(message=message))

    # ---------------------------------------------------------------- context for a request

    @property
    def budget_model(self) -> ModelSpec:
        """The model as budgets see it: its spec, with the learned window where it has none."""
        model = self.config.model
        learned = self.learned_window
        if learned is None or (
            model.context_window is not None and model.context_window <= learned
        ):
            return model
        return msgspec.structs.replace(model, context_window=learned)

    def transform_context(self, overflow: bool, system_prompt: str) -> TransformContext:
        return TransformContext(
            overflow=overflow,
            model=self.budget_model,
            turn=self.turn,
            emit=self.emit,
            system_prompt=system_prompt,
        )

    # ---------------------------------------------------------------- threads and interrupts

    def steering_arrived(self) -> None:
        """A steering message was queued: the running batch, if any, may cut in at once.

        On the loop's thread (``steering_arrived_threadsafe`` from any thread).
        """
        batch = self.batch
        if batch is not None and self.config.steering_interrupt == "now":
            batch.steering_arrived()

    def steering_arrived_threadsafe(self) -> None:
        """``steering_arrived`` from any thread; nothing once the run's event loop is gone."""
        if threading.get_ident() == self.loop_thread:
            self.steering_arrived()
            return
        token = self.token
        if token is None:
            return
        import anyio.from_thread  # slow to import; only threads need it

        try:
            anyio.from_thread.run_sync(self.steering_arrived, token=token)  # type: ignore[arg-type]
        except RuntimeError:
            pass  # the run and its event loop ended meanwhile

    def interrupt(self, exc: BaseException, where: str) -> None:
        """End the run because ``where`` raised ``exc``, which is not an ``Exception``.

        The run is cancelled like an abort, completes its events, and ``run`` raises ``exc``.
        """
        if self.fatal is None:
            self.fatal = exc
            self.fatal_note = f"{where} raised {type(exc).__name__}: {exc}"
        self.scope.cancel()

    def emit_threadsafe(self, event: AgentEvent) -> None:
        """``emit`` from any thread: from another one, it runs on the loop's thread."""
        if threading.get_ident() == self.loop_thread:
            self.emit(event)
        else:
            self.call_from_thread(self.emit, event)

    def call_from_thread(self, fn: Callable[[Any], None], arg: Any) -> None:
        """Call ``fn(arg)`` on the run's event loop thread from another thread, and wait.

        Dropped (logged at DEBUG) when the event loop is gone.
        """
        import anyio.from_thread  # slow to import; only threads need it

        try:
            anyio.from_thread.run_sync(fn, arg, token=self.token)  # type: ignore[arg-type]
        except Exception:
            log.debug("a call from a worker thread was dropped: its run has ended", exc_info=True)

    # ---------------------------------------------------------------- the turn's state

    def begin_turn(self) -> None:
        """A turn starts: its per-turn state is reset and ``TurnStart`` emitted."""
        self.in_turn = True
        self.turn_message = None
        self.batch = None
        self.acc = None
        if self.observed:
            self.emit(TurnStart(turn=self.turn))

    def end_turn(
        self,
        reason: TurnEndReason,
        message: AssistantMessage | None,
        tool_results: list[ToolResultMessage] | None = None,
    ) -> None:
        """The turn ended normally: ``TurnEnd`` (``close_turn`` ends one abnormally)."""
        self.in_turn = False
        if self.observed:
            self.emit(
                TurnEnd(
                    reason=reason, message=message, tool_results=tool_results or [], turn=self.turn
                )
            )

    def answered(self, message: AssistantMessage) -> None:
        """Commit the turn's answer."""
        self.acc = None
        self.commit_streamed(message)
        self.turn_message = message

    def signal_overflow(self, overflow: bool = True) -> None:
        """Tell the transformers of the next request that the last one overflowed."""
        self.overflow_signal = overflow

    def stop(self, by: str) -> None:
        """End the run after this turn: a policy (``by`` names it) stopped it."""
        self.stopped_by = by
        self.ended = True

    def end_with(self, message: AssistantMessage) -> None:
        """End the run after this turn, as the answer ``message`` (an error or abort) says."""
        self.ended = True
        self.stop_reason = message.stop_reason
        if message.stop_reason is StopReason.ERROR:
            self.error = message.error_message
            self.error_kind = message.error_kind

    def queue(self, messages: Sequence[AgentMessage]) -> None:
        """Messages for the next turn (the prompts, messages taken from the queues, or injected
        by a policy)."""
        if messages:
            self.pending = [*self.pending, *messages]

    def take_pending(self) -> Sequence[AgentMessage]:
        pending, self.pending = self.pending, ()
        return pending

    # ---------------------------------------------------------------- ending

    def close_turn(self, reason: TurnEndReason, note: str) -> None:
        """End the current turn abnormally, synchronously: nothing here may await.

        Commits what the turn produced (a partial answer, results for every call), so the
        history stays well paired, then emits ``TurnEnd``.
        """
        if not self.in_turn:
            return
        self.in_turn = False
        message = self.turn_message
        acc, self.acc = self.acc, None
        if message is None and self.answer_open:
            if acc is None or acc.done:
                # Between attempts (waiting to retry): what the failed attempt said is void.
                acc = Accumulator(self.config.model)
            if reason is TurnEndReason.ABORTED:
                acc.abort()
            else:
                acc.fail(note, ErrorKind.OTHER)
            message = acc.finish()
            self.commit_streamed(message)
            self.turn_message = message
        results: list[ToolResultMessage] = []
        batch, self.batch = self.batch, None
        if batch is not None and batch.steering:
            # Steering taken from the queue by this batch is committed, never dropped.
            self.queue(batch.steering)
            batch.steering = None
        if batch is not None:
            batch.resolve_unfinished(note if reason is not TurnEndReason.ABORTED else _ABORTED)
            results = batch.results()
            for result in results:
                self.commit(result)
        elif message is not None and message.stop_reason is not StopReason.ABORTED:
            # The answer was committed but its calls never reached dispatch.
            for call in message.tool_calls:
                if call.id in self.history.open_calls:
                    result = error_result(call, note)
                    results.append(result)
                    self.commit(result)
        if self.observed:
            self.emit(TurnEnd(reason=reason, message=message, tool_results=results, turn=self.turn))
        self.turn += 1

    def flush_pending(self, reason: TurnEndReason) -> None:
        """Commit messages taken from the queues that no turn will send, in a turn of their own.

        A steering or follow-up message, once polled, is never lost: when the run ends before
        the next turn (abort, a stopping policy), it is committed to the history here.
        """
        if not self.pending:
            return
        pending = self.take_pending()
        if self.observed:
            self.emit(TurnStart(turn=self.turn))
        for message in pending:
            self.commit(message)
        if self.observed:
            self.emit(TurnEnd(reason=reason, message=None, turn=self.turn))
        self.turn += 1

    def result(self) -> AgentResult[str]:
        if self.finished is None:
            final = ""
            for message in reversed(self.new_messages):
                if type(message) is AssistantMessage:
                    final = message.text
                    break
            self.finished = AgentResult(
                messages=self.new_messages,
                stop_reason=self.stop_reason,
                usage=self.usage,
                cost=self.cost,
                error=self.error,
                error_kind=self.error_kind,
                stopped_by=self.stopped_by,
                output=final,
            )
        return self.finished

    # ---------------------------------------------------------------- the run

    def run(self, prompts: Sequence[AgentMessage]) -> Coroutine[Any, Any, AgentResult[str]]:
        """The run to the end, to await; on cancellation it emits the closing events, then
        re-raises. (A plain method: the run's task has one coroutine frame less to keep.)"""
        instrumentation = self.config.instrumentation or inherited.get()
        if instrumentation is None:
            return self._run(prompts)
        return self._observed(prompts, instrumentation)

    async def _observed(
        self, prompts: Sequence[AgentMessage], instrumentation: Instrumentation
    ) -> AgentResult[str]:
        config = self.config
        info = RunInfo(
            agent=config.agent_name, model=config.model, conversation_id=config.conversation_id
        )
        # Runs nested in this one (sub-agents started by its tools) inherit its instrumentation.
        token = inherited.set(instrumentation)
        hook = enter(instrumentation.run, info, "run")
        if hook is not None:
            self.observer = Observer(instrumentation, info)
        failure: BaseException | None = None
        try:
            return await self._run(prompts)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            info.result = self.result()
            inherited.reset(token)
            if hook is not None:
                hook.exit(failure)

    async def _run(self, prompts: Sequence[AgentMessage]) -> AgentResult[str]:
        try:
            self.loop_thread = threading.get_ident()
            if self.token is None:  # (an agent hands over the one it took)
                self.token = anyio.lowlevel.current_token()
            if self.observed:
                self.emit(AgentStart())
            try:
                with self.scope:
                    # Prompts are committed by the first turn, like any pending message.
                    self.queue(prompts)
                    if await self._turns():
                        # The rest of the run inside the task group of its tool calls.
                        async with _CallTasks(self):
                            await self._turns(await resume_turn(self))
            except anyio.get_cancelled_exc_class():
                self.close_turn(TurnEndReason.ABORTED, _ABORTED)
                self.flush_pending(TurnEndReason.ABORTED)
                self.stop_reason = StopReason.ABORTED
                if self.observed:
                    self.emit(AgentEnd(messages=self.new_messages))
                raise
            except HookFailed as exc:
                # Application code the loop calls failed: end the run as an error naming it.
                log.error("agent run ended: %s", exc, exc_info=exc.__cause__ or exc)
                self._end_with_error(str(exc), ErrorKind.HOOK)
            except Exception as exc:
                # A bug of the loop: end the run as an error, with its events complete.
                log.exception("agent loop failed")
                self._end_with_error(
                    f"agent loop failed: {type(exc).__name__}: {exc}", ErrorKind.OTHER
                )
            except BaseException as exc:
                # KeyboardInterrupt, SystemExit and the like, raised in the run's own task.
                if self.fatal is None:
                    self.fatal = exc
                    self.fatal_note = f"agent run interrupted by {type(exc).__name__}: {exc}"
            if self.fatal is not None:
                self._end_with_error(self.fatal_note, ErrorKind.OTHER)
            elif self.scope.cancelled_caught:
                self.close_turn(TurnEndReason.ABORTED, _ABORTED)
                self.stop_reason = StopReason.ABORTED
            self.flush_pending(
                TurnEndReason.ABORTED
                if self.stop_reason is StopReason.ABORTED
                else TurnEndReason.ERROR
                if self.stop_reason is StopReason.ERROR
                else TurnEndReason.COMPLETE
            )
            if self.observed:
                self.emit(AgentEnd(messages=self.new_messages))
            if self.fatal is not None:
                raise self.fatal
            return self.result()
        finally:
            self.link._close()

    def _end_with_error(self, note: str, kind: ErrorKind) -> None:
        self.close_turn(TurnEndReason.ERROR, note)
        self.stop_reason = StopReason.ERROR
        self.error = note
        self.error_kind = kind

    async def _turns(self, resumed: bool | None = None) -> bool:
        """Turns until the run ends: steering after each, then, when the run would end,
        follow-ups and the post-loop policies (one loop, so one coroutine frame per run).

        Returns ``True`` when a turn waits for the run's task group (``run_turn`` returned
        ``None``); ``resumed`` is what that turn returned once resumed, and the loop goes on
        from its end.
        """
        config = self.config
        poll = config.get_steering_messages
        more = resumed
        while True:
            if more is None:
                self.begin_turn()
                more = await run_turn(self)
                if more is None:
                    return True
            self.turn += 1
            if self.ended:
                return False
            if (
                poll is not None
                and not self.pending
                and (self.steering_queue is None or self.steering_queue.has_messages())
            ):
                # Only when the turn brought no messages of its own: a batch interrupted by
                # steering already took what the queue's mode allows for this turn.
                await anyio.lowlevel.checkpoint_if_cancelled()
                try:
                    steering = list(await poll())
                except Exception as exc:
                    raise HookFailed.wrap("get_steering_messages", exc) from exc
                self.queue(steering)
            elif self.scope.cancel_called:
                # Aborted as the turn ended (by a callback, with no await since): no new turn.
                await anyio.lowlevel.checkpoint_if_cancelled()
            if more or self.pending:
                more = None
                continue
            # The run would end here.
            follow_up = config.get_follow_up_messages
            if follow_up is not None and (
                not isinstance(follow_up, QueuePoll) or follow_up.has_messages()
            ):
                # An abort that arrived as the last turn ended must not consume a follow-up.
                await anyio.lowlevel.checkpoint_if_cancelled()
                try:
                    follow = list(await follow_up())
                except Exception as exc:
                    raise HookFailed.wrap("get_follow_up_messages", exc) from exc
                if follow:
                    self.queue(follow)
                    more = None
                    continue
            if config.post_loop_policies:
                stop, injected = self.run_turn_policies(
                    config.post_loop_policies, self.policy_context(), "post-loop"
                )
                if stop is not None:
                    self.stopped_by = stop
                    return False
                if injected:
                    self.queue(injected)
                    more = None
                    continue
            return False


_ABORTED = "tool call aborted: the run was cancelled"
# The start of a run's sums (``add_usage``/``add_cost`` make new ones: these stay empty).
_NOTHING_USED = Usage()
_NOTHING_SPENT = Cost()


class _CallTasks:
    """The task group of a run's tool calls, around the rest of the run from its first batch
    on (``run.tasks`` while it is open).

    An ``async with`` of its own rather than a coroutine around the turns, so that a parked run
    keeps no frame for it. What the turns raise (other than a cancellation, which the group
    itself handles) is kept while the group closes and raised after it as itself, never in a
    group; the calls still running, if any, are cancelled first.
    """

    __slots__ = ("group", "run")

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.group = anyio.create_task_group()

    async def __aenter__(self) -> None:
        self.run.tasks = await self.group.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        group = self.group
        try:
            if exc is None or isinstance(exc, anyio.get_cancelled_exc_class()):
                return bool(await group.__aexit__(exc_type, exc, tb))
            group.cancel_scope.cancel()
            await group.__aexit__(None, None, None)
            return False  # what the turns raised goes on
        except BaseExceptionGroup as failures:
            # A call's task raised: ``Batch`` keeps every failure of its own, so this is a
            # bug's last line of defence.
            raise single_exception(failures) from None
        finally:
            self.run.tasks = None
