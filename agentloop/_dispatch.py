"""Running one batch of tool calls.

The order for every batch: pre-dispatch policies over the whole batch (a rewrite goes through
them again; a ``Stop`` ends the turn with error results for every unresolved call) → approval
(an ``ApprovedWith`` rewrite goes through the policies again) → argument validation →
``execute``. Calls run in groups (all at once by default), each call a child task of the run's
task group inside the cancel scope of its own task handle, so one call can be cancelled without
touching the others; a group is over once each of its calls' tasks has ended.

Steering cancels the calls still running and the ones not yet started, and its message starts
the next turn. When it cuts in depends on ``steering_interrupt``: ``"now"`` (the default), at
once: the run is told when a message arrives (``Agent.steer``) and a batch that starts with
steering waiting runs none of its calls; ``"after_call"``, when a running call ends (steering
is polled after each call completes, so a lone slow call runs to its end).

Every call of the batch ends with exactly one result, committed in call order, and emits
exactly one ``ToolExecutionStart``/``ToolExecutionEnd`` pair, whatever happens.

Application code that fails inside the batch never escapes from a child task: a tool that
raises becomes an error result; a steering hook that raises, or anything that is not an
``Exception`` (``KeyboardInterrupt``, ``SystemExit``), is kept, the batch (or the run) is
cancelled, and the failure is raised again in the parent task, as itself, never in a group.
A pre-dispatch policy that raises rejects the call (fail closed) unless it sets
``fail_open = True``.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import msgspec

from ._errors import HookFailed
from ._events import AgentToolResult, ToolExecutionEnd, ToolExecutionStart, ToolExecutionUpdate
from ._policy import (
    ApprovedWith,
    DispatchContext,
    Rejected,
    Rewrite,
    Skip,
    Stop,
)
from ._tools import ToolArgumentError, ToolContext, _current_context, validator_for
from ._types import AgentMessage, Text, ToolCall, ToolResultMessage, extract_text

if TYPE_CHECKING:
    from collections.abc import Sequence, Set as AbstractSet

    from ._abc import AgentTool
    from ._instrumentation import Hook, ToolCallInfo
    from ._loop import _Run

__all__ = ["STEERING_CANCELLED", "Batch", "steering_note"]

log = logging.getLogger("agentloop.loop")
# A tool that raises is the model's business (it reads the error result) and the developer's
# (the traceback): the latter gets it here, at WARNING.
tool_log = logging.getLogger("agentloop.tools")

STEERING_CANCELLED = "tool call cancelled: user requested steering interrupt"
ABORTED = "tool call aborted: the run was cancelled"
_MAX_REWRITES = 8
_MAX_SHOWN = 500  # characters of broken arguments quoted back to the model
_MAX_STEERING_SHOWN = 200  # characters of the steering message quoted in a cancelled result


class _Slot:
    """One call of the batch and what became of it."""

    __slots__ = (
        "arguments",
        "call",
        "cancelled",
        "context",
        "ended",
        "finished",
        "result",
        "started",
        "task",
        "tool",
        "validated",
    )

    def __init__(self, call: ToolCall, tool: AgentTool | None) -> None:
        self.call = call
        self.tool = tool
        self.arguments: Any = call.arguments
        self.validated: Any = None
        self.result: AgentToolResult | None = None
        self.task: anyio.TaskHandle[None] | None = None  # its task, once started
        self.cancelled = False  # by steering
        self.context: ToolContext[Any] | None = None
        self.started = False
        self.ended = False
        self.finished = False  # its task has ended


def _broken_json(call: ToolCall) -> str:
    """The error result for a call whose arguments are not valid JSON (the model reads it)."""
    raw = call.partial_json or ""
    try:
        msgspec.json.decode(raw)
    except (msgspec.DecodeError, ValueError, RecursionError) as exc:
        problem = str(exc)
    else:
        problem = "they were kept apart from the call"  # a provider that set partial_json itself
    shown = raw if len(raw) <= _MAX_SHOWN else raw[:_MAX_SHOWN] + "…"
    return (
        f"tool call {call.name!r} was not run: its arguments are not valid JSON: {problem}. "
        f"The arguments received: {shown}. Call the tool again with a JSON object."
    )


class _Updates:
    """A call's ``on_update``: emits its partial results, from any thread, until it ends."""

    __slots__ = ("_run", "_slot")

    def __init__(self, run: _Run, slot: _Slot) -> None:
        self._run = run
        self._slot = slot

    def __call__(self, update: AgentToolResult | str) -> None:
        slot = self._slot
        if slot.ended:
            return  # a thread outliving its call: the update is void
        run = self._run
        if threading.get_ident() != run.loop_thread:
            run.call_from_thread(self, update)
            return
        if isinstance(update, str):
            update = AgentToolResult.text(update)
        if run.observed:
            call = slot.call
            run.emit(ToolExecutionUpdate(call_id=call.id, name=call.name, update=update))


