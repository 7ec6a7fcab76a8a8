"""Efficiency and budgets: how much a run did and spent to get its answer.

``DuplicateCalls`` and ``Steps`` score efficiency (the same call made twice; more calls than
the best path needs). ``Budget`` checks a finished run against limits of cost, tokens, turns and
wall time; ``BudgetGuard`` is the same limits as a post-turn policy that ends a run as soon as
it goes over, so a runaway case fails in a turn instead of running until its timeout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from agentloop.policy import CONTINUE, PolicyContext, PolicyVerdict, Stop

from ._matchers import Check

if TYPE_CHECKING:
    from ._trajectory import Trajectory

__all__ = [
    "Budget",
    "BudgetGuard",
    "DuplicateCalls",
    "Steps",
    "duplicate_call_ratio",
    "step_ratio",
]

_canonical = msgspec.json.Encoder(order="sorted")


def duplicate_call_ratio(trajectory: Trajectory, *, tree: bool = False) -> float:
    """The share of tool calls that repeat an earlier call (same tool, same arguments); 0 for
    a run without calls."""
    steps = list(trajectory.walk_tool_calls()) if tree else trajectory.tool_calls
    if not steps:
        return 0.0
    seen: set[tuple[str, bytes]] = set()
    repeated = 0
    for step in steps:
        key = (step.name, _canonical.encode(step.arguments))
        if key in seen:
            repeated += 1
        seen.add(key)
    return repeated / len(steps)


def step_ratio(trajectory: Trajectory, optimal: int, *, tree: bool = False) -> float:
    """Tool calls made per call of the best path (1.0 is optimal; 0 calls against an optimal
    of 0 is 1.0 too).

    Raises:
        ValueError: ``optimal`` is negative.
    """
    if optimal < 0:
        raise ValueError(f"optimal must be 0 or more, not {optimal}")
    made = sum(1 for _ in trajectory.walk_tool_calls()) if tree else len(trajectory.tool_calls)
    if optimal == 0:
        return 1.0 if made == 0 else float("inf")
    return made / optimal


class DuplicateCalls:
    """At most ``max_ratio`` of the tool calls repeat an earlier one. Score: 1 - the ratio."""

    def __init__(self, max_ratio: float = 0.0, *, tree: bool = False) -> None:
        self.max_ratio = max_ratio
        self.tree = tree
        self.name = "duplicate calls"

    async def check(self, trajectory: Trajectory) -> Check:
        """The share of repeated calls, against ``max_ratio``."""
        ratio = duplicate_call_ratio(trajectory, tree=self.tree)
        return Check(
            name=self.name,
            passed=ratio <= self.max_ratio,
            detail=f"{ratio:.0%} of the calls repeat one (at most {self.max_ratio:.0%})",
            score=1.0 - ratio,
        )


class Steps:
    """At most ``max_ratio`` times the ``optimal`` number of tool calls. Score: optimal / made,
    capped at 1."""

    def __init__(self, optimal: int, *, max_ratio: float = 1.0, tree: bool = False) -> None:
        self.optimal = optimal
        self.max_ratio = max_ratio
        self.tree = tree
        self.name = "steps vs optimal"

    async def check(self, trajectory: Trajectory) -> Check:
        """The number of tool calls, against ``optimal`` times ``max_ratio``."""
        ratio = step_ratio(trajectory, self.optimal, tree=self.tree)
        score = 1.0 if ratio <= 1.0 else 1.0 / ratio
        return Check(
            name=self.name,
            passed=ratio <= self.max_ratio,
            detail=f"{ratio:.2f}x the optimal {self.optimal} calls (at most {self.max_ratio:g}x)",
            score=score,
        )


class Budget:
    """Limits on what a run spent: cost (``cost.total``), tokens (over the tree), turns (the
    agent's own) and wall time in seconds. ``None`` is no limit."""

    def __init__(
        self,
        *,
        max_cost: float | None = None,
        max_tokens: int | None = None,
        max_turns: int | None = None,
        max_seconds: float | None = None,
    ) -> None:
        self.max_cost = max_cost
        self.max_tokens = max_tokens
        self.max_turns = max_turns
        self.max_seconds = max_seconds
        self.name = "budget"

    def overruns(self, trajectory: Trajectory) -> list[str]:
        """What ``trajectory`` spent over its limits, one line per limit."""
        over: list[str] = []
        cost = trajectory.cost.total
        if self.max_cost is not None and cost > self.max_cost:
            over.append(f"cost {cost:.6g} > {self.max_cost:g}")
        tokens = trajectory.total_tokens
        if self.max_tokens is not None and tokens > self.max_tokens:
            over.append(f"tokens {tokens} > {self.max_tokens}")
        turns = len(trajectory.turns)
        if self.max_turns is not None and turns > self.max_turns:
            over.append(f"turns {turns} > {self.max_turns}")
        seconds = trajectory.duration
        if self.max_seconds is not None and seconds > self.max_seconds:
            over.append(f"time {seconds:.3g}s > {self.max_seconds:g}s")
        return over

    async def check(self, trajectory: Trajectory) -> Check:
        """What the run spent, against each limit."""
        over = self.overruns(trajectory)
        return Check(name=self.name, passed=not over, detail="; ".join(over))

    def guard(self) -> BudgetGuard:
        """These limits (but wall time) as a post-turn policy."""
        return BudgetGuard(
            max_cost=self.max_cost, max_tokens=self.max_tokens, max_turns=self.max_turns
        )


class BudgetGuard:
    """A post-turn policy that ends the run once it has gone over a limit (a turn past
    ``max_turns``, more than ``max_tokens`` tokens or ``max_cost`` spent by its own model calls),
    so that the budget check afterwards fails instead of the run going on."""

    def __init__(
        self,
        *,
        max_cost: float | None = None,
        max_tokens: int | None = None,
        max_turns: int | None = None,
    ) -> None:
        self.max_cost = max_cost
        self.max_tokens = max_tokens
        self.max_turns = max_turns

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        """``Stop`` once over a limit, else ``Continue``."""
        if self.max_turns is not None and ctx.turn + 1 > self.max_turns:
            return Stop(reason=f"over budget: more than {self.max_turns} turns")
        tokens = ctx.usage.total or (ctx.usage.input + ctx.usage.output)
        if self.max_tokens is not None and tokens > self.max_tokens:
            return Stop(reason=f"over budget: more than {self.max_tokens} tokens")
        if self.max_cost is not None and ctx.cost.total > self.max_cost:
            return Stop(reason=f"over budget: more than {self.max_cost:g} spent")
        return CONTINUE
