"""The lifecycle events a run emits, in this grammar::

    run     := AgentStart turn* AgentEnd
    turn    := TurnStart message* tools? message* TurnEnd
    message := MessageStart MessageUpdate* StreamRetry* MessageEnd
    tools   := (ToolExecutionStart ToolExecutionUpdate* ToolExecutionEnd)*

Every message committed to the context (prompts, steering and follow-up messages, the
assistant's answers, tool results) gets a ``MessageStart``/``MessageEnd`` pair;
``MessageUpdate`` carries the assistant's streamed deltas. ``ContextCompacted`` may appear
anywhere inside a turn.
"""

from __future__ import annotations

import enum
from typing import Any, TypeAlias

import msgspec

from ._stream import AssistantMessageEvent
from ._types import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    Cost,
    ErrorKind,
    StopReason,
    Text,
    ToolResultMessage,
    Usage,
)

__all__ = [
    "AgentEnd",
    "AgentEvent",
    "AgentStart",
    "AgentToolResult",
    "ContextCompacted",
    "DelegationEnd",
    "DelegationStart",
    "Hop",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "StreamRetry",
    "SubAgentEvent",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "TransferInitiated",
    "TransferRejected",
    "TurnEnd",
    "TurnEndReason",
    "TurnStart",
]


class TurnEndReason(enum.StrEnum):
    """Why a turn ended."""

    COMPLETE = "complete"
    TOOLS_EXECUTED = "tools_executed"
    STEERING_INTERRUPT = "steering_interrupt"
    ERROR = "error"
    ABORTED = "aborted"


class AgentToolResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a tool returns: ``content`` for the model, ``details`` for logs and displays."""

    content: list[ContentBlock] = msgspec.field(default_factory=list)
    details: Any = None
    is_error: bool = False

    @classmethod
    def text(cls, text: str, *, details: Any = None, is_error: bool = False) -> AgentToolResult:
        """A result holding one text block."""
        return cls(content=[Text(text=text)], details=details, is_error=is_error)

    @classmethod
    def error(cls, message: str, *, details: Any = None) -> AgentToolResult:
        """An error result the model can read."""
        return cls.text(message, details=details, is_error=True)


class _Ev(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, omit_defaults=True, tag_field="type"
):
    pass


class AgentStart(_Ev, frozen=True, tag="agent_start"):
    """A run begins: the first event of every run, exactly once, whatever happens after."""


class AgentEnd(_Ev, frozen=True, tag="agent_end", gc=True):
    """The run is over; ``messages`` are all the messages it added to the context."""

    messages: list[AgentMessage]


class TurnStart(_Ev, frozen=True, tag="turn_start"):
    """A turn begins: one model call and the tool calls it asks for.

    Attributes:
        turn: the turn's number in the run, from 0.
    """

    turn: int = 0


class TurnEnd(_Ev, frozen=True, tag="turn_end", gc=True):
    """A turn is over. ``message`` is ``None`` when the turn ended before the model answered."""

    reason: TurnEndReason
    message: AssistantMessage | None = None
    tool_results: list[ToolResultMessage] = msgspec.field(default_factory=list)
    turn: int = 0


class MessageStart(_Ev, frozen=True, tag="message_start", gc=True):
    """A message begins. For the assistant's answer this is an empty partial message."""

    message: AgentMessage


class MessageUpdate(_Ev, frozen=True, tag="message_update", gc=True):
    """One streamed piece of the assistant's answer, as the provider sent it."""

    event: AssistantMessageEvent


class MessageEnd(_Ev, frozen=True, tag="message_end", gc=True):
    """A message is complete and committed to the context."""

    message: AgentMessage


class StreamRetry(_Ev, frozen=True, tag="stream_retry"):
    """The model call failed and is being retried after ``delay`` seconds.

    Deltas streamed before the failure are void; the retry streams the answer afresh within the
    same ``MessageStart``/``MessageEnd`` pair.
    """

    attempt: int
    delay: float
    kind: ErrorKind
    message: str


