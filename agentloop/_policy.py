"""Policy hooks: the four slots where an application can steer or stop the loop, and approval.

Policies are synchronous and cheap; each returns a verdict. Every policy sees a read-only view
of the committed context, valid for the duration of the call.

A policy that raises fails closed, since most policies guard something: in the pre-dispatch
slot the call is rejected with an error result naming the policy; in the other slots the run
ends with stop reason ``error`` and a ``HookFailed`` error naming it. A policy that is only a
convenience (an audit log, say) declares ``fail_open = True``: its failures are logged and count
as ``Continue``/``Allow``. Approval fails closed as well: an approval hook that raises rejects.

=============  ===========================================  ================================
slot           when                                         verdicts
=============  ===========================================  ================================
pre-turn       before the model call, after transformers   Continue, Stop, Inject
pre-dispatch   for each tool call, whole batch first        Allow, Skip, Rewrite, Stop
post-turn      at the end of each turn                      Continue, Stop, Inject, Replace
post-loop      when the run would end                       Continue, Stop, Inject
=============  ===========================================  ================================
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, overload

import msgspec

from ._types import (
    AgentMessage,
    AssistantMessage,
    Cost,
    ModelSpec,
    ToolCall,
    ToolResultMessage,
    Usage,
)

if TYPE_CHECKING:
    from ._abc import AgentTool

__all__ = [
    "ALLOW",
    "APPROVED",
    "CONTINUE",
    "Allow",
    "ApprovalDecision",
    "Approved",
    "ApprovedWith",
    "Continue",
    "DispatchContext",
    "DispatchVerdict",
    "Inject",
    "MessagesView",
    "PolicyContext",
    "PolicyVerdict",
    "Rejected",
    "Replace",
    "Rewrite",
    "Skip",
    "Stop",
]


class _Verdict(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="verdict"):
    pass


class Continue(_Verdict, frozen=True, tag="continue"):
    """Carry on."""


class Stop(_Verdict, frozen=True, tag="stop"):
    """End the run (after this turn, for post-turn policies) with ``reason``."""

    reason: str


class Inject(_Verdict, frozen=True, tag="inject", gc=True):
    """Add ``messages`` to the context (pre-turn: before the model call; else: next turn)."""

    messages: list[AgentMessage]


class Replace(_Verdict, frozen=True, tag="replace", gc=True):
    """Post-turn only: replace the turn's tool results before they are committed.

    The replacements must answer the same calls in the same order; the assistant message and
    its tool call blocks are never replaced.
    """

    tool_results: list[ToolResultMessage]


class Allow(_Verdict, frozen=True, tag="allow"):
    """Let the tool call proceed."""


class Skip(_Verdict, frozen=True, tag="skip"):
    """Do not run the call; the model receives an error result with ``reason``."""

    reason: str


class Rewrite(_Verdict, frozen=True, tag="rewrite", gc=True):
    """Run the call with these arguments instead (the policies see the new ones again)."""

    arguments: Any


CONTINUE = Continue()
"""The ``Continue`` verdict, made once: a policy returns it when it has nothing to say."""
ALLOW = Allow()
"""The ``Allow`` verdict, made once: let the tool call proceed."""

PolicyVerdict: TypeAlias = Continue | Stop | Inject | Replace
"""What a pre-turn, post-turn or post-loop policy returns."""
DispatchVerdict: TypeAlias = Allow | Skip | Rewrite | Stop
"""What a pre-dispatch policy returns for one tool call."""


class MessagesView(Sequence[AgentMessage]):
    """A read-only view of a message list, without copying it."""

    __slots__ = ("_items",)

    def __init__(self, items: list[AgentMessage]) -> None:
        self._items = items

    @overload
    def __getitem__(self, index: int) -> AgentMessage: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[AgentMessage]: ...
    def __getitem__(self, index: int | slice) -> AgentMessage | Sequence[AgentMessage]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[AgentMessage]:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"MessagesView({len(self._items)} messages)"


class PolicyContext:
    """What a turn-level policy sees.

    Attributes:
        turn: the turn's index in this run (0-based).
        messages: the committed context (read-only view).
        new_messages: how many messages this run has committed so far.
        usage: the usage summed over this run's assistant messages so far.
        cost: the cost summed over the same messages.
        model: the model in use.
        message: post-turn only, the turn's assistant message (``None`` if there was none).
        tool_results: post-turn only, the turn's tool results (not yet committed).
    """

    __slots__ = (
        "cost",
        "message",
        "messages",
        "model",
        "new_messages",
        "tool_results",
        "turn",
        "usage",
    )

    def __init__(
        self,
        *,
        turn: int,
        messages: MessagesView,
        new_messages: int,
        usage: Usage,
        cost: Cost,
        model: ModelSpec,
        message: AssistantMessage | None = None,
        tool_results: list[ToolResultMessage] | None = None,
    ) -> None:
        self.turn = turn
        self.messages = messages
        self.new_messages = new_messages
        self.usage = usage
        self.cost = cost
        self.model = model
        self.message = message
        self.tool_results = tool_results if tool_results is not None else []


class DispatchContext:
    """What a pre-dispatch policy sees for one tool call.

    Attributes:
        call: the tool call, with its current (possibly rewritten) arguments.
        tool: the tool it names, or ``None`` if there is no such tool.
        batch: every tool call of this turn.
        turn: as in ``PolicyContext``.
        messages: as in ``PolicyContext``.
        model: as in ``PolicyContext``.
    """

    __slots__ = ("batch", "call", "messages", "model", "tool", "turn")

    def __init__(
        self,
        *,
        call: ToolCall,
        tool: AgentTool | None,
        batch: Sequence[ToolCall],
        turn: int,
        messages: MessagesView,
        model: ModelSpec,
    ) -> None:
        self.call = call
        self.tool = tool
        self.batch = batch
        self.turn = turn
        self.messages = messages
        self.model = model


# --------------------------------------------------------------------------- approval


class Approved(_Verdict, frozen=True, tag="approved"):
    """Run the call as it is."""


class Rejected(_Verdict, frozen=True, tag="rejected"):
    """Do not run the call; the model is told ``reason``."""

    reason: str = "the user rejected this tool call"


class ApprovedWith(_Verdict, frozen=True, tag="approved_with", gc=True):
    """Run the call with these arguments (they pass the pre-dispatch policies again)."""

    arguments: Any


APPROVED = Approved()
"""The ``Approved`` decision, made once: run the call as it is."""

ApprovalDecision: TypeAlias = Approved | Rejected | ApprovedWith
"""What an approval callback answers for one tool call."""
