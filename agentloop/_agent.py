"""``Agent``: the stateful API over the loop.

An agent owns the system prompt, model, tools, history, the steering and follow-up queues and
its subscribers, and runs one loop at a time. Every form of prompt (event stream, awaitable,
blocking) goes through the same run, so they behave the same way.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Self, TypeAlias, TypeVar

import anyio
import anyio.lowlevel
import msgspec

from ._checkpoint import Checkpoint
from ._config import AgentLoopConfig, default_convert_to_llm
from ._entry import EventStream
from ._errors import AlreadyRunning, InvalidContinue, NoMessages
from ._events import (
    ContextCompacted,
    MessageEnd,
    MessageUpdate,
    SessionWriteFailed,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from ._history import History, is_failed_answer
from ._loop import _Run
from ._policy import CONTINUE, PolicyContext, PolicyVerdict, Stop
from ._retry import ExponentialBackoff
from ._types import (
    AgentContext,
    AgentMessage,
    AgentResult,
    AssistantMessage,
    Cost,
    Image,
    ModelSpec,
    StreamOptions,
    ThinkingLevel,
    Usage,
    UserMessage,
)

if TYPE_CHECKING:
    from types import TracebackType

    from ._config import AsyncTransform, ConvertToLlm, ToolExecution, Transform
    from ._context import Compaction
    from ._events import AgentEvent
    from ._policy import (
        ApprovalCallback,
        PostLoopPolicy,
        PostTurnPolicy,
        PreDispatchPolicy,
        PreTurnPolicy,
    )
    from ._retry import RetryStrategy
    from ._session_recorder import SessionRecorder, _Recording
    from ._session_store import SessionStore
    from ._stream import StreamFn
    from ._tools import AgentTool, Toolset

__all__ = ["PLAN_MODE_INSTRUCTION", "Agent", "AgentInput", "QueueMode"]

log = logging.getLogger("agentloop")

T = TypeVar("T")
QueueMode: TypeAlias = Literal["one_at_a_time", "all"]
AgentInput: TypeAlias = str | AgentMessage | Sequence[AgentMessage]
Subscriber: TypeAlias = Callable[["AgentEvent"], object]

PLAN_MODE_INSTRUCTION = (
    "You are in plan mode. Investigate with the read-only tools available, then answer with a "
    "numbered plan of the changes you would make. Do not attempt to modify anything."
)


# The agents whose run the current task belongs to (a tool, a subscriber, the loop itself).
_inside_runs: contextvars.ContextVar[tuple[Agent, ...]] = contextvars.ContextVar(
    "agentloop_inside_runs", default=()
)


def _ensure_no_event_loop(what: str, async_form: str) -> None:
    try:
        anyio.get_current_task()
    except Exception:
        return
    raise RuntimeError(
        f"{what}() cannot be called from inside a running event loop; "
        f"use the async form (await agent.{async_form}(...)) instead"
    )


class _PauseAtTurnEnd:
    """Internal post-turn policy: stop the run at the end of a turn once a pause is asked."""

    name = "pause"

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        return Stop(reason="paused") if self.agent._pause_requested else CONTINUE


class _ReadOnlyTools:
    """A toolset seen through plan mode: only its read-only tools."""

    def __init__(self, toolset: Toolset) -> None:
        self.toolset = toolset
        self.name = getattr(toolset, "name", None) or type(toolset).__name__
        self._source: Sequence[AgentTool] | None = None
        self._tools: list[AgentTool] = []

    def get_tools(self) -> Sequence[AgentTool]:
        source = self.toolset.get_tools()
        if source is not self._source:
            self._source = source
            self._tools = [t for t in source if getattr(t, "read_only", False)]
        return self._tools


class _AgentStream(EventStream):
    """The event stream of an agent run; it releases the agent when the run ends.

    The run is built on entering, once the agent is claimed: the prompts (for a continue, the
    queued messages it takes) and the history are read only by the run that will use them, so
    a stream refused with ``AlreadyRunning`` consumes nothing.
    """

    def __init__(self, agent: Agent, prompts: Callable[[], Sequence[AgentMessage]]) -> None:
        self._agent = agent
        self._make_prompts = prompts
        self._entered = False
        self._result: AgentResult | None = None
        self._inside: contextvars.Token[tuple[Agent, ...]] | None = None
        self._recording: _Recording | None = None
        self._tg = None

    _USAGE = "async with agent.stream(...) as events: async for event in events: ..."

    async def __aenter__(self) -> Self:
        if self._entered:
            raise RuntimeError("an EventStream can be entered only once")
        self._entered = True
        agent = self._agent
        scope = anyio.CancelScope()
        agent._claim(scope, None)
        try:
            prompts = self._make_prompts()
            context, config = agent._loop_input()
            super().__init__(
                prompts,
                context,
                config,
                on_event=agent._dispatch,
                cancel_scope=scope,
                history=agent._history_for(config),
            )
            agent._run = self.run
            # The run's task copies the context it is started in, and the body of the
            # ``async with`` consumes the run's events: both count as inside the run.
            self._inside = _inside_runs.set((*_inside_runs.get(), agent))
            if agent.session is not None:
                # The recorder's drain task lives just outside the run's task group.
                self._recording = agent.session.running()
                await self._recording.__aenter__()
            await super().__aenter__()
        except BaseException:
            await self._stop_recording()
            self._leave()
            agent._release(None)
            raise
        return self

    async def _stop_recording(self) -> None:
        recording, self._recording = self._recording, None
        if recording is not None:
            await recording.__aexit__(None, None, None)
            if self._result is not None:
                self._result = self._agent._session_report(self._result, recording)

    def _leave(self) -> None:
        token, self._inside = self._inside, None
        if token is not None:
            _inside_runs.reset(token)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        try:
            try:
                return await super().__aexit__(exc_type, exc, tb)
            finally:
                await self._stop_recording()
        finally:
            self._leave()
            # Left early, the run was cancelled: what it committed still counts.
            result = self._result if self._result is not None else self.run.result()
            self._agent._release(result)


class Agent:
    """A stateful agent: history, tools, queues and subscribers around the loop.

    Args:
        model: the model to call.
        stream_fn: the provider.
        system_prompt: the system prompt.
        tools: the tools the model may call.
        messages: an initial history.
        stream_options: per-call options for the provider.
        convert_to_llm, transform_context, async_transform_context: as in
            ``AgentLoopConfig``.
        steering_mode, follow_up_mode: deliver queued messages ``"one_at_a_time"`` (default)
            or ``"all"`` at once.
        get_api_key: resolves the API key before every model call.
        retry_strategy: retries of failed model calls (default: ``ExponentialBackoff()``).
        pre_turn_policies, pre_dispatch_policies, post_turn_policies, post_loop_policies,
        approval: see ``agentloop._policy``.
        tool_execution, max_concurrent_tools, tool_timeout: how tool batches run.
        session: a ``SessionRecorder``: every committed message is appended to its store as
            the run goes (see ``Agent.resume``).
        toolsets: sources of tools that can change while the agent runs (an MCP server,
            say); their current tools are read at the start of every turn.
        on_message: called with every message committed to the history (e.g. to persist it);
            one that raises is logged and the run goes on.
    """

    def __init__(
        self,
        *,
        model: ModelSpec,
        stream_fn: StreamFn,
        system_prompt: str = "",
        tools: Iterable[AgentTool] = (),
        messages: Iterable[AgentMessage] = (),
        stream_options: StreamOptions | None = None,
        convert_to_llm: ConvertToLlm = default_convert_to_llm,
        transform_context: Transform | None = None,
        async_transform_context: AsyncTransform | None = None,
        steering_mode: QueueMode = "one_at_a_time",
        follow_up_mode: QueueMode = "one_at_a_time",
        get_api_key: Callable[[str], Awaitable[str | None]] | None = None,
        retry_strategy: RetryStrategy | None = None,
        pre_turn_policies: Sequence[PreTurnPolicy] = (),
        pre_dispatch_policies: Sequence[PreDispatchPolicy] = (),
        post_turn_policies: Sequence[PostTurnPolicy] = (),
        post_loop_policies: Sequence[PostLoopPolicy] = (),
        approval: ApprovalCallback | None = None,
        tool_execution: ToolExecution = "concurrent",
        max_concurrent_tools: int | None = None,
        tool_timeout: float | None = None,
        on_message: Callable[[AgentMessage], object] | None = None,
        session: SessionRecorder | None = None,
        toolsets: Iterable[Toolset] = (),
    ) -> None:
        self.stream_fn = stream_fn
        self.stream_options = stream_options or StreamOptions()
        self.convert_to_llm = convert_to_llm
        self.transform_context = transform_context
        self.async_transform_context = async_transform_context
        self.steering_mode: QueueMode = steering_mode
        self.follow_up_mode: QueueMode = follow_up_mode
        self.get_api_key = get_api_key
        self.retry_strategy: RetryStrategy = retry_strategy or ExponentialBackoff()
        self.pre_turn_policies = list(pre_turn_policies)
        self.pre_dispatch_policies = list(pre_dispatch_policies)
        self.post_turn_policies = list(post_turn_policies)
        self.post_loop_policies = list(post_loop_policies)
        self.approval = approval
        self.tool_execution: ToolExecution = tool_execution
        self.max_concurrent_tools = max_concurrent_tools
        self.tool_timeout = tool_timeout
        self.on_message = on_message
        self.session = session
        self.toolsets: list[Toolset] = list(toolsets)
        self._initial = (system_prompt, model, tuple(tools), tuple(messages))
        self._lock = threading.Lock()
        self._subscribers: dict[int, Subscriber] = {}
        self._subscriber_list: tuple[tuple[int, Subscriber], ...] = ()
        self._next_handle = 0
        self._running = False
        self._idle: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._loop_thread: int | None = None
        self._run: _Run | None = None
        self._pause_requested = False
        self._pauser = _PauseAtTurnEnd(self)
        self._set_initial_state()

    def _set_initial_state(self) -> None:
        system_prompt, model, tools, messages = self._initial
        self.system_prompt: str = system_prompt
        self.model: ModelSpec = model
        self._tools: dict[str, AgentTool] = {t.name: t for t in tools}
        self._messages: list[AgentMessage] = list(messages)
        self._history: History | None = None
        self._steering: deque[AgentMessage] = deque()
        self._follow_up: deque[AgentMessage] = deque()
        self.running_tool_calls: set[str] = set()
        self.last_error: str | None = None
        self.plan_mode = False
        self.usage = Usage()
        self.cost = Cost()

    # ---------------------------------------------------------------- state

    @property
    def messages(self) -> list[AgentMessage]:
        """A copy of the committed history."""
        return list(self._messages)

    @property
    def tools(self) -> list[AgentTool]:
        """All registered tools (plan mode restricts what the model is offered, not this)."""
        return list(self._tools.values())

    @property
    def is_running(self) -> bool:
        return self._running

    @property
    def streaming_message(self) -> AssistantMessage | None:
        """The assistant's answer as far as it has streamed, while it streams."""
        run = self._run
        acc = run.acc if run is not None else None
        return acc.snapshot() if acc is not None else None

    def set_system_prompt(self, prompt: str) -> None:
        self.system_prompt = prompt

    def set_model(self, model: ModelSpec) -> None:
        self.model = model

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        import msgspec

        self.model = msgspec.structs.replace(self.model, thinking_level=level)

    def set_tools(self, tools: Iterable[AgentTool]) -> None:
        self._tools = {t.name: t for t in tools}

    def add_tool(self, tool: AgentTool) -> None:
        """Register ``tool``, replacing any tool of the same name."""
        self._tools[tool.name] = tool

    def remove_tool(self, name: str) -> bool:
        """Unregister the tool called ``name``; returns whether there was one."""
        return self._tools.pop(name, None) is not None

    def replace_messages(self, messages: Iterable[AgentMessage]) -> None:
        self._messages = list(messages)
        self._history = None

    def append_messages(self, messages: Iterable[AgentMessage]) -> None:
        if self._history is not None:
            self._history.extend(messages)
        else:
            self._messages.extend(messages)

    def clear_messages(self) -> None:
        self._messages = []
        self._history = None

    def _history_for(self, config: AgentLoopConfig) -> History:
        """The history the next run commits to: kept across runs, rebuilt only when the
        converter or the transformers changed, so a prompt never walks the conversation."""
        incremental = config.transform_context is None and config.async_transform_context is None
        history = self._history
        if history is None or not history.fits(config.convert_to_llm, incremental):
            history = self._history = History(
                self._messages, convert=config.convert_to_llm, incremental=incremental
            )
        return history

    def set_plan_mode(self, enabled: bool) -> None:
        """Plan mode offers the model only read-only tools and asks it for a plan."""
        self.plan_mode = enabled

    # ---------------------------------------------------------------- queues

    @staticmethod
    def _as_message(message: str | AgentMessage) -> AgentMessage:
        return UserMessage.text(message) if isinstance(message, str) else message

    def steer(self, message: str | AgentMessage) -> None:
        """Queue a steering message: it interrupts the running tool batch.

        Safe from any task, and from any thread.
        """
        with self._lock:
            self._steering.append(self._as_message(message))

    def follow_up(self, message: str | AgentMessage) -> None:
        """Queue a message for when the agent would otherwise stop. Safe from any thread."""
        with self._lock:
            self._follow_up.append(self._as_message(message))

    def clear_steering(self) -> None:
        with self._lock:
            self._steering.clear()

    def clear_follow_up(self) -> None:
        with self._lock:
            self._follow_up.clear()

    def clear_queues(self) -> None:
        with self._lock:
            self._steering.clear()
            self._follow_up.clear()

    def has_queued_messages(self) -> bool:
        return bool(self._steering or self._follow_up)

    @property
    def queued_steering(self) -> list[AgentMessage]:
        return list(self._steering)

    @property
    def queued_follow_up(self) -> list[AgentMessage]:
        return list(self._follow_up)

    def _take(self, queue: deque[AgentMessage], mode: QueueMode) -> list[AgentMessage]:
        with self._lock:
            if not queue:
                return []
            if mode == "all":
                taken = list(queue)
                queue.clear()
                return taken
            return [queue.popleft()]

    async def _poll_steering(self) -> list[AgentMessage]:
        # A run being cancelled must not take a message it will never send.
        await anyio.lowlevel.checkpoint_if_cancelled()
        return self._take(self._steering, self.steering_mode)

    async def _poll_follow_up(self) -> list[AgentMessage]:
        await anyio.lowlevel.checkpoint_if_cancelled()
        return self._take(self._follow_up, self.follow_up_mode)

    # ---------------------------------------------------------------- observation

    def subscribe(self, callback: Subscriber) -> int:
        """Call ``callback(event)`` for every event, synchronously; returns a handle.

        A callback that raises is removed and reported; the run goes on.
        """
        handle = self._next_handle
        self._next_handle += 1
        self._subscribers[handle] = callback
        self._subscriber_list = tuple(self._subscribers.items())
        return handle

    def unsubscribe(self, handle: int) -> bool:
        """Remove a subscriber; within a callback it takes effect after the current event."""
        found = self._subscribers.pop(handle, None) is not None
        self._subscriber_list = tuple(self._subscribers.items())
        return found

    def _dispatch(self, event: AgentEvent) -> None:
        cls = type(event)
        if cls is not MessageUpdate:
            if cls is MessageEnd:
                assert isinstance(event, MessageEnd)
                message = event.message  # already in the history: the run committed it
                if type(message) is AssistantMessage and message.error_message:
                    self.last_error = message.error_message
                if self.session is not None:
                    self.session.record(message)
                if self.on_message is not None:
                    try:
                        self.on_message(message)
                    except Exception:
                        # The loop's events must not fail half-dispatched; the hook stays.
                        log.exception("on_message hook %r raised", self.on_message)
            elif cls is ToolExecutionStart:
                assert isinstance(event, ToolExecutionStart)
                self.running_tool_calls.add(event.call_id)
            elif cls is ToolExecutionEnd:
                assert isinstance(event, ToolExecutionEnd)
                self.running_tool_calls.discard(event.call_id)
        for handle, callback in self._subscriber_list:
            try:
                callback(event)
            except Exception:
                log.exception("subscriber %r raised; it is unsubscribed", callback)
                self.unsubscribe(handle)

    # ---------------------------------------------------------------- running

    def _loop_input(self) -> tuple[AgentContext, AgentLoopConfig]:
        tools = list(self._tools.values())
        toolsets: list[Toolset] = list(self.toolsets)
        system_prompt = self.system_prompt
        if self.plan_mode:
            tools = [t for t in tools if getattr(t, "read_only", False)]
            toolsets = [_ReadOnlyTools(t) for t in toolsets]
            system_prompt = (
                f"{system_prompt}\n\n{PLAN_MODE_INSTRUCTION}"
                if system_prompt
                else PLAN_MODE_INSTRUCTION
            )
        config = AgentLoopConfig(
            model=self.model,
            stream_fn=self.stream_fn,
            stream_options=self.stream_options,
            tools=tools,
            retry_strategy=self.retry_strategy,
            convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context,
            async_transform_context=self.async_transform_context,
            get_api_key=self.get_api_key,
            get_steering_messages=self._poll_steering,
            get_follow_up_messages=self._poll_follow_up,
            pre_turn_policies=self.pre_turn_policies,
            pre_dispatch_policies=self.pre_dispatch_policies,
            post_turn_policies=[*self.post_turn_policies, self._pauser],
            post_loop_policies=self.post_loop_policies,
            approval=self.approval,
            tool_execution=self.tool_execution,
            max_concurrent_tools=self.max_concurrent_tools,
            tool_timeout=self.tool_timeout,
            toolsets=toolsets,
        )
        # The loop copies the message list it is given; the agent's history grows from events.
        context = AgentContext(system_prompt=system_prompt, messages=self._messages, tools=tools)
        return context, config

    def _claim(self, scope: anyio.CancelScope, run: _Run | None) -> None:
        # Check-and-set with no await in between, under the lock: two callers (tasks or
        # threads) can never both start.
        with self._lock:
            if self._running:
                raise AlreadyRunning("the agent is already running")
            self._running = True
        self._idle = anyio.Event()
        self._scope = scope
        self._run = run
        self._token = anyio.lowlevel.current_token()
        self._loop_thread = threading.get_ident()

    def _release(self, result: AgentResult | None) -> None:
        if result is not None:
            self.usage = self.usage + result.usage
            self.cost = self.cost + result.cost
            if result.error:
                self.last_error = result.error
        self._scope = None
        self._run = None
        self._token = None
        self._loop_thread = None
        self._pause_requested = False
        self.running_tool_calls.clear()
        idle, self._idle = self._idle, None
        with self._lock:
            self._running = False
        if idle is not None:
            idle.set()

    async def _execute(self, prompts: Sequence[AgentMessage]) -> AgentResult:
        scope = anyio.CancelScope()
        context, config = self._loop_input()
        run = _Run(
            context, config, self._dispatch, cancel_scope=scope, history=self._history_for(config)
        )
        self._claim(scope, run)
        result: AgentResult | None = None
        token = _inside_runs.set((*_inside_runs.get(), self))
        try:
            if self.session is None:
                result = await run.run(prompts)
            else:
                recording = self.session.running()
                async with recording:
                    result = await run.run(prompts)
                result = self._session_report(result, recording)
            return result
        finally:
            _inside_runs.reset(token)
            self._release(result if result is not None else run.result())

    def _session_report(self, result: AgentResult, recording: _Recording) -> AgentResult:
        """``result`` with what the session store did not take, told to the subscribers."""
        unsaved = recording.unstored + recording.skipped
        if not unsaved:
            return result
        error = recording.error
        text = f"{type(error).__name__}: {error}" if error is not None else "not stored"
        self._dispatch(
            SessionWriteFailed(error=text, unstored=recording.unstored, skipped=recording.skipped)
        )
        return msgspec.structs.replace(result, unsaved_messages=unsaved, session_error=text)

    @staticmethod
    def _prompts(input: AgentInput, images: Sequence[Image] | None) -> list[AgentMessage]:  # noqa: A002
        if isinstance(input, str):
            return [UserMessage.text(input, images=list(images) if images else None)]
        if images:
            raise TypeError("images can only be given with a text prompt")
        if isinstance(input, list | tuple):
            return list(input)
        assert not isinstance(input, Sequence)
        return [input]

    def _check_continue(self) -> None:
        if not self._messages:
            raise NoMessages("cannot continue: the history is empty")
        last = self._messages[-1]
        if (
            isinstance(last, AssistantMessage)
            and not is_failed_answer(last)
            and not self.has_queued_messages()
        ):
            raise InvalidContinue(
                "cannot continue: the last message is the assistant's and nothing is queued"
            )

    def _continue_prompts(self) -> list[AgentMessage]:
        if not self._messages:
            raise NoMessages("cannot continue: the history is empty")
        last = self._messages[-1]
        if isinstance(last, AssistantMessage) and not is_failed_answer(last):
            queued = self._take(self._steering, self.steering_mode) or self._take(
                self._follow_up, self.follow_up_mode
            )
            if not queued:
                raise InvalidContinue(
                    "cannot continue: the last message is the assistant's and nothing is queued"
                )
            return queued
        return []

    def stream(self, input: AgentInput, *, images: Sequence[Image] | None = None) -> EventStream:  # noqa: A002
        """Run a prompt; use as ``async with agent.stream("...") as events: async for ...``.

        Raises:
            AlreadyRunning: on entering, if a run is active.
        """
        prompts = self._prompts(input, images)
        return _AgentStream(self, lambda: prompts)

    async def prompt(
        self,
        input: AgentInput,  # noqa: A002
        *,
        images: Sequence[Image] | None = None,
    ) -> AgentResult:
        """Run a prompt (text, text with images, or messages) to the end.

        Raises:
            AlreadyRunning: a run is active.
        """
        return await self._execute(self._prompts(input, images))

    def prompt_sync(
        self,
        input: AgentInput,  # noqa: A002
        *,
        images: Sequence[Image] | None = None,
        backend: str = "asyncio",
    ) -> AgentResult:
        """Run a prompt to the end on a fresh event loop of ``backend`` ("asyncio" or "trio").

        Raises:
            RuntimeError: called from inside a running event loop (use ``await prompt()``).
            AlreadyRunning: a run is active.
        """
        _ensure_no_event_loop("prompt_sync", "prompt")
        return anyio.run(functools.partial(self.prompt, input, images=images), backend=backend)

    def continue_stream(self) -> EventStream:
        """Continue from the history, as an event stream (see ``continue_``).

        Raises:
            NoMessages, InvalidContinue: as ``continue_`` (checked again on entering).
            AlreadyRunning: on entering, if a run is active (no queued message is taken).
        """
        self._check_continue()
        return _AgentStream(self, self._continue_prompts)

    async def continue_(self) -> AgentResult:
        """Continue from the history: after a tool result, a user message, or queued messages.

        Raises:
            NoMessages: the history is empty.
            InvalidContinue: the last message is the assistant's and nothing is queued.
            AlreadyRunning: a run is active.
        """
        if self._running:
            raise AlreadyRunning("the agent is already running")
        return await self._execute(self._continue_prompts())

    def continue_sync(self, *, backend: str = "asyncio") -> AgentResult:
        """Blocking ``continue_`` on a fresh event loop.

        Raises:
            RuntimeError: called from inside a running event loop.
            NoMessages, InvalidContinue, AlreadyRunning: as ``continue_``.
        """
        _ensure_no_event_loop("continue_sync", "continue_")
        return anyio.run(self.continue_, backend=backend)

    # ---------------------------------------------------------------- control

    def abort(self) -> None:
        """Abort the running run (if any): it ends with stop reason ``aborted``.

        Call it from the event loop's thread; from another thread use ``abort_threadsafe``.
        """
        if self._scope is not None:
            self._scope.cancel()

    def abort_threadsafe(self) -> None:
        """``abort()`` from any thread, the event loop's own included. Does nothing when idle."""
        token = self._token
        if token is None:
            return
        if threading.get_ident() == self._loop_thread:
            self.abort()
            return
        import anyio.from_thread  # only needed here; it is slow to import

        try:
            anyio.from_thread.run_sync(self.abort, token=token)
        except RuntimeError:
            # The run (and its event loop) ended meanwhile: there is nothing left to abort.
            log.debug("abort_threadsafe: the event loop is gone", exc_info=True)

    async def wait_idle(self) -> None:
        """Return once no run is active."""
        idle = self._idle
        if idle is not None:
            await idle.wait()

    def reset(self) -> None:
        """Restore the initial state: history, tools, queues, model, prompt, usage.

        Raises:
            AlreadyRunning: a run is active.
        """
        if self._running:
            raise AlreadyRunning("cannot reset a running agent")
        self._set_initial_state()

    # ---------------------------------------------------------------- structured output

    async def structured(
        self,
        prompt: AgentInput,
        output: type[T] | dict[str, Any],
        *,
        max_retries: int = 2,
        tool_name: str = "final_result",
    ) -> Any:
        """Ask for output of a given shape: a msgspec type (a typed instance comes back) or a
        JSON Schema dict (the validated object comes back).

        The model must call a synthetic tool with the output; invalid output is sent back with
        the validation error, up to ``max_retries`` more times.

        Raises:
            StructuredOutputFailed: still invalid (or never given) after the retries.
            Aborted: the run was aborted first.
            AlreadyRunning: a run is active.
        """
        from ._structured import run_structured

        return await run_structured(
            self, prompt, output, max_retries=max_retries, tool_name=tool_name
        )

    def structured_sync(
        self,
        prompt: AgentInput,
        output: type[T] | dict[str, Any],
        *,
        max_retries: int = 2,
        tool_name: str = "final_result",
        backend: str = "asyncio",
    ) -> Any:
        """Blocking ``structured`` on a fresh event loop.

        Raises:
            RuntimeError: called from inside a running event loop.
            StructuredOutputFailed, Aborted, AlreadyRunning: as ``structured``.
        """
        _ensure_no_event_loop("structured_sync", "structured")
        call = functools.partial(
            self.structured, prompt, output, max_retries=max_retries, tool_name=tool_name
        )
        return anyio.run(call, backend=backend)

    # ---------------------------------------------------------------- context and sessions

    def compact(self, *, max_tokens: int | None = None) -> Compaction:
        """Shrink the history once with the sliding window and keep the result.

        Keeps the first user message, never splits a tool call from its results, and tells the
        subscribers with a ``ContextCompacted`` event. By default the budget comes from the
        model's context window (see ``SlidingWindow``).

        Raises:
            AlreadyRunning: a run is active.
        """
        from ._context import compact_messages

        if self._running:
            raise AlreadyRunning("cannot compact the history of a running agent")
        done = compact_messages(
            self._messages,
            max_tokens=max_tokens,
            model=self.model,
            system_prompt=self.system_prompt,
        )
        if done.dropped:
            self._messages = list(done.messages)
            self._history = None
            self._dispatch(
                ContextCompacted(
                    report=(
                        f"dropped {done.dropped} messages "
                        f"({done.tokens_before} -> {done.tokens_after} estimated tokens)"
                    ),
                    dropped=done.dropped,
                )
            )
        return done

    @classmethod
    async def resume(
        cls,
        store: SessionStore,
        session_id: str,
        *,
        model: ModelSpec,
        stream_fn: StreamFn,
        **options: Any,
    ) -> Agent:
        """An agent continuing a stored session, recording into it from then on.

        The stored history is repaired on load: a tool call the previous process never
        answered (it was killed mid-run) gets an error result, so the history is well paired.

        Raises:
            SessionNotFound: no such session.
        """
        from ._session_recorder import SessionRecorder
        from ._session_resume import load_session as resume

        messages = await resume(store, session_id)
        return cls(
            model=model,
            stream_fn=stream_fn,
            messages=messages,
            session=SessionRecorder(store, session_id),
            **options,
        )

    # ---------------------------------------------------------------- checkpoints

    def checkpoint(self) -> Checkpoint:
        """Everything needed to resume this agent later (round-trips through JSON)."""
        return Checkpoint(
            system_prompt=self.system_prompt,
            model=self.model,
            messages=list(self._messages),
            steering=list(self._steering),
            follow_up=list(self._follow_up),
            tool_names=list(self._tools),
            usage=self.usage,
            cost=self.cost,
            plan_mode=self.plan_mode,
        )

    async def pause(self) -> Checkpoint:
        """Stop the running run at the end of its current turn and return a checkpoint.

        Await it from outside the run (another task). From inside it (a tool, a hook) use
        ``request_pause()`` and take ``checkpoint()`` once the run has ended.

        Raises:
            RuntimeError: awaited from inside the run it would wait for.
        """
        if self in _inside_runs.get():
            raise RuntimeError(
                "pause() cannot be awaited from inside the agent's own run (it would wait for "
                "itself); call agent.request_pause() and take agent.checkpoint() after the run"
            )
        if self.request_pause():
            await self.wait_idle()
        return self.checkpoint()

    def request_pause(self) -> bool:
        """Ask the running run to stop at the end of its current turn; returns whether one runs.

        Synchronous, so tools, subscribers and policies can call it. The run ends with
        ``stopped_by`` set; ``checkpoint()`` then captures a state ``continue_`` resumes from.
        """
        if not self._running:
            return False
        self._pause_requested = True
        return True

    @classmethod
    def restore(
        cls,
        checkpoint: Checkpoint,
        *,
        tools: Iterable[AgentTool] = (),
        stream_fn: StreamFn,
        **options: Any,
    ) -> Agent:
        """Rebuild an agent from ``checkpoint``; ``tools`` must provide every tool it names.

        The checkpoint becomes the new agent's initial state for history, model and prompt:
        ``reset()`` returns to it (with empty queues and zero usage), not to an empty agent.

        Raises:
            ValueError: a tool the checkpoint names is missing from ``tools``.
        """
        by_name = {t.name: t for t in tools}
        missing = [name for name in checkpoint.tool_names if name not in by_name]
        if missing:
            raise ValueError(f"restore needs these tools: {', '.join(missing)}")
        agent = cls(
            model=checkpoint.model,
            stream_fn=stream_fn,
            system_prompt=checkpoint.system_prompt,
            tools=[by_name[name] for name in checkpoint.tool_names],
            messages=checkpoint.messages,
            **options,
        )
        agent._steering.extend(checkpoint.steering)
        agent._follow_up.extend(checkpoint.follow_up)
        agent.usage = checkpoint.usage
        agent.cost = checkpoint.cost
        agent.plan_mode = checkpoint.plan_mode
        return agent