class ToolExecutionStart(_Ev, frozen=True, tag="tool_execution_start", gc=True):
    """A tool call starts running (after validation, policies and approval let it).

    Attributes:
        call_id: the call's id, as the model gave it; its ``ToolExecutionEnd`` has the same.
        name: the tool's name.
        arguments: the arguments the tool gets (decoded JSON).
    """

    call_id: str
    name: str
    arguments: Any = None


class ToolExecutionUpdate(_Ev, frozen=True, tag="tool_execution_update", gc=True):
    """Progress from a running tool."""

    call_id: str
    name: str
    update: AgentToolResult


class ToolExecutionEnd(_Ev, frozen=True, tag="tool_execution_end", gc=True):
    """A tool call is over: exactly one per call, whether it ran, failed, was refused or cancelled.

    Attributes:
        call_id: the call's id, as in its ``ToolExecutionStart``.
        name: the tool's name.
        result: what the model will read.
        is_error: whether ``result`` reports a failure (an exception, a timeout, a refusal, a
            cancellation).
    """

    call_id: str
    name: str
    result: AgentToolResult
    is_error: bool = False


class ContextCompacted(_Ev, frozen=True, tag="context_compacted", gc=True):
    """A context transformer dropped or summarised messages; ``report`` says what."""

    report: str
    dropped: int = 0
    details: Any = None


class SessionWriteFailed(_Ev, frozen=True, tag="session_write_failed"):
    """Committed messages of the run could not all be stored in the agent's session.

    An ``Agent`` notification sent to its subscribers once the run's final flush is over, so it
    comes after the run's ``AgentEnd``; the run's ``AgentResult`` says the same
    (``unsaved_messages``, ``session_error``). Unstored messages stay queued in the recorder
    and are stored by a later run; skipped ones could not be stored in any form.
    """

    error: str
    unstored: int = 0
    skipped: int = 0


# --------------------------------------------------------------------------- agents of agents


class Hop(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One step down a tree of agents: the tool call that started a sub-agent, and its name."""

    call_id: str
    agent: str


class DelegationStart(_Ev, frozen=True, tag="delegation_start", gc=True):
    """A tool started a sub-agent (``agentloop.multi``); ``path`` ends with its ``Hop``."""

    path: list[Hop]
    prompt: str = ""


class DelegationEnd(_Ev, frozen=True, tag="delegation_end", gc=True):
    """A sub-agent's run ended, however it ended: what it said, spent and committed.

    ``usage`` and ``cost`` are the sub-agent's (its own sub-agents' included); they were added
    to the calling run's. ``messages`` is its transcript, kept even when it was cancelled.
    """

    path: list[Hop]
    stop_reason: StopReason
    output: str = ""
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    cost: Cost = msgspec.field(default_factory=Cost)
    messages: list[AgentMessage] = msgspec.field(default_factory=list)


class SubAgentEvent(_Ev, frozen=True, tag="sub_agent", gc=True):
    """An event of a sub-agent's run, relayed live, in order, into the calling run's events.

    ``path`` says whose: ``[Hop(call_id="call_1", agent="researcher")]`` for a sub-agent,
    longer for deeper ones (paths are flattened: ``event`` is never a ``SubAgentEvent``).
    """

    path: list[Hop]
    event: AgentEvent


class TransferInitiated(_Ev, frozen=True, tag="transfer_initiated"):
    """An agent handed the conversation to another (``agentloop.multi.Team``)."""

    source: str
    target: str
    reason: str = ""


class TransferRejected(_Ev, frozen=True, tag="transfer_rejected"):
    """A hand-off was refused (unknown agent, a cycle, too deep); the model was told why."""

    source: str
    target: str
    reason: str = ""


AgentEvent: TypeAlias = (
    AgentStart
    | AgentEnd
    | TurnStart
    | TurnEnd
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | StreamRetry
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
    | ContextCompacted
    | SessionWriteFailed
    | DelegationStart
    | DelegationEnd
    | SubAgentEvent
    | TransferInitiated
    | TransferRejected
)
"""Any event a run emits (a tagged union: ``type`` names the class on the wire)."""
