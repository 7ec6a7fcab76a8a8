"""The status bar's data: model, tokens, cost, run state, mode, and the context gauge.

The gauge shows how full the model's context window is, estimated with the same estimator the
sliding window uses (``agentloop.context.estimate_tokens``'s counter), relative to the model's
``context_window``: green under 60 %, yellow from 60 to 85 %, red past 85 %. It is updated once
per turn, not per delta, so it does not flicker; ``ContextGauge`` counts each message once, as
it is committed, rather than walking the whole history every turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

from agentloop import AssistantMessage, Cost, Usage
from agentloop.context import EstimatingCounter

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentloop import AgentMessage
    from agentloop.abc import TokenCounter

__all__ = ["GAUGE_RED", "GAUGE_YELLOW", "ContextGauge", "GaugeColour", "RunState", "Status"]

RunState: TypeAlias = Literal["idle", "running", "error", "aborted"]
GaugeColour: TypeAlias = Literal["green", "yellow", "red"]

GAUGE_YELLOW = 0.60
"""From this fill the gauge is yellow."""
GAUGE_RED = 0.85
"""Past this fill the gauge is red."""


def gauge_colour(fraction: float) -> GaugeColour:
    """The gauge's colour at ``fraction`` of the context window."""
    if fraction > GAUGE_RED:
        return "red"
    if fraction >= GAUGE_YELLOW:
        return "yellow"
    return "green"


class ContextGauge:
    """Estimated tokens of the next request, kept up to date message by message.

    Args:
        counter: the token counter (default: the sliding window's ``EstimatingCounter``).
    """

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter: TokenCounter = counter or EstimatingCounter()
        self.tokens = 0
        self._system = ""
        self._system_tokens = 0
        self._counted: list[AgentMessage] = []  # the messages counted, in order
        self._message_tokens = 0

    def update(self, messages: Sequence[AgentMessage], system_prompt: str = "") -> int:
        """Count ``messages`` (the history) and the system prompt; returns the total.

        Only messages added since the last call are counted, as long as the history grew by
        appending; after anything else (a compaction, a reset) it is counted afresh.
        """
        if system_prompt != self._system:
            self._system = system_prompt
            self._system_tokens = self.counter.count_text(system_prompt)
        known = len(self._counted)
        grew = len(messages) >= known and (
            known == 0 or messages[known - 1] is self._counted[known - 1]
        )
        if not grew:
            self._counted, self._message_tokens, known = [], 0, 0
        for message in messages[known:]:
            self._message_tokens += self.counter.count(message)
            self._counted.append(message)
        self.tokens = self._system_tokens + self._message_tokens
        return self.tokens


class Status:
    """What the status bar shows. ``changed`` is set whenever something in it changed.

    Attributes:
        model: ``provider:model-id``.
        usage: tokens used so far in this session.
        cost: what they cost.
        state: ``idle``, ``running``, ``error`` or ``aborted``.
        mode: ``execute`` or ``plan``.
        approval: the approval mode (``enabled``, ``smart``, ``bypassed``).
        context_tokens: estimated tokens of the next request.
        context_window: the model's context window (``None``: unknown, no gauge).
        turn: turns taken by the current run.
    """

    def __init__(self) -> None:
        self.model = ""
        self.usage = Usage()
        self.cost = Cost()
        self.state: RunState = "idle"
        self.mode: Literal["execute", "plan"] = "execute"
        self.approval = "smart"
        self.context_tokens = 0
        self.context_window: int | None = None
        self.turn = 0
        self.thinking = "off"
        self.changed = True

    @property
    def context_fraction(self) -> float | None:
        """How full the context window is (``None`` when its size is unknown)."""
        if not self.context_window:
            return None
        return self.context_tokens / self.context_window

    @property
    def gauge(self) -> GaugeColour | None:
        """The context gauge's colour for how full the window is (``None``: window unknown)."""
        fraction = self.context_fraction
        return None if fraction is None else gauge_colour(fraction)

    def add_usage(self, message: AssistantMessage) -> None:
        """Add an answer's usage and cost to the totals."""
        self.usage = self.usage + message.usage
        self.cost = self.cost + message.cost
        self.changed = True

    def set_context(self, tokens: int, window: int | None) -> None:
        """Say how many tokens the context holds, out of ``window``."""
        self.context_tokens = tokens
        self.context_window = window
        self.changed = True
