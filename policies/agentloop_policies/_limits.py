"""Run limits: ``MaxTurns`` (how many model calls) and ``Budget`` (how many tokens or how much money).

Both are turn-level policies that look only at the counters the loop keeps in
``PolicyContext``; they hold no state of their own, so one instance may be shared by any number
of runs (an ``Agent`` reuses its policies for every prompt, and each prompt is a new run).

Put them in ``pre_turn_policies``: they then stop the run *before* the model call that would
pass the limit, and the stop is reported in ``AgentResult.stopped_by``. ``Budget`` also works as
a post-turn policy, where it stops the run right after the turn that spent past the limit.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from agentloop.policy import CONTINUE, PolicyVerdict, Stop

if TYPE_CHECKING:
    from agentloop import Usage
    from agentloop.policy import PolicyContext

__all__ = ["Budget", "MaxTurns", "tokens_of"]


def tokens_of(usage: Usage) -> int:
    """The number of tokens ``usage`` counts.

    Providers that report a ``total`` are taken at their word; otherwise the categories
    (input, output, cache reads, cache writes) are summed.
    """
    if usage.total:
        return usage.total
    return usage.input + usage.output + usage.cache_read + usage.cache_write


class MaxTurns:
    """Stop a run before it starts turn number ``max_turns + 1``.

    A turn is one model call and the tools it asked for. ``MaxTurns(3)`` lets the model answer
    three times in a run; before the fourth model call the run stops with the reason
    ``"turn limit reached (3 turns)"``. Counting restarts with every run (every ``prompt`` of an
    ``Agent``).

    Example::

        config = AgentLoopConfig(..., pre_turn_policies=[MaxTurns(10)])

    Args:
        max_turns: how many turns a run may take; at least 1.

    Raises:
        ValueError: ``max_turns`` is smaller than 1.
    """

    __slots__ = ("max_turns",)

    def __init__(self, max_turns: int) -> None:
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError(f"max_turns must be a positive integer, not {max_turns!r}")
        self.max_turns = max_turns

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        """Stop when the run has already taken ``max_turns`` turns."""
        if ctx.turn >= self.max_turns:
            return Stop(reason=f"turn limit reached ({self.max_turns} turns)")
        return CONTINUE

    def __repr__(self) -> str:
        return f"MaxTurns({self.max_turns})"


class Budget:
    """Stop a run once it has spent ``max_tokens`` tokens or ``max_cost`` money.

    Spending is read from ``PolicyContext.usage`` and ``PolicyContext.cost``: the totals over the
    run's assistant messages so far. Cost is what the provider reported or, when it reported
    none, what the loop computed from ``ModelSpec.pricing``; with neither, cost stays at zero and
    only the token limit can trigger. A limit is reached when spending is *at or above* it: as a
    pre-turn policy, no model call starts once nothing is left.

    A budget bounds a run, not a conversation: each ``Agent.prompt`` starts from zero. The check
    happens between model calls, so a single call may overshoot the limit by its own size; keep
    ``StreamOptions.max_tokens`` small when that matters.

    Example::

        budget = Budget(max_tokens=200_000, max_cost=0.50)
        agent = Agent(..., pre_turn_policies=[budget])

    Args:
        max_tokens: the most tokens a run may use (counted by ``tokens_of``), or ``None``.
        max_cost: the most a run may cost (``Cost.total``, in the pricing's currency), or
            ``None``.

    Raises:
        ValueError: neither limit is given, or one is negative or not a number.
    """

    __slots__ = ("max_cost", "max_tokens")

    def __init__(self, *, max_tokens: int | None = None, max_cost: float | None = None) -> None:
        if max_tokens is None and max_cost is None:
            raise ValueError("Budget needs max_tokens, max_cost, or both")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0
        ):
            raise ValueError(f"max_tokens must be a non-negative integer, not {max_tokens!r}")
        if max_cost is not None and (
            isinstance(max_cost, bool)
            or not isinstance(max_cost, int | float)
            or not math.isfinite(max_cost)
            or max_cost < 0
        ):
            raise ValueError(f"max_cost must be a non-negative finite number, not {max_cost!r}")
        self.max_tokens = max_tokens
        self.max_cost = None if max_cost is None else float(max_cost)

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        """Stop when the run's tokens or cost have reached a limit."""
        if self.max_tokens is not None:
            used = tokens_of(ctx.usage)
            if used >= self.max_tokens:
                return Stop(reason=f"token budget exhausted ({used} of {self.max_tokens} tokens)")
        if self.max_cost is not None:
            spent = ctx.cost.total
            if spent >= self.max_cost:
                return Stop(reason=f"cost budget exhausted ({spent:.6g} of {self.max_cost:.6g})")
        return CONTINUE

    def __repr__(self) -> str:
        return f"Budget(max_tokens={self.max_tokens!r}, max_cost={self.max_cost!r})"
