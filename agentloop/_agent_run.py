"""How an ``Agent`` runs the loop: one run at a time, claimed and released atomically.

Every form of prompt (event stream, awaitable, blocking) builds the run's input from the agent's
state here, claims the agent, runs, records what the run committed and releases the agent, so
they all behave the same way. What one run adds (typed output, plan mode) is added to that run's
input only: the agent's own prompt, tools and policies never change while it runs.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Self, TypeVar

import anyio
import anyio.lowlevel
import msgspec

from ._entry import EventStream
from ._errors import AlreadyRunning, MissingExtra
from ._events import (
    MessageEnd,
    MessageUpdate,
    SessionWriteFailed,
)
from ._history import History
from ._loop import ToolIndex, _Run
from ._types import AgentContext, AgentMessage, AgentResult, AssistantMessage, OutputT

if TYPE_CHECKING:
    from types import TracebackType

    from ._abc import AgentTool, StreamFn, Toolset
    from ._agent import Agent
    from ._config import AgentLoopConfig
    from ._events import AgentEvent
    from ._extras import RunExtras
    from ._output import OutputSpec
    from ._session_recorder import SessionRecorder, _Recording

__all__ = [
    "PLAN_MODE_INSTRUCTION",
    "AgentRunner",
    "AgentStream",
    "ensure_no_event_loop",
    "run_on_backend",
]

log = logging.getLogger("agentloop.agent")

T = TypeVar("T")

PLAN_MODE_INSTRUCTION = (
    "You are in plan mode. Investigate with the read-only tools available, then answer with a "
    "numbered plan of the changes you would make. Do not attempt to modify anything."
)

# The agents whose run the current task belongs to (a tool, a subscriber, the loop itself).
_inside_runs: contextvars.ContextVar[tuple[object, ...]] = contextvars.ContextVar(
    "agentloop_inside_runs", default=()
)


def ensure_no_event_loop(what: str, async_form: str) -> None:
    """Raise if called inside a running event loop (a blocking form would deadlock it).

    Raises:
        RuntimeError: an event loop is running in this thread.
    """
    try:
        anyio.get_current_task()
    except Exception:
        return
    raise RuntimeError(
        f"{what}() cannot be called from inside a running event loop; "
        f"use the async form (await agent.{async_form}(...)) instead"
    )


def run_on_backend(func: Callable[..., Awaitable[T]], *args: Any, backend: str) -> T:
    """``anyio.run`` on ``backend``, with an error naming our extra when trio is missing.

    Raises:
        MissingExtra: ``backend="trio"`` and trio is not installed.
    """
    if backend == "trio":
        MissingExtra.check('backend="trio"', "trio", "trio")
    return anyio.run(func, *args, backend=backend)


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


def _with_instruction(
    prompt: str | Callable[[], str | Awaitable[str]], instruction: str
) -> str | Callable[[], Awaitable[str]]:
    """The system prompt with ``instruction`` appended (computed per turn when dynamic)."""
    if isinstance(prompt, str):
        return f"{prompt}\n\n{instruction}" if prompt else instruction

    async def dynamic() -> str:
        value = prompt()
        if isinstance(value, Awaitable):
            value = await value
        text = str(value)
        return f"{text}\n\n{instruction}" if text else instruction

    return dynamic


class AgentRunner:
    """The run half of ``Agent`` (a mixin: ``Agent`` sets these attributes up)."""

    if not TYPE_CHECKING:  # no dict of its own (``Agent`` holds the slots); mypy would
        __slots__ = ()  # check this mixin's assignments against an empty list

    stream_fn: StreamFn
    system_prompt: str | Callable[[], str | Awaitable[str]]
    plan_mode: bool
    session: SessionRecorder | None
    _toolsets: list[Toolset] | None  # ``Agent.toolsets``, made when first read
    last_error: str | None
    on_message: Callable[[AgentMessage], object] | None
    approval: Any
    usage: Any
    cost: Any
    _tools: dict[str, AgentTool]
    _tool_index: ToolIndex | None
    _messages: list[AgentMessage]
    _history: History | None
    _lock: threading.Lock
    _running: bool
    _idle: anyio.Event | None
    _scope: anyio.CancelScope | None
    _token: anyio.lowlevel.EventLoopToken | None
    _loop_thread: int | None
    _run: _Run | None
    _pause_requested: bool
    _subscriber_list: tuple[tuple[int, Callable[[AgentEvent], object]], ...]

    if TYPE_CHECKING:  # provided by ``Agent``

        def _config(
            self,
            *,
            tools: Sequence[AgentTool],
            toolsets: Sequence[Toolset],
            system_prompt: Callable[[], str | Awaitable[str]] | None,
            extra_pre_turn: Sequence[Any],
            extra_post_turn: Sequence[Any],
            extra_post_loop: Sequence[Any],
            turn_options: Any,
            approval: Any,
        ) -> AgentLoopConfig: ...
        def _notify(self, event: AgentEvent) -> None: ...
        def _on_update(self, event: AgentEvent) -> None: ...
        def _route_updates(self) -> None: ...
        def unsubscribe(self, handle: int) -> bool: ...

    # ---------------------------------------------------------------- the run's input

    def _loop_input(
        self, output: OutputSpec[Any] | None, extras: Sequence[RunExtras] = ()
    ) -> tuple[AgentContext, AgentLoopConfig]:
        tools: Sequence[AgentTool] = self._tool_list()
        toolsets: tuple[Toolset, ...] = tuple(self._toolsets or ())
        system_prompt = self.system_prompt
        pre_turn: list[Any] = []
        post_turn: list[Any] = []
        post_loop: list[Any] = []
        turn_options = None
        approval = self.approval
        if self.plan_mode:
            tools = [t for t in tools if getattr(t, "read_only", False)]
            toolsets = tuple(_ReadOnlyTools(t) for t in toolsets)
            system_prompt = _with_instruction(system_prompt, PLAN_MODE_INSTRUCTION)
        everything = [*extras, output.extras()] if output is not None else list(extras)
        for extra in everything:
            names = {t.name for t in extra.tools}
            tools = [t for t in tools if t.name not in names] + list(extra.tools)
            if extra.instruction:
                system_prompt = _with_instruction(system_prompt, extra.instruction)
            pre_turn.extend(extra.pre_turn_policies)
            post_turn.extend(extra.post_turn_policies)
            post_loop.extend(extra.post_loop_policies)
            if extra.turn_options is not None:
                turn_options = extra.turn_options
            if approval is None:
                approval = extra.approval
        config = self._config(
            tools=tools,
            toolsets=toolsets,
            system_prompt=None if isinstance(system_prompt, str) else system_prompt,
            extra_pre_turn=pre_turn,
            extra_post_turn=post_turn,
            extra_post_loop=post_loop,
            turn_options=turn_options,
            approval=approval,
        )
        static = system_prompt if isinstance(system_prompt, str) else ""
        # The run commits to the agent's own history (see ``_history_for``) and takes its tools
        # from the config.
        context = AgentContext(system_prompt=static, messages=self._messages)
        return context, config

    def _tool_list(self) -> Sequence[AgentTool]:
        """The agent's tools, as its runs take them: one list (and one ``ToolIndex``) kept
        until they change, so that a run makes neither."""
        index = self._tool_index
        if index is None or not index.current():
            index = self._tool_index = ToolIndex(list(self._tools.values()))
        return index.tools

    def _history_for(self, config: AgentLoopConfig) -> History:
        """The history the next run commits to: kept across runs, rebuilt only when the
        converter or the transformers changed, so a prompt never walks the conversation."""
        history = self._history
        if history is None or not history.fits(config.convert_to_llm):
            history = self._history = History(self._messages, convert=config.convert_to_llm)
        return history

    # ---------------------------------------------------------------- claiming

    def _claim(self, scope: anyio.CancelScope, run: _Run | None) -> None:
        # Check-and-set with no await in between, under the lock: two callers (tasks or
        # threads) can never both start.
        with self._lock:
            if self._running:
                raise AlreadyRunning("the agent is already running")
            self._running = True
        self._scope = scope
        self._run = run
        self._token = anyio.lowlevel.current_token()
        self._loop_thread = threading.get_ident()
        if run is not None:
            run.token = self._token

    def _release(self, result: AgentResult[Any] | None) -> None:
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
        idle, self._idle = self._idle, None
        with self._lock:
            self._running = False
        if idle is not None:
            idle.set()

    def _steering_arrived(self) -> None:
        """``steer`` queued a message: tell the running batch, from whatever thread."""
        run = self._run
        if run is not None:
            run.steering_arrived_threadsafe()

    def _inside_own_run(self) -> bool:
        return self in _inside_runs.get()

    # ---------------------------------------------------------------- observing the run

    def _on_event(self, event: AgentEvent) -> None:
        """Everything the agent keeps from its runs' events, then its subscribers."""
        keep = _KEEP.get(type(event))
        if keep is not None and keep(self, event):
            return  # a streamed token, handed to the subscribers already
        if self._subscriber_list:
            self._notify(event)

    def _session_report(
        self, result: AgentResult[OutputT], recording: _Recording
    ) -> AgentResult[OutputT]:
        """``result`` with what the session store did not take, told to the subscribers."""
        unsaved = recording.unstored + recording.skipped
        if not unsaved:
            return result
        error = recording.error
        text = f"{type(error).__name__}: {error}" if error is not None else "not stored"
        self._notify(
            SessionWriteFailed(error=text, unstored=recording.unstored, skipped=recording.skipped)
        )
        return msgspec.structs.replace(result, unsaved_messages=unsaved, session_error=text)

    # ---------------------------------------------------------------- running

    def _new_run(
        self, scope: anyio.CancelScope, output: OutputSpec[Any] | None, extras: Sequence[RunExtras]
    ) -> _Run:
        # A function of its own, so that the run's input (its context) is no local of
        # ``_execute``, whose frame a run keeps for as long as it lasts.
        context, config = self._loop_input(output, extras)
        return _Run(
            context,
            config,
            self._on_event,
            cancel_scope=scope,
            history=self._history_for(config),
            tools=self._tool_index,  # taken when the run's tools are the agent's, unchanged
            observed=False,
        )

    async def _execute(
        self,
        prompts: Sequence[AgentMessage],
        output: OutputSpec[Any] | None,
        extras: Sequence[RunExtras] = (),
    ) -> AgentResult[Any]:
        """Run to the end (the awaitable forms); typed output is checked by the caller."""
        scope = anyio.CancelScope()
        run = self._new_run(scope, output, extras)
        self._claim(scope, run)
        self._route_updates()
        result: AgentResult[str] | None = None
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


