"""What crosses Temporal's boundaries: the run's input and output, activity inputs and results.

Every payload is a msgspec struct turned into plain JSON values (``to_payload``), so Temporal's
default converter stores it as readable JSON in the workflow history (``temporal workflow
show`` prints it), and ``from_payload`` decodes it back with ``agentloop.decode``, custom
messages included. API keys never cross: the worker resolves them.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec

from agentloop import (
    AgentMessage,
    AgentResult,
    AgentToolResult,
    Checkpoint,
    Cost,
    ModelSpec,
    StreamOptions,
    ToolCall,
    Usage,
    decode,
    encode,
)
from agentloop.stream import AssistantMessageEvent, LlmContext

from ._records import StreamRecord

__all__ = [
    "DESCRIBE_ACTIVITY",
    "MODEL_ACTIVITY",
    "PUBLISH_ACTIVITY",
    "TOOL_ACTIVITY",
    "WORKFLOW_NAME",
    "Approval",
    "ApprovalMode",
    "CallOptions",
    "ModelCall",
    "ModelReply",
    "PublishInput",
    "RunInput",
    "RunOutput",
    "RunState",
    "ToolCallInput",
    "ToolReply",
    "ToolSpec",
    "from_payload",
    "to_payload",
]

T = TypeVar("T")

# Stable names: a history recorded by one deployment names these, so they never change.
WORKFLOW_NAME = "agentloop.run"
"""The Temporal workflow type of an agent run (``AgentWorkflow``)."""
MODEL_ACTIVITY = "agentloop.model_call"
"""The activity type of one model call."""
TOOL_ACTIVITY = "agentloop.tool_call"
"""The activity type of one tool call."""
DESCRIBE_ACTIVITY = "agentloop.describe_tools"
"""The activity type that tells a workflow the specs of the workers' tools."""
PUBLISH_ACTIVITY = "agentloop.publish"
"""The (local) activity type that hands a workflow's own events to the workers' sink."""

ApprovalMode = Literal["tools", "all", "none"]
QueueMode = Literal["one_at_a_time", "all"]


def to_payload(value: Any) -> Any:
    """``value`` as plain JSON values (dicts, lists, strings, numbers)."""
    return msgspec.json.decode(encode(value))


def from_payload(data: Any, type: type[T]) -> T:  # noqa: A002
    """Decode what ``to_payload`` made (custom messages included)."""
    return decode(msgspec.json.encode(data), type)


