"""``AgentLoopConfig``: everything a loop run needs besides its context."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ._retry import ExponentialBackoff
from ._types import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    LlmMessage,
    ModelSpec,
    StopReason,
    StreamOptions,
    ToolCall,
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
        StreamFn,
        Toolset,
    )
    from ._events import AgentEvent
    from ._policy import PolicyContext

__all__ = [
    "AgentLoopConfig",
    "ConvertToLlm",
    "MessageSource",
    "SteeringInterrupt",
    "ToolExecution",
    "TransformContext",
    "default_convert_to_llm",
]


class TransformContext:
    """What a context transformer is told about the request it shapes.

    Attributes:
        overflow: the previous attempt of this turn overflowed the context window; prune harder.
        model: the model the request is for.
        turn: the turn's index in the run.
        system_prompt: the system prompt of this turn (it shares the context window).
    """

    __slots__ = ("_emit", "model", "overflow", "system_prompt", "turn")

    def __init__(
        self,
        *,
        overflow: bool,
        model: ModelSpec,
        turn: int,
        emit: Callable[[AgentEvent], None],
        system_prompt: str = "",
    ) -> None:
        self.overflow = overflow
        self.model = model
        self.turn = turn
        self.system_prompt = system_prompt
        self._emit = emit

    def report(self, report: str, *, dropped: int = 0, details: Any = None) -> None:
        """Emit a ``ContextCompacted`` event saying what the transformer did."""
        from ._events import ContextCompacted

        self._emit(ContextCompacted(report=report, dropped=dropped, details=details))


ConvertToLlm: TypeAlias = Callable[[AgentMessage], LlmMessage | None]
"""Maps a message of the history to what the model sees, or ``None`` to leave it out."""
Transform: TypeAlias = Callable[[list[AgentMessage], TransformContext], list[AgentMessage]]
"""Shapes the messages of each request (trims, summarises); returns a new list."""
AsyncTransform: TypeAlias = Callable[
    [list[AgentMessage], TransformContext], Awaitable[list[AgentMessage]]
]
"""A ``Transform`` that awaits (a summariser calling a model, say)."""
MessageSource: TypeAlias = Callable[[], Awaitable[Sequence[AgentMessage]]]
"""Gives the messages waiting in a queue (steering, follow-ups), taking them; may give none."""
SteeringInterrupt: TypeAlias = Literal["now", "after_call"]
"""When steering cuts into a running batch: ``"now"`` or ``"after_call"`` (a call ends)."""
ToolExecution: TypeAlias = (
    Literal["concurrent", "sequential"] | Callable[[Sequence[ToolCall]], Sequence[Sequence[int]]]
)
"""How a batch of calls runs: all at once, one by one, or in groups of indexes (a function)."""


def default_convert_to_llm(message: AgentMessage) -> LlmMessage | None:
    """Pass LLM messages through; drop custom ones and failed answers.

    A failed answer (an assistant message with stop reason ``error``) is the record of a model
    call that did not work; the loop never sends one back to a model, whatever the converter.
    """
    if isinstance(message, CustomMessage):
        return None
    if type(message) is AssistantMessage and message.stop_reason is StopReason.ERROR:
        return None
    return message


_DEFAULT_OPTIONS = StreamOptions()
_DEFAULT_RETRY = ExponentialBackoff()


@dataclasses.dataclass(kw_only=True, slots=True)
class AgentLoopConfig:
    """Configuration of a loop run.

    Attributes:
        model: the model to call.
        stream_fn: the provider.
        stream_options: per-call options (the API key is filled in per call).
        tools: the tools the model may call (``AgentContext.tools`` is used when empty).
        retry_strategy: decides retries of failed model calls.
        convert_to_llm: maps each message to what the model sees (``None`` drops it).
        transform_context: synchronous hook shaping the messages of each request; it must
            return a list and not mutate its input.
        async_transform_context: the same, asynchronous; runs before the synchronous one.
        get_api_key: resolves the API key for a provider name before every model call.
        get_steering_messages: polled after each tool completes and after each turn; with
            ``steering_interrupt="now"`` also when a batch starts and as soon as the run is
            told a message arrived (``Agent.steer`` tells it; so does
            ``EventStream.steering_arrived()``).
        steering_interrupt: when steering cuts into a running tool batch. ``"now"`` (the
            default): at once, the running calls cancelled through their own cancel scopes
            (a batch that starts with steering waiting runs none of its calls).
            ``"after_call"``: when a running call ends, the others are cancelled (a lone slow
            call runs to its end first).
        get_follow_up_messages: polled when the run would otherwise end.
        pre_turn_policies: checked before each model call (see ``agentloop.policy``).
        pre_dispatch_policies: checked for each tool call before it runs.
        post_turn_policies: checked after each turn.
        post_loop_policies: checked when the run would end.
        approval: asked about each tool call that passed the pre-dispatch policies.
        tool_execution: ``"concurrent"`` (default), ``"sequential"``, or a function that
            partitions a batch (by index) into groups run one after another.
        max_concurrent_tools: at most this many tools run at once.
        tool_timeout: seconds a tool may run before its call ends as an error.
        system_prompt: a callable computing the system prompt once per turn (sync or async).
        toolsets: sources of tools that may change during a run (an MCP server, say): each
            toolset's ``get_tools()`` is read at the start of every turn.
        deps: what tools reach as ``ToolContext.deps`` (clients, connections, settings).
        agent_name: the name of the agent running (a sub-agent's events carry it in their path).
        turn_options: called before each model call with the turn's policy context and the
            options the call would use; what it returns is used for that call (to force a
            tool with ``tool_choice`` on one turn, say).
        instrumentation: observes the run, its model calls and its tool calls (OpenTelemetry
            with ``agentloop_otel``); see ``agentloop.abc.Instrumentation``. A run without one
            uses the instrumentation of the run it is nested in, if any.
        conversation_id: what the instrumentation reports as the run's conversation (an
            ``Agent`` with a session gives the session's id).
    """

    model: ModelSpec
    stream_fn: StreamFn
    stream_options: StreamOptions = _DEFAULT_OPTIONS
    tools: Sequence[AgentTool] = ()
    retry_strategy: RetryStrategy = _DEFAULT_RETRY
    convert_to_llm: ConvertToLlm = default_convert_to_llm
    transform_context: Transform | None = None
    async_transform_context: AsyncTransform | None = None
    get_api_key: Callable[[str], Awaitable[str | None]] | None = None
    get_steering_messages: MessageSource | None = None
    steering_interrupt: SteeringInterrupt = "now"
    get_follow_up_messages: MessageSource | None = None
    pre_turn_policies: Sequence[PreTurnPolicy] = ()
    pre_dispatch_policies: Sequence[PreDispatchPolicy] = ()
    post_turn_policies: Sequence[PostTurnPolicy] = ()
    post_loop_policies: Sequence[PostLoopPolicy] = ()
    approval: ApprovalCallback | None = None
    tool_execution: ToolExecution = "concurrent"
    max_concurrent_tools: int | None = None
    tool_timeout: float | None = None
    system_prompt: Callable[[], str | Awaitable[str]] | None = None
    toolsets: Sequence[Toolset] = ()
    deps: Any = None
    agent_name: str = "agent"
    turn_options: Callable[[PolicyContext, StreamOptions], StreamOptions] | None = None
    instrumentation: Instrumentation | None = None
    conversation_id: str | None = None