def steering_note(messages: Sequence[AgentMessage]) -> str:
    """The result of a call cancelled by steering: what cancelled it, and by what message."""
    text = " ".join(extract_text(getattr(m, "content", None) or []) for m in messages).strip()
    text = " ".join(text.split())
    if not text:
        return STEERING_CANCELLED
    if len(text) > _MAX_STEERING_SHOWN:
        text = text[:_MAX_STEERING_SHOWN] + "…"
    return f"{STEERING_CANCELLED}: {text!r}"


class Batch:
    """The tool calls of one assistant message, from policies to committed results."""

    __slots__ = (
        "calls",
        "done",
        "failure",
        "interrupted",
        "note",
        "polling",
        "run",
        "slots",
        "steering",
        "stopped",
    )

    def __init__(self, run: _Run, calls: list[ToolCall]) -> None:
        self.run = run
        self.calls = calls  # the answer's ``tool_calls``: a list of the batch's own
        self.slots = [_Slot(call, run.tools.get(call.name)) for call in self.calls]
        self.steering: list[AgentMessage] | None = None
        self.interrupted = False
        self.note = STEERING_CANCELLED  # the result of a call steering cancelled
        self.polling = False  # a task polls the steering source (``steering_arrived``)
        self.done = False  # ``execute`` is over
        self.stopped: str | None = None
        self.failure: Exception | None = None

    # ---------------------------------------------------------------- events

    def _start(self, slot: _Slot) -> None:
        if not slot.started:
            slot.started = True
            if self.run.observed:
                call = slot.call
                self.run.emit(
                    ToolExecutionStart(call_id=call.id, name=call.name, arguments=slot.arguments)
                )

    def _end(self, slot: _Slot, result: AgentToolResult) -> None:
        """Record ``result`` for ``slot`` and emit its start (if not yet) and end."""
        if slot.ended:
            return
        slot.result = result
        self._start(slot)
        slot.ended = True
        if slot.context is not None:
            slot.context._cancel()  # a thread still running is told its result is void
            slot.context = None  # (the context's ``on_update`` refers to the slot)
        if self.run.observed:
            call = slot.call
            self.run.emit(
                ToolExecutionEnd(
                    call_id=call.id, name=call.name, result=result, is_error=result.is_error
                )
            )

    def resolve_unfinished(self, message: str) -> None:
        """Give every call without a result an error result (abort, stop, failure)."""
        for slot in self.slots:
            if not slot.ended:
                self._end(slot, slot.result or AgentToolResult.error(message))

    def results(self) -> list[ToolResultMessage]:
        """One result message per call, in call order."""
        out: list[ToolResultMessage] = []
        for slot in self.slots:
            result = slot.result or AgentToolResult.error(ABORTED)
            out.append(
                ToolResultMessage(
                    tool_call_id=slot.call.id,
                    tool_name=slot.call.name,
                    content=list(result.content) or [Text(text="")],
                    is_error=result.is_error,
                    details=result.details,
                )
            )
        return out

    # ---------------------------------------------------------------- preparation

    def _check(self, slot: _Slot) -> bool:
        """Run the pre-dispatch policies on one call; ``False`` if it was resolved."""
        run = self.run
        policies = run.config.pre_dispatch_policies
        if not policies:
            return True
        for _ in range(_MAX_REWRITES):
            call = slot.call
            if slot.arguments is not call.arguments:
                call = ToolCall(id=call.id, name=call.name, arguments=slot.arguments)
            ctx = DispatchContext(
                call=call,
                tool=slot.tool,
                batch=self.calls,
                turn=run.turn,
                messages=run.view,
                model=run.config.model,
            )
            rewritten = False
            for policy in policies:
                try:
                    verdict = policy.evaluate(ctx)
                except Exception as exc:
                    name = run.policy_name(policy)
                    if getattr(policy, "fail_open", False):
                        log.exception("pre-dispatch policy %r raised; it fails open", name)
                        continue
                    log.exception("pre-dispatch policy %r raised; the call is rejected", name)
                    run.note_verdict("pre_dispatch", name, "reject", call_id=call.id)
                    self._end(
                        slot,
                        AgentToolResult.error(
                            f"tool call rejected: policy {name!r} failed: "
                            f"{type(exc).__name__}: {exc}"
                        ),
                    )
                    return False
                if verdict is None:
                    continue
                kind = type(verdict)
                if kind is Skip:
                    assert isinstance(verdict, Skip)
                    run.note_verdict("pre_dispatch", policy, "skip", verdict.reason, call.id)
                    self._end(slot, AgentToolResult.error(f"tool call skipped: {verdict.reason}"))
                    return False
                if kind is Stop:
                    assert isinstance(verdict, Stop)
                    run.note_verdict("pre_dispatch", policy, "stop", verdict.reason, call.id)
                    self.stopped = f"{run.policy_name(policy)}: {verdict.reason}"
                    return False
                if kind is Rewrite:
                    assert isinstance(verdict, Rewrite)
                    run.note_verdict("pre_dispatch", policy, "rewrite", call_id=call.id)
                    slot.arguments = verdict.arguments
                    rewritten = True
                    break
            if not rewritten:
                return True
        self._end(slot, AgentToolResult.error("tool call skipped: pre-dispatch rewrite loop"))
        return False

    async def _approve(self, slot: _Slot) -> bool:
        """Ask for approval; ``False`` if the call was rejected (or resolved by a re-check)."""
        approval = self.run.config.approval
        if approval is None:
            return True
        call = slot.call
        if slot.arguments is not call.arguments:
            call = ToolCall(id=call.id, name=call.name, arguments=slot.arguments)
        try:
            decision = await approval(call, slot.tool)
        except Exception as exc:
            log.exception("approval callback raised for tool call %s", call.id)
            decision = Rejected(reason=f"approval failed: {type(exc).__name__}: {exc}")
        if type(decision) is Rejected:
            assert isinstance(decision, Rejected)
            self.run.note_verdict("approval", "approval", "reject", decision.reason, call.id)
            self._end(slot, AgentToolResult.error(f"tool call rejected: {decision.reason}"))
            return False
        if type(decision) is ApprovedWith:
            assert isinstance(decision, ApprovedWith)
            self.run.note_verdict("approval", "approval", "rewrite", call_id=call.id)
            slot.arguments = decision.arguments
            return self._check(slot)
        return True

    def _validate(self, slot: _Slot) -> bool:
        tool = slot.tool
        assert tool is not None
        arguments = slot.arguments
        if not isinstance(arguments, dict):
            self._end(
                slot,
                AgentToolResult.error(
                    f"invalid arguments for tool {tool.name!r}: arguments must be a JSON "
                    f"object, not {type(arguments).__name__}"
                ),
            )
            return False
        validate = getattr(tool, "validate_arguments", None)
        if validate is None:
            # Compiled once per schema, looked up once per run (the key encodes the schema).
            validators = self.run.validators
            if validators is None:
                validators = self.run.validators = {}
            validate = validators.get(tool.name)
            if validate is None:
                validate = validators[tool.name] = validator_for(tool.parameters)
        try:
            slot.validated = validate(arguments)
        except ToolArgumentError as exc:
            self._end(
                slot, AgentToolResult.error(f"invalid arguments for tool {tool.name!r}: {exc}")
            )
            return False
        except Exception as exc:
            self._end(
                slot,
                AgentToolResult.error(
                    f"invalid arguments for tool {tool.name!r}: {type(exc).__name__}: {exc}"
                ),
            )
            return False
        return True

    async def prepare(self, incomplete: AbstractSet[str]) -> list[_Slot]:
        """Resolve what can be resolved before execution; returns the calls to execute."""
        run = self.run
        for slot in self.slots:
            if slot.call.id in incomplete:
                self._end(
                    slot,
                    AgentToolResult.error(
                        f"tool call {slot.call.name!r} was cut off by the output token limit "
                        "before its arguments were complete; it was not run"
                    ),
                )
            elif slot.call.partial_json is not None:
                self._end(slot, AgentToolResult.error(_broken_json(slot.call)))
            elif slot.tool is None:
                names = ", ".join(sorted(run.tools)) or "none"
                self._end(
                    slot,
                    AgentToolResult.error(
                        f"unknown tool {slot.call.name!r}; available tools: {names}"
                    ),
                )
        # Pass one: the policies see the whole batch before anything is approved.
        if run.config.pre_dispatch_policies:
            for slot in self.slots:
                if not slot.ended and not self._check(slot):
                    if self.stopped is not None:
                        self.resolve_unfinished(f"tool call not run: stopped by {self.stopped}")
                        return []
        # Pass two: approval, then validation.
        ready: list[_Slot] = []
        asks = run.config.approval is not None
        for slot in self.slots:
            if slot.ended:
                continue
            if asks:
                await anyio.lowlevel.checkpoint_if_cancelled()
                if not await self._approve(slot):
                    if self.stopped is not None:
                        self.resolve_unfinished(f"tool call not run: stopped by {self.stopped}")
                        return []
                    continue
            if self._validate(slot):
                ready.append(slot)
        return ready

    # ---------------------------------------------------------------- execution

    async def execute(self, ready: list[_Slot]) -> None:
        """Run the prepared calls in the configured groups, each group to its end.

        Each call is a child task of the run's task group, in the cancel scope of its own task
        handle; a group ends when every one of its calls' tasks has finished (a call cancelled
        by steering, or whose sibling's steering hook failed, included). One coroutine: a run
        parked in its calls keeps one frame here.
        """
        if not ready:
            return
        run = self.run
        config = run.config
        try:
            if config.steering_interrupt == "now" and config.get_steering_messages is not None:
                queue = run.steering_queue
                if queue is None or queue.has_messages():
                    await self._steering_before_start()
            strategy = config.tool_execution
            if strategy == "concurrent":
                groups: Sequence[Sequence[_Slot]] = [ready]
            elif strategy == "sequential":
                groups = [[slot] for slot in ready]
            else:
                groups = self._partition(ready, strategy)
            limit = config.max_concurrent_tools
            limiter = anyio.CapacityLimiter(limit) if limit else None
            tasks = run.tasks
            assert tasks is not None, "a batch runs inside its run's task group"
            scope = run.scope
            # Indices rather than iterators over ``groups`` and the group waited for: a run
            # parked here then holds no iterator objects for the cyclic collector to walk
            # (a ``range`` iterator is not tracked).
            for number in range(len(groups)):
                group = groups[number]
                if self.interrupted:
                    break
                if scope.cancel_called:
                    # Aborted (by a callback, with no await since): no call of this group
                    # starts. A cancellation while a group runs is raised by the wait for its
                    # calls; one after the last group is seen as the turn ends.
                    await anyio.lowlevel.checkpoint_if_cancelled()
                for slot in group:
                    # ``create_task`` with a name: ``start_soon`` would derive one per call.
                    slot.task = tasks.create_task(
                        self._run_call(slot, limiter), name=slot.call.name
                    )
                for index in range(len(group)):
                    slot = group[index]
                    if not slot.finished:
                        assert slot.task is not None
                        await slot.task.wait()
                if self.failure is not None:
                    raise self.failure
                for slot in group:
                    if not slot.ended and not slot.cancelled:
                        # Its task was cancelled from outside the batch (an abort, the caller)
                        # and ended before this task was told: the cancellation is raised here,
                        # before any result is committed (else the call would have a result
                        # and no end).
                        await anyio.lowlevel.checkpoint_if_cancelled()
                        self._end(slot, AgentToolResult.error(ABORTED))
        finally:
            self.done = True
        if self.interrupted:
            self.resolve_unfinished(self.note)
            observer = run.observer
            if observer is not None:
                cancelled = sum(1 for slot in self.slots if slot.cancelled)
                observer.note("steering", cancelled=cancelled)

    async def _steering_before_start(self) -> None:
        """Steering that arrived while the model answered: none of the calls starts."""
        try:
            await self._poll_steering()
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            raise HookFailed.wrap("get_steering_messages", exc) from exc

    def _partition(self, ready: list[_Slot], partition: Any) -> list[list[_Slot]]:
        calls = [s.call for s in ready]
        try:
            groups = [[ready[i] for i in group] for group in partition(calls)]
        except Exception:
            log.exception("tool execution partition failed; running the batch sequentially")
            return [[slot] for slot in ready]
        seen = [id(s) for g in groups for s in g]
        if sorted(seen) != sorted(id(s) for s in ready):
            log.error(
                "tool execution partition does not cover each call once; running sequentially"
            )
            return [[slot] for slot in ready]
        return groups

    async def _run_call(self, slot: _Slot, limiter: anyio.CapacityLimiter | None) -> None:
        # The call's own task, inside the cancel scope of its task handle (``slot.task``):
        # cancelling the handle cancels this call alone. A call cancelled that way ends here
        # if its tool still returned, else when its group ends (``resolve_unfinished``).
        try:
            if limiter is not None:
                async with limiter:
                    await self._execute(slot)
            else:
                await self._execute(slot)
            if not slot.ended:
                if slot.result is None:
                    # Cancelled by steering before it finished (or before it started).
                    self._end(slot, AgentToolResult.error(self.note))
                else:
                    # It returned before the cancellation reached it: a finished result is
                    # kept (steering from inside the tool itself, say).
                    slot.cancelled = False
                    self._end(slot, slot.result)
            queue = self.run.steering_queue
            if queue is not None and not queue.has_messages():
                return  # the agent's queue is empty: nothing to poll
            try:
                await self._poll_steering()
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:
                self._fail(HookFailed.wrap("get_steering_messages", exc), exc)
            except BaseException as exc:
                self.run.interrupt(exc, "get_steering_messages")
        finally:
            # Set as the task ends (its handle's event is set in the same step): the batch
            # need not wait for it.
            slot.finished = True

    def _fail(self, failure: HookFailed, cause: Exception) -> None:
        """Keep the first failure of a child and cancel the other calls; ``execute`` raises it
        once they have ended."""
        if self.failure is None:
            failure.__cause__ = cause
            self.failure = failure
        for slot in self.slots:
            if slot.task is not None and not slot.finished:
                slot.task.cancel()

    async def _execute(self, slot: _Slot) -> None:
        tool = slot.tool
        assert tool is not None
        run = self.run
        call = slot.call
        self._start(slot)
        call_id, name = call.id, call.name
        on_update = _Updates(run, slot)
        ctx = slot.context = ToolContext(call_id, name, on_update, run.config.deps, run.link)
        _current_context.set(ctx)
        timeout = getattr(tool, "timeout", None) or run.config.tool_timeout
        info: ToolCallInfo | None = None
        hook: Hook | None = None
        if run.observer is not None:
            # Entered here, in the call's own task: what it sets is the tool's context too.
            info, hook = run.observer.tool_call(run.turn, call, slot.arguments, tool)
        failure: BaseException | None = None
        try:
            if timeout is None:
                result = await tool.execute(call_id, slot.validated, on_update)
            else:
                with anyio.move_on_after(timeout) as deadline:
                    result = await tool.execute(call_id, slot.validated, on_update)
                if deadline.cancelled_caught:
                    ctx._cancel()
                    slot.result = AgentToolResult.error(
                        f"tool call timed out after {timeout:g} seconds"
                    )
                    if info is not None:
                        info.timed_out = True
                    return
            if not isinstance(result, AgentToolResult):
                slot.result = AgentToolResult.error(
                    f"tool {name!r} returned {type(result).__name__}, not AgentToolResult"
                )
                return
            slot.result = result
        except Exception as exc:
            tool_log.warning(
                "tool %r (call %s) raised %s: %s; the model gets an error result",
                name,
                call_id,
                type(exc).__name__,
                exc,
                exc_info=exc,
            )
            slot.result = AgentToolResult.error(
                f"tool {name!r} failed: {type(exc).__name__}: {exc}"
            )
            if info is not None:
                info.exception = exc
        except BaseException as exc:
            ctx._cancel()
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                failure = exc
                raise
            # Not an ``Exception``: the run ends (every call still gets its end event), then
            # the exception propagates from the run as itself.
            slot.result = AgentToolResult.error(f"tool {name!r} raised {type(exc).__name__}: {exc}")
            if info is not None:
                info.exception = exc
            run.interrupt(exc, f"tool {name!r}")
        finally:
            if hook is not None:
                assert info is not None
                info.result = slot.result
                info.interrupted = failure is not None and slot.cancelled
                hook.exit(failure)

    async def _poll_steering(self) -> None:
        poll = self.run.config.get_steering_messages
        if poll is None or self.interrupted:
            return
        await anyio.lowlevel.checkpoint_if_cancelled()
        self._take(list(await poll()))

    def _take(self, messages: list[AgentMessage]) -> None:
        """Keep steering ``messages`` for the next turn and cancel the calls not yet ended."""
        if not messages:
            return
        if self.steering is None:
            self.steering = messages
        else:
            self.steering.extend(messages)
        if self.done:
            # Taken by a poll that finished after the batch: the next turn sends them.
            self.run.queue(self.steering)
            self.steering = None
            return
        remaining = [s for s in self.slots if not s.ended]
        if remaining:
            self.interrupted = True
            self.note = steering_note(self.steering)
            for slot in remaining:
                slot.cancelled = True
                if slot.task is not None:
                    slot.task.cancel()

    def steering_arrived(self) -> None:
        """A steering message was queued (on the loop's thread): with ``"now"``, cancel the
        running calls at once, through their own tasks' cancel scopes.

        An agent's own queue is taken from here, synchronously; another source is polled by a
        task of the run's task group. With nothing running (the calls wait for approval, say)
        the message waits for the next poll: after a call, or after the turn.
        """
        if self.interrupted or self.polling or self.done:
            return
        if not any(slot.task is not None and not slot.finished for slot in self.slots):
            return
        queue = self.run.steering_queue
        if queue is not None:
            self._take(queue.take_nowait())
            return
        tasks = self.run.tasks
        if tasks is not None and self.run.config.get_steering_messages is not None:
            self.polling = True
            tasks.start_soon(self._poll_now, name="steering")

    async def _poll_now(self) -> None:
        try:
            await self._poll_steering()
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            self._fail(HookFailed.wrap("get_steering_messages", exc), exc)
        except BaseException as exc:
            self.run.interrupt(exc, "get_steering_messages")
        finally:
            self.polling = False