class CallOptions(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Timeouts and retries of one kind of activity (model calls or tool calls), in seconds.

    Attributes:
        start_to_close: how long one attempt may run.
        heartbeat: an attempt that has not heartbeaten for this long is considered lost (its
            worker crashed) and is tried again; the activities heartbeat several times within it.
        max_attempts: attempts in all (``0``: unlimited).
        initial_interval: seconds before the second attempt.
        backoff: what each further wait is multiplied by.
        max_interval: the longest wait between attempts.
    """

    start_to_close: float = 600.0
    heartbeat: float = 30.0
    max_attempts: int = 5
    initial_interval: float = 1.0
    backoff: float = 2.0
    max_interval: float = 60.0


MODEL_CALLS = CallOptions()
# A tool that fails returns an error result (data); only a lost worker or a timeout makes its
# activity fail, so few attempts are needed.
TOOL_CALLS = CallOptions(max_attempts=3)


class RunInput(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The input of one agent run on Temporal (one workflow execution).

    Attributes:
        conversation_id: what the workflow id is derived from.
        checkpoint: the state the run starts from (``Agent.checkpoint()``, or the previous run's).
        prompts: the new messages of this run.
        stream_fn: the name of the ``StreamFn`` registered on the workers.
        tools: the names of the workers' tools the model may call; ``None``: the checkpoint's
            tools, or every tool the workers register when it names none.
        stream_options: the provider options (never an API key: workers resolve keys).
        approval: which calls wait for a human's approval: ``"tools"`` those whose tool sets
            ``requires_approval``, ``"all"`` every call, ``"none"`` none.
        approval_timeout: seconds after which an unanswered approval is rejected (``None``:
            wait as long as it takes).
        steering_mode: as ``Agent``'s.
        follow_up_mode: as ``Agent``'s.
        tool_execution: ``"concurrent"`` or ``"sequential"``.
        max_concurrent_tools: at most this many tool activities at once.
        model_calls: timeouts and retries of the model-call activities.
        tool_calls: timeouts and retries of the tool-call activities.
        publish: whether the run's events are published to the workers' event sink.
        agent_name: the agent's name in events.
    """

    conversation_id: str
    checkpoint: Checkpoint
    prompts: list[AgentMessage] = msgspec.field(default_factory=list)
    stream_fn: str = "default"
    tools: list[str] | None = None
    stream_options: StreamOptions = msgspec.field(default_factory=StreamOptions)
    approval: ApprovalMode = "tools"
    approval_timeout: float | None = None
    steering_mode: QueueMode = "one_at_a_time"
    follow_up_mode: QueueMode = "one_at_a_time"
    tool_execution: Literal["concurrent", "sequential"] = "concurrent"
    max_concurrent_tools: int | None = None
    model_calls: CallOptions = MODEL_CALLS
    tool_calls: CallOptions = TOOL_CALLS
    publish: bool = True
    agent_name: str = "agent"


class RunOutput(msgspec.Struct, frozen=True, kw_only=True):
    """What a run returns: its result, and the checkpoint the conversation continues from."""

    result: AgentResult[str]
    checkpoint: Checkpoint


class RunState(msgspec.Struct, frozen=True, kw_only=True):
    """A running run's state, as the ``state`` query answers it.

    Attributes:
        status: ``"running"`` or ``"finished"``.
        turn: the current turn's index.
        messages: how many messages the history holds.
        usage: summed over the run's answers so far.
        cost: summed over the run's answers so far.
        steering: the queued steering messages not yet taken.
        follow_up: the queued follow-up messages not yet taken.
        pending_approvals: the calls waiting for an answer.
    """

    status: Literal["running", "finished"]
    turn: int
    messages: int
    usage: Usage
    cost: Cost
    steering: list[AgentMessage]
    follow_up: list[AgentMessage]
    pending_approvals: list[ToolCall]


class Approval(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A human's answer about one tool call (the ``approve`` update's argument).

    ``arguments``, when set on an approval, replaces the call's arguments (``ApprovedWith``).
    """

    call_id: str
    approved: bool
    reason: str = ""
    arguments: Any = msgspec.UNSET


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A worker's tool as the workflow knows it: what the model is shown, and its approval flag."""

    name: str
    description: str = ""
    label: str = ""
    parameters: dict[str, Any] = msgspec.field(default_factory=dict)
    requires_approval: bool = False
    read_only: bool = False


class ModelCall(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One model call: the input of the model activity.

    ``key`` names the call within its run (``model-3``); a stream consumer groups the events of
    one call's attempts by it.
    """

    key: str
    stream_fn: str
    model: ModelSpec
    context: LlmContext
    options: StreamOptions
    publish: bool = True


class ModelReply(msgspec.Struct, frozen=True, kw_only=True):
    """What the model activity returns: the provider's events, consecutive deltas merged."""

    events: list[AssistantMessageEvent]


class ToolCallInput(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One tool call: the input of the tool activity."""

    call: ToolCall
    publish: bool = True


class ToolReply(msgspec.Struct, frozen=True, kw_only=True):
    """What the tool activity returns: the call's result (an error result when the tool
    failed), and what the call spent on models (its sub-agents' calls), so a durable run's
    usage and cost count them as an in-process run's do. Histories from before these fields
    decode with nothing spent."""

    result: AgentToolResult
    usage: Usage = msgspec.field(default_factory=Usage)
    cost: Cost = msgspec.field(default_factory=Cost)


class PublishInput(msgspec.Struct, frozen=True, kw_only=True):
    """The workflow's own events, for the publish activity to hand to the sink."""

    records: list[StreamRecord]