def _keep_update(agent: AgentRunner, event: Any) -> bool:
    agent._on_update(event)  # once per streamed token: nothing to keep
    return True


def _keep_message(agent: AgentRunner, event: Any) -> bool:
    message = event.message  # already in the history: the run committed it
    if type(message) is AssistantMessage and message.error_message:
        agent.last_error = message.error_message
    if agent.session is not None:
        agent.session.record(message)
    if agent.on_message is not None:
        try:
            agent.on_message(message)
        except Exception:
            # The loop's events must not fail half-dispatched; the hook stays.
            log.exception("on_message hook %r raised", agent.on_message)
    return False


# What ``AgentRunner._on_event`` keeps, by event type (a lookup, where a chain of type tests
# cost every event of every turn).
_KEEP: dict[type, Callable[[AgentRunner, Any], bool]] = {
    MessageUpdate: _keep_update,
    MessageEnd: _keep_message,
}


class AgentStream(EventStream[OutputT]):
    """The event stream of an agent run; it releases the agent when the run ends.

    The run is built on entering, once the agent is claimed: the prompts (for a continue, the
    queued messages it takes) and the history are read only by the run that will use them, so
    a stream refused with ``AlreadyRunning`` consumes nothing. With typed output, ``result``
    raises (as ``Agent.prompt`` does) when the run ended without a valid output.
    """

    _USAGE = "async with agent.stream(...) as events: async for event in events: ..."

    def __init__(
        self,
        agent: Agent[Any],
        prompts: Callable[[], Sequence[AgentMessage]],
        output: OutputSpec[Any] | None,
    ) -> None:
        self._agent = agent
        self._make_prompts = prompts
        self._output = output
        self._entered = False
        self._result: AgentResult[OutputT] | None = None
        self._inside: contextvars.Token[tuple[object, ...]] | None = None
        self._recording: _Recording | None = None
        self._tg = None

    @property
    def result(self) -> AgentResult[OutputT]:
        """The run's result; a run that failed is data here (reading its ``output`` raises
        the run's typed error).

        Raises:
            RuntimeError: the run has not finished.
        """
        return super().result

    async def __aenter__(self) -> Self:
        if self._entered:
            raise RuntimeError("an EventStream can be entered only once")
        self._entered = True
        agent = self._agent
        scope = anyio.CancelScope()
        agent._claim(scope, None)
        try:
            prompts = self._make_prompts()
            context, config = agent._loop_input(self._output)
            super().__init__(
                prompts,
                context,
                config,
                on_event=agent._on_event,
                cancel_scope=scope,
                history=agent._history_for(config),
            )
            agent._run = self.run
            self.run.token = agent._token
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
            result: AgentResult[Any] = (
                self._result if self._result is not None else self.run.result()
            )
            self._agent._release(result)
            if self._output is not None and self._result is not None:
                self._result = self._output.finish(self._result)
