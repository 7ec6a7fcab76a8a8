"""``Agent``: the stateful API over the loop.

An agent owns the system prompt, model, tools, history, the steering and follow-up queues and
its subscribers, and runs one loop at a time. The class is assembled from one mixin per concern:
queues (``_agent_queues``), subscribers (``_agent_subscribers``), runs (``_agent_run``),
checkpoints (``_agent_checkpoint``) and the names kept for one release (``_agent_compat``);
typed output lives in ``_output``.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, Self, TypeAlias, TypeVar, overload

import anyio
import anyio.lowlevel
import msgspec

from ._agent_checkpoint import AgentCheckpoints, Checkpoint
from ._agent_compat import AgentCompat
from ._agent_queues import AgentQueues, QueueMode, QueuePoll
from ._agent_run import AgentRunner, AgentStream, ensure_no_event_loop, run_on_backend
from ._agent_subscribers import AgentSubscribers
from ._config import AgentLoopConfig, default_convert_to_llm
from ._errors import AlreadyRunning, InvalidContinue, NoMessages
from ._events import ContextCompacted
from ._history import is_failed_answer
from ._models import resolve_model, split_model_string
from ._output import OutputSpec, check_output_type
from ._retry import ExponentialBackoff
from ._types import (
    AgentMessage,
    AgentResult,
    AssistantMessage,
    Cost,
    Image,
    ModelSpec,
    OutputT,
    StreamOptions,
    ThinkingLevel,
    Usage,
    UserMessage,
)

if TYPE_CHECKING:
    from ._abc import (
        AgentTool,
        ApprovalCallback,
        Instrumentation,
        PostLoopPolicy,
        PostTurnPolicy,
        PreDispatchPolicy,
        PreTurnPolicy,
        RetryStrategy,
        SessionStore,
        StreamFn,
        Toolset,
    )
    from ._config import (
        AsyncTransform,
        ConvertToLlm,
        SteeringInterrupt,
        ToolExecution,
        Transform,
    )
    from ._context import Compaction
    from ._session_recorder import SessionRecorder
    from ._subagent import SubAgentTool

__all__ = ["Agent", "AgentInput", "SystemPrompt"]

U = TypeVar("U")
T = TypeVar("T")
_KEEP: Any = object()  # ``override``'s "leave as it is"
AgentInput: TypeAlias = str | AgentMessage | Sequence[AgentMessage]
"""What a prompt may be: text (a user message), one message, or several messages."""
SystemPrompt: TypeAlias = str | Callable[[], str | Awaitable[str]]
"""A system prompt: text, or a function (sync or async) called at the start of every turn."""


class _ListMadeWhenRead(Generic[T]):
    """A public list attribute of an agent, kept as ``None`` in the slot ``_<name>`` until it
    is read (or set): most agents never have any, and an empty list is one more object per
    agent for the cyclic collector to walk. Reading it makes the list, so that
    ``agent.toolsets.append(...)`` works as it always did.
    """

    __slots__ = ("_slot",)

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}"

    @overload
    def __get__(self, agent: None, owner: type) -> Self: ...
    @overload
    def __get__(self, agent: object, owner: type | None = None) -> list[T]: ...
    def __get__(self, agent: object, owner: type | None = None) -> list[T] | Self:
        if agent is None:
            return self
        items: list[T] | None = getattr(agent, self._slot)
        if items is None:
            items = []
            setattr(agent, self._slot, items)
        return items

    def __set__(self, agent: object, items: list[T]) -> None:
        setattr(agent, self._slot, items)


def _resolve(model: str | ModelSpec, stream_fn: StreamFn | None) -> tuple[ModelSpec, StreamFn]:
    if isinstance(model, ModelSpec):
        if stream_fn is None:
            raise TypeError(
                "a ModelSpec needs a stream_fn; or name the model with a string such as "
                "'anthropic:claude-sonnet-4-5' and the provider is found for you"
            )
        return model, stream_fn
    if stream_fn is not None:
        try:
            return resolve_model(model).spec, stream_fn
        except LookupError:
            provider, model_id = split_model_string(model)
            return ModelSpec(provider=provider, model_id=model_id), stream_fn
    resolved = resolve_model(model)
    return resolved.spec, resolved.stream_fn


class Agent(
    AgentQueues, AgentSubscribers, AgentCheckpoints, AgentRunner, AgentCompat, Generic[OutputT]
):
    """A stateful agent: history, tools, queues and subscribers around the loop.

    Args:
        model: a model string ``"provider:model-id"`` (the provider, the model's spec and its
            API key from the provider's usual environment variable are found for you), or a
            ``ModelSpec`` with an explicit ``stream_fn``.
        stream_fn: the provider; needed with a ``ModelSpec``, optional with a model string.
        name: what the agent is called in a tree of agents (``agentloop.multi``).
        system_prompt: the system prompt, or a callable (sync or async) computing it once per
            turn.
        tools: the tools the model may call.
        toolsets: sources of tools that can change while the agent runs (an MCP server, say);
            their current tools are read at the start of every turn.
        messages: an initial history.
        deps: what the tools reach as ``ToolContext.deps`` (clients, connections, settings).
        output_type: answer with a value of this type instead of text (a msgspec Struct, a
            dataclass, a TypedDict, a plain type, or a JSON Schema dict): ``result.output`` is
            typed accordingly. Each prompt may ask for another with its own ``output_type``.
        output_retries: how many more times invalid output is sent back to the model.
        raise_on_error: whether ``prompt``, ``continue_run`` and their ``_sync`` forms raise
            the run's typed error when it fails (``True``, the default) or return the failed
            result as data (``False``); each call may say otherwise. Event streams never raise
            for a failed run: the failure is in their events and their ``result``.
        stream_options: per-call options for the provider.
        convert_to_llm: maps each message to what the model sees (``AgentLoopConfig``).
        transform_context: shapes each request's messages (a ``SlidingWindow``, say).
        async_transform_context: the same, asynchronous; runs first.
        steering_mode: deliver queued steering ``"one_at_a_time"`` (default) or ``"all"``.
        steering_interrupt: when ``steer`` cuts into running tool calls: ``"now"`` (default,
            they are cancelled at once) or ``"after_call"`` (when one of them ends).
        follow_up_mode: the same for follow-ups.
        get_api_key: resolves the API key before every model call.
        retry_strategy: retries of failed model calls (default: ``ExponentialBackoff()``).
        pre_turn_policies: checked before each model call (see ``agentloop.policy``).
        pre_dispatch_policies: checked for each tool call before it runs.
        post_turn_policies: checked at the end of each turn.
        post_loop_policies: checked when the run would end.
        approval: asked about each tool call that passed the pre-dispatch policies.
        tool_execution: ``"concurrent"`` (default), ``"sequential"`` or a partition function.
        max_concurrent_tools: at most this many tools run at once.
        tool_timeout: seconds a tool call may take before it ends as an error.
        session: a ``SessionRecorder``: every committed message is appended to its store as
            the run goes (see ``Agent.from_session``).
        on_message: called with every message committed to the history (e.g. to persist it);
            one that raises is logged and the run goes on.
        instrumentation: observes the agent's runs, model calls and tool calls (OpenTelemetry
            spans and metrics with ``agentloop_otel``); its sub-agents use it too unless they
            have their own. The conversation it reports is the session's id, if any.

    Raises:
        UnknownModel: a model string no installed provider resolves (naming the extra to
            install when its provider's dependencies are missing).
        TypeError: a ``ModelSpec`` without a ``stream_fn``; an ``output_type`` whose values a
            model's JSON cannot give.
    """

    # Slots, not a per-instance dict: an agent has ~50 attributes, past what CPython's shared
    # instance dicts hold (30), so a dict cost 1.6 KiB per agent; slots cost a third of that
    # (B4 makes an agent per run). A subclass gets a dict again unless it declares slots.
    __slots__ = (
        "__weakref__",
        "_follow_up",
        "_history",
        "_idle",
        "_initial",
        "_lock",
        "_loop_thread",
        "_messages",
        "_next_handle",
        "_pause_requested",
        "_pauser",
        "_post_loop_policies",
        "_post_turn_policies",
        "_pre_turn_policies",
        "_run",
        "_running",
        "_scope",
        "_steering",
        "_subscriber_callbacks",
        "_subscriber_list",
        "_subscribers",
        "_token",
        "_tool_index",
        "_tools",
        "_toolsets",
        "approval",
        "async_transform_context",
        "convert_to_llm",
        "cost",
        "deps",
        "follow_up_mode",
        "get_api_key",
        "instrumentation",
        "last_error",
        "max_concurrent_tools",
        "model",
        "name",
        "on_message",
        "output_retries",
        "output_type",
        "plan_mode",
        "raise_on_error",
        "pre_dispatch_policies",
        "retry_strategy",
        "session",
        "steering_interrupt",
        "steering_mode",
        "stream_fn",
        "stream_options",
        "system_prompt",
        "tool_execution",
        "tool_timeout",
        "transform_context",
        "usage",
    )

    # Made at their first read: the run reads the slots (``None``: none), not these.
    pre_turn_policies: _ListMadeWhenRead[PreTurnPolicy] = _ListMadeWhenRead()
    post_turn_policies: _ListMadeWhenRead[PostTurnPolicy] = _ListMadeWhenRead()
    post_loop_policies: _ListMadeWhenRead[PostLoopPolicy] = _ListMadeWhenRead()
    toolsets: _ListMadeWhenRead[Toolset] = _ListMadeWhenRead()

    def __init__(
        self,
        *,
        model: str | ModelSpec,
        stream_fn: StreamFn | None = None,
        name: str = "agent",
        system_prompt: SystemPrompt = "",
        tools: Iterable[AgentTool] = (),
        toolsets: Iterable[Toolset] = (),
        messages: Iterable[AgentMessage] = (),
        deps: Any = None,
        output_type: type[OutputT] | dict[str, Any] | None = None,
        output_retries: int = 2,
        raise_on_error: bool = True,
        stream_options: StreamOptions | None = None,
        convert_to_llm: ConvertToLlm = default_convert_to_llm,
        transform_context: Transform | None = None,
        async_transform_context: AsyncTransform | None = None,
        steering_mode: QueueMode = "one_at_a_time",
        steering_interrupt: SteeringInterrupt = "now",
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
        instrumentation: Instrumentation | None = None,
    ) -> None:
        check_output_type(output_type)
        spec, provider = _resolve(model, stream_fn)
        self.name = name
        self.stream_fn: StreamFn = provider
        self.stream_options = stream_options or StreamOptions()
        self.deps = deps
        self.output_type = output_type
        self.output_retries = output_retries
        self.raise_on_error = raise_on_error
        self.convert_to_llm = convert_to_llm
        self.transform_context = transform_context
        self.async_transform_context = async_transform_context
        self.steering_mode: QueueMode = steering_mode
        self.steering_interrupt: SteeringInterrupt = steering_interrupt
        self.follow_up_mode: QueueMode = follow_up_mode
        self.get_api_key = get_api_key
        self.retry_strategy: RetryStrategy = retry_strategy or ExponentialBackoff()
        self._pre_turn_policies: list[PreTurnPolicy] | None = list(pre_turn_policies) or None
        # Made now, even empty: every run's config shares this list, as it always has.
        self.pre_dispatch_policies = list(pre_dispatch_policies)
        self._post_turn_policies: list[PostTurnPolicy] | None = list(post_turn_policies) or None
        self._post_loop_policies: list[PostLoopPolicy] | None = list(post_loop_policies) or None
        self.approval = approval
        self.tool_execution: ToolExecution = tool_execution
        self.max_concurrent_tools = max_concurrent_tools
        self.tool_timeout = tool_timeout
        self.on_message = on_message
        self.session = session
        self.instrumentation = instrumentation
        self._toolsets: list[Toolset] | None = list(toolsets) or None
        self._initial = (system_prompt, spec, provider, tuple(tools), tuple(messages))
        self._lock = threading.Lock()
        self._subscribers = {}
        self._subscriber_list = ()
        self._subscriber_callbacks = ()
        self._next_handle = 0
        self._running = False
        self._idle = None
        self._scope = None
        self._token = None
        self._loop_thread = None
        self._run = None
        self._pause_requested = False
        self._pauser = None  # made at the first pause asked for (``pause_nowait``)
        self._set_initial_state()

    def _set_initial_state(self) -> None:
        system_prompt, model, stream_fn, tools, messages = self._initial
        self.system_prompt: SystemPrompt = system_prompt
        self.model: ModelSpec = model
        self.stream_fn = stream_fn
        self._tools: dict[str, AgentTool] = {t.name: t for t in tools}
        self._tool_index = None
        self._messages: list[AgentMessage] = list(messages)
        self._history = None
        # Queues stay short: lists cost less than deques. Made at the first message queued.
        self._steering: list[AgentMessage] | None = None
        self._follow_up: list[AgentMessage] | None = None
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
        """Whether a run is in progress (``prompt``, ``stream`` or ``continue_run``)."""
        return self._running

    @property
    def running_tool_calls(self) -> set[str]:
        """The ids of the tool calls running now: started, and not yet ended."""
        run = self._run
        batch = run.batch if run is not None else None
        if batch is None:
            return set()
        return {slot.call.id for slot in batch.slots if slot.started and not slot.ended}

    @property
    def streaming_message(self) -> AssistantMessage | None:
        """The assistant's answer as far as it has streamed, while it streams."""
        run = self._run
        acc = run.acc if run is not None else None
        return acc.snapshot() if acc is not None else None

    def set_system_prompt(self, prompt: SystemPrompt) -> None:
        """Use ``prompt`` from the next turn on (text, or a function called every turn)."""
        self.system_prompt = prompt

    def set_model(self, model: str | ModelSpec) -> None:
        """Use another model: a ``ModelSpec`` (same provider object), or a model string (its
        provider too).

        Raises:
            UnknownModel: a model string no installed provider resolves.
        """
        if isinstance(model, str):
            resolved = resolve_model(model)
            self.model, self.stream_fn = resolved.spec, resolved.stream_fn
        else:
            self.model = model

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        """Ask the model for this much reasoning from the next call on (each provider maps the
        level to its API: a token budget, an effort, on or off).
        """
        self.model = msgspec.structs.replace(self.model, thinking_level=level)

    def set_tools(self, tools: Iterable[AgentTool]) -> None:
        """Replace every registered tool with ``tools``."""
        self._tools = {t.name: t for t in tools}
        self._tool_index = None

    def add_tool(self, tool: AgentTool) -> None:
        """Register ``tool``, replacing any tool of the same name."""
        self._tools[tool.name] = tool
        self._tool_index = None

    def remove_tool(self, name: str) -> bool:
        """Unregister the tool called ``name``; returns whether there was one."""
        self._tool_index = None
        return self._tools.pop(name, None) is not None

    def replace_messages(self, messages: Iterable[AgentMessage]) -> None:
        """Make ``messages`` the whole history (not while a run is in progress)."""
        self._messages = list(messages)
        self._history = None

    def append_messages(self, messages: Iterable[AgentMessage]) -> None:
        """Add ``messages`` at the end of the history, as they are (no model call)."""
        if self._history is not None:
            self._history.extend(messages)
        else:
            self._messages.extend(messages)

    def clear_messages(self) -> None:
        """Forget the whole history."""
        self._messages = []
        self._history = None

    def set_plan_mode(self, enabled: bool) -> None:
        """Plan mode offers the model only read-only tools and asks it for a plan."""
        self.plan_mode = enabled

    # ---------------------------------------------------------------- the loop's configuration

    def _config(
        self,
        *,
        tools: Sequence[AgentTool],
        toolsets: Sequence[Toolset],
        system_prompt: Callable[[], str | Awaitable[str]] | None,
        extra_pre_turn: Sequence[PreTurnPolicy],
        extra_post_turn: Sequence[PostTurnPolicy],
        extra_post_loop: Sequence[PostLoopPolicy],
        turn_options: Any,
        approval: ApprovalCallback | None,
    ) -> AgentLoopConfig:
        return AgentLoopConfig(
            model=self.model,
            stream_fn=self.stream_fn,
            stream_options=self.stream_options,
            tools=tools,
            retry_strategy=self.retry_strategy,
            convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context,
            async_transform_context=self.async_transform_context,
            get_api_key=self.get_api_key,
            get_steering_messages=QueuePoll(self, steering=True),
            steering_interrupt=self.steering_interrupt,
            get_follow_up_messages=QueuePoll(self, steering=False),
            # Tuples: with no policies, the one empty tuple (a run allocates nothing for them).
            pre_turn_policies=(*(self._pre_turn_policies or ()), *extra_pre_turn),
            pre_dispatch_policies=self.pre_dispatch_policies,
            # The agent's pause policy joins only once a pause is asked (``pause_nowait``):
            # until then no turn pays for evaluating it.
            post_turn_policies=[
                *(self._post_turn_policies or ()),
                *extra_post_turn,
                *((self._pauser,) if self._pauser is not None and self._pause_requested else ()),
            ],
            post_loop_policies=(*(self._post_loop_policies or ()), *extra_post_loop),
            approval=approval,
            tool_execution=self.tool_execution,
            max_concurrent_tools=self.max_concurrent_tools,
            tool_timeout=self.tool_timeout,
            system_prompt=system_prompt,
            toolsets=toolsets,
            deps=self.deps,
            agent_name=self.name,
            turn_options=turn_options,
            instrumentation=self.instrumentation,
            conversation_id=self.session.session_id if self.session is not None else None,
        )

    def _output_spec(self, output_type: Any) -> OutputSpec[Any] | None:
        wanted = self.output_type if output_type is None else output_type
        if wanted is None or wanted is str:
            return None  # plain text: the final answer's text is the output
        if output_type is not None:
            check_output_type(output_type)
        return OutputSpec(wanted, max_retries=self.output_retries)

    # ---------------------------------------------------------------- prompting

    @staticmethod
    def _prompts(input: AgentInput, images: Sequence[Image] | None) -> list[AgentMessage]:  # noqa: A002
        if isinstance(input, str):
            return [UserMessage.from_text(input, images=list(images) if images else None)]
        if images:
            raise TypeError("images can only be given with a text prompt")
        if isinstance(input, list | tuple):
            return list(input)
        assert not isinstance(input, Sequence)
        return [input]

    @overload
    def stream(
        self, input: AgentInput, *, images: Sequence[Image] | None = None
    ) -> AgentStream[OutputT]: ...
    @overload
    def stream(
        self, input: AgentInput, *, images: Sequence[Image] | None = None, output_type: type[U]
    ) -> AgentStream[U]: ...
    def stream(
        self,
        input: AgentInput,  # noqa: A002
        *,
        images: Sequence[Image] | None = None,
        output_type: Any = None,
    ) -> AgentStream[Any]:
        """Run a prompt; use as ``async with agent.stream("...") as events: async for ...``.

        Raises:
            AlreadyRunning: on entering, if a run is active.
        """
        prompts = self._prompts(input, images)
        return AgentStream(self, lambda: prompts, self._output_spec(output_type))

    @overload
    async def prompt(
        self,
        input: AgentInput,
        *,
        images: Sequence[Image] | None = None,
        raise_on_error: bool | None = None,
    ) -> AgentResult[OutputT]: ...
    @overload
    async def prompt(
        self,
        input: AgentInput,
        *,
        images: Sequence[Image] | None = None,
        output_type: type[U],
        raise_on_error: bool | None = None,
    ) -> AgentResult[U]: ...
    async def prompt(
        self,
        input: AgentInput,  # noqa: A002
        *,
        images: Sequence[Image] | None = None,
        output_type: Any = None,
        raise_on_error: bool | None = None,
    ) -> AgentResult[Any]:
        """Run a prompt (text, text with images, or messages) to the end.

        A run that fails raises its typed error, which carries the run's result as
        ``.result``; with ``raise_on_error=False`` (here or on the agent) the failed result is
        returned instead, and reading its ``output`` raises that error. With typed output
        (``output_type`` here or on the agent) the result's ``output`` is a validated value of
        that type.

        Raises:
            AlreadyRunning: a run is active.
            ModelError: the model failed (after the retries): ``StreamError`` (its ``kind``
                says ``auth``, ``content_filtered``...), ``NetworkError``, ``ModelThrottled``,
                ``ContextWindowOverflow``.
            HookFailed: application code the loop calls raised.
            Aborted: the run was aborted.
            StructuredOutputFailed: typed output still invalid after the retries.
        """
        spec = self._output_spec(output_type)
        result = await self._execute(self._prompts(input, images), spec)
        return self._finish(result, spec, raise_on_error)

    def _finish(
        self, result: AgentResult[Any], spec: OutputSpec[Any] | None, raise_on_error: bool | None
    ) -> AgentResult[Any]:
        if spec is not None:
            result = spec.finish(result)
        if self.raise_on_error if raise_on_error is None else raise_on_error:
            result.raise_for_error()
        return result

    @overload
    def prompt_sync(
        self,
        input: AgentInput,
        *,
        images: Sequence[Image] | None = None,
        backend: str = "asyncio",
        raise_on_error: bool | None = None,
    ) -> AgentResult[OutputT]: ...
    @overload
    def prompt_sync(
        self,
        input: AgentInput,
        *,
        images: Sequence[Image] | None = None,
        backend: str = "asyncio",
        output_type: type[U],
        raise_on_error: bool | None = None,
    ) -> AgentResult[U]: ...
    def prompt_sync(
        self,
        input: AgentInput,  # noqa: A002
        *,
        images: Sequence[Image] | None = None,
        backend: str = "asyncio",
        output_type: Any = None,
        raise_on_error: bool | None = None,
    ) -> AgentResult[Any]:
        """``prompt`` on a fresh event loop of ``backend`` ("asyncio" or "trio"), blocking.

        Raises:
            RuntimeError: called from inside a running event loop (use ``await prompt()``).
            MissingExtra: ``backend="trio"`` without trio installed (the ``[trio]`` extra).
            AgentError: as ``prompt`` (``AlreadyRunning``, and for a run that failed its typed
                error, unless ``raise_on_error=False``).
        """
        ensure_no_event_loop("prompt_sync", "prompt")
        call = functools.partial(
            self.prompt,
            input,
            images=images,
            output_type=output_type,
            raise_on_error=raise_on_error,
        )
        result: AgentResult[Any] = run_on_backend(self._on_own_loop, call, backend=backend)
        return result

    async def _on_own_loop(self, call: Callable[[], Awaitable[U]]) -> U:
        """Run ``call`` on an event loop of the blocking forms' own, then close what the
        provider opened on it (an HTTP client belongs to the loop that opened it)."""
        try:
            return await call()
        finally:
            aclose = getattr(self.stream_fn, "aclose", None)
            if aclose is not None:
                with anyio.move_on_after(10, shield=True):
                    await aclose()

    # ---------------------------------------------------------------- continuing

    def _check_continue(self) -> None:
        if not self._messages:
            if self.has_queued_messages():
                return
            raise NoMessages("cannot continue: the history is empty and nothing is queued")
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
        last = self._messages[-1] if self._messages else None
        if last is None or (isinstance(last, AssistantMessage) and not is_failed_answer(last)):
            queued = self._take(steering=True) or self._take(steering=False)
            if not queued:
                if last is None:
                    raise NoMessages("cannot continue: the history is empty and nothing is queued")
                raise InvalidContinue(
                    "cannot continue: the last message is the assistant's and nothing is queued"
                )
            return queued
        return []

    def continue_stream(self, *, output_type: Any = None) -> AgentStream[Any]:
        """Continue from the history, as an event stream (see ``continue_run``).

        Raises:
            NoMessages: the history is empty (checked again on entering).
            InvalidContinue: nothing to continue from (checked again on entering).
            AlreadyRunning: on entering, if a run is active (no queued message is taken).
        """
        self._check_continue()
        return AgentStream(self, self._continue_prompts, self._output_spec(output_type))

    @overload
    async def continue_run(self, *, raise_on_error: bool | None = None) -> AgentResult[OutputT]: ...
    @overload
    async def continue_run(
        self, *, output_type: type[U], raise_on_error: bool | None = None
    ) -> AgentResult[U]: ...
    async def continue_run(
        self, *, output_type: Any = None, raise_on_error: bool | None = None
    ) -> AgentResult[Any]:
        """Continue from the history (or from queued messages, when it is empty): after a tool
        result, a user message, queued messages, or a failed answer (which is retried; after a
        context overflow with the overflow signal set, so the transformers prune harder).

        A run that fails raises as ``prompt`` does, unless ``raise_on_error=False``.

        Raises:
            NoMessages: the history is empty and nothing is queued.
            InvalidContinue: the last message is the assistant's answer and nothing is queued.
            AlreadyRunning: a run is active.
            AgentError: the run failed, as ``prompt``.
        """
        if self._running:
            raise AlreadyRunning("the agent is already running")
        spec = self._output_spec(output_type)
        result = await self._execute(self._continue_prompts(), spec)
        return self._finish(result, spec, raise_on_error)

    def continue_run_sync(
        self, *, backend: str = "asyncio", raise_on_error: bool | None = None
    ) -> AgentResult[OutputT]:
        """``continue_run`` on a fresh event loop, blocking.

        Raises:
            RuntimeError: called from inside a running event loop.
            MissingExtra: ``backend="trio"`` without trio installed (the ``[trio]`` extra).
            AgentError: as ``continue_run``.
        """
        ensure_no_event_loop("continue_run_sync", "continue_run")
        call = functools.partial(self.continue_run, raise_on_error=raise_on_error)
        result: AgentResult[OutputT] = run_on_backend(self._on_own_loop, call, backend=backend)
        return result

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
            pass

    async def wait_idle(self) -> None:
        """Return once no run is active."""
        if not self._running:
            return
        idle = self._idle
        if idle is None:
            idle = self._idle = anyio.Event()  # made only when someone waits
        await idle.wait()

    def reset(self) -> None:
        """Restore the initial state: history, tools, queues, model, prompt, usage.

        Raises:
            AlreadyRunning: a run is active.
        """
        if self._running:
            raise AlreadyRunning("cannot reset a running agent")
        self._set_initial_state()

    @contextlib.contextmanager
    def override(
        self,
        *,
        model: str | ModelSpec | None = None,
        stream_fn: StreamFn | None = None,
        tools: Iterable[AgentTool] | None = None,
        deps: Any = _KEEP,
    ) -> Iterator[Self]:
        """Use another model, provider, tools or deps inside a ``with`` block, then put the
        agent's own back, whatever happens in the block.

        Made for tests of an application's existing agent: point it at a scripted model
        without editing the code that built it, and without registering a provider for the
        whole process::

            with support_agent.override(stream_fn=ScriptedStream([reply_text("hi")])):
                result = await support_agent.prompt("hello")

        ``stream_fn`` alone keeps the model's spec (its name, context window and prices); a
        model string alone resolves its provider as ``Agent(model=...)`` does. Overrides do not
        nest across tasks: one agent, one override at a time.

        Raises:
            AlreadyRunning: a run is active (on entering).
            UnknownModel: a model string no installed provider resolves.
        """
        if self._running:
            raise AlreadyRunning("cannot override a running agent")
        saved = (self.model, self.stream_fn, self._tools, self._tool_index, self.deps)
        try:
            if model is not None or stream_fn is not None:
                if model is None:
                    self.stream_fn = stream_fn  # type: ignore[assignment]
                else:
                    self.model, self.stream_fn = _resolve(model, stream_fn)
            if tools is not None:
                self.set_tools(tools)
            if deps is not _KEEP:
                self.deps = deps
            yield self
        finally:
            (self.model, self.stream_fn, self._tools, self._tool_index, self.deps) = saved

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
        system_prompt = self.system_prompt if isinstance(self.system_prompt, str) else ""
        done = compact_messages(
            self._messages, max_tokens=max_tokens, model=self.model, system_prompt=system_prompt
        )
        if done.dropped:
            self._messages = list(done.messages)
            self._history = None
            self._notify(
                ContextCompacted(
                    report=(
                        f"dropped {done.dropped} messages "
                        f"({done.tokens_before} -> {done.tokens_after} estimated tokens)"
                    ),
                    dropped=done.dropped,
                )
            )
        return done

    def as_tool(self, *, name: str | None = None, description: str, **options: Any) -> SubAgentTool:
        """This agent as a tool another agent calls with a task (see ``multi.SubAgentTool``).

        One call at a time; for calls that overlap, give ``SubAgentTool`` a factory instead.
        """
        from ._subagent import SubAgentTool

        return SubAgentTool(self, name=name or self.name, description=description, **options)

    @classmethod
    async def from_session(
        cls,
        store: SessionStore,
        session_id: str,
        *,
        model: str | ModelSpec,
        stream_fn: StreamFn | None = None,
        **options: Any,
    ) -> Agent[Any]:
        """An agent continuing a stored session, recording into it from then on.

        The stored history is repaired on load: a tool call the previous process never
        answered (it was killed mid-run) gets an error result, so the history is well paired.
        ``options`` are the constructor's other arguments.

        Raises:
            SessionNotFound: no such session.
        """
        from ._session_recorder import SessionRecorder
        from ._session_resume import load_session

        messages = await load_session(store, session_id)
        return cls(
            model=model,
            stream_fn=stream_fn,
            messages=messages,
            session=SessionRecorder(store, session_id),
            **options,
        )

    @classmethod
    def from_checkpoint(
        cls,
        checkpoint: Checkpoint,
        *,
        tools: Iterable[AgentTool] = (),
        stream_fn: StreamFn | None = None,
        **options: Any,
    ) -> Agent[Any]:
        """Rebuild an agent from ``checkpoint``; ``tools`` must provide every tool it names.

        The checkpoint becomes the new agent's initial state for history, model and prompt:
        ``reset()`` returns to it (with empty queues and zero usage), not to an empty agent.
        Without a ``stream_fn`` the provider is found from the checkpoint's model, as for a
        model string.

        Raises:
            ValueError: a tool the checkpoint names is missing from ``tools``.
            UnknownModel: no ``stream_fn`` and no installed provider for the model.
        """
        by_name = {t.name: t for t in tools}
        missing = [name for name in checkpoint.tool_names if name not in by_name]
        if missing:
            raise ValueError(f"from_checkpoint needs these tools: {', '.join(missing)}")
        if stream_fn is None:
            model = checkpoint.model
            stream_fn = resolve_model(f"{model.provider}:{model.model_id}").stream_fn
        options.setdefault("system_prompt", checkpoint.system_prompt)
        agent = cls(
            model=checkpoint.model,
            stream_fn=stream_fn,
            tools=[by_name[name] for name in checkpoint.tool_names],
            messages=checkpoint.messages,
            **options,
        )
        agent._steering = list(checkpoint.steering) or None
        agent._follow_up = list(checkpoint.follow_up) or None
        agent.usage = checkpoint.usage
        agent.cost = checkpoint.cost
        agent.plan_mode = checkpoint.plan_mode
        return agent
