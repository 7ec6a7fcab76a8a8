"""MaxTurns and Budget: direct checks of their arithmetic."""

from __future__ import annotations

import math

import pytest

from agentloop import Cost, ModelSpec, Pricing, StopReason, Usage
from agentloop.policy import Continue, Stop
from agentloop.testing import reply_text, reply_tool_calls
from agentloop_policies import Budget, MaxTurns, tokens_of

from ._helpers import Recorder, policy_ctx, run

pytestmark = pytest.mark.anyio


def test_max_turns_allows_n_turns_then_stops() -> None:
    policy = MaxTurns(3)
    assert [type(policy.evaluate(policy_ctx(turn=t))) for t in range(5)] == [
        Continue,
        Continue,
        Continue,
        Stop,
        Stop,
    ]
    verdict = policy.evaluate(policy_ctx(turn=3))
    assert isinstance(verdict, Stop)
    assert "3 turns" in verdict.reason


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_max_turns_rejects_nonsense(bad: object) -> None:
    with pytest.raises(ValueError, match="max_turns"):
        MaxTurns(bad)  # type: ignore[arg-type]


def test_tokens_of_prefers_reported_total() -> None:
    assert tokens_of(Usage(input=10, output=5, total=100)) == 100
    assert tokens_of(Usage(input=10, output=5, cache_read=3, cache_write=2)) == 20


def test_budget_tokens_at_limit_stops() -> None:
    budget = Budget(max_tokens=100)
    assert isinstance(budget.evaluate(policy_ctx(usage=Usage(input=60, output=39))), Continue)
    verdict = budget.evaluate(policy_ctx(usage=Usage(input=60, output=40)))
    assert isinstance(verdict, Stop)
    assert "100 of 100 tokens" in verdict.reason


def test_budget_cost() -> None:
    budget = Budget(max_cost=0.5)
    assert isinstance(budget.evaluate(policy_ctx(cost=Cost(total=0.49))), Continue)
    verdict = budget.evaluate(policy_ctx(cost=Cost(total=0.75)))
    assert isinstance(verdict, Stop)
    assert "cost budget" in verdict.reason


def test_budget_either_limit_triggers() -> None:
    budget = Budget(max_tokens=1_000, max_cost=1.0)
    assert isinstance(budget.evaluate(policy_ctx(cost=Cost(total=2.0))), Stop)
    assert isinstance(budget.evaluate(policy_ctx(usage=Usage(total=5_000))), Stop)
    assert isinstance(budget.evaluate(policy_ctx()), Continue)


def test_budget_zero_allows_nothing() -> None:
    assert isinstance(Budget(max_tokens=0).evaluate(policy_ctx()), Stop)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"max_tokens": -1},
        {"max_cost": -0.1},
        {"max_cost": math.nan},
        {"max_cost": math.inf},
        {"max_tokens": 1.5},
        {"max_tokens": True},
    ],
)
def test_budget_rejects_nonsense(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="max_|Budget"):
        Budget(**kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------ through a real run


def endless(n: int, usage: Usage | None = None) -> list[object]:
    return [reply_tool_calls(("echo", {"text": str(i)}), usage=usage) for i in range(n)]


async def test_max_turns_stops_a_run_before_the_next_model_call() -> None:
    echo = Recorder("echo")
    result, stream = await run(endless(10), tools=[echo], pre_turn_policies=[MaxTurns(3)])
    assert len(stream.calls) == 3
    assert len(echo.ran) == 3  # the third turn's tools still ran
    assert result.stopped_by == "MaxTurns: turn limit reached (3 turns)"
    assert result.error is None


async def test_max_turns_does_not_stop_a_run_that_ends_in_time() -> None:
    result, stream = await run(
        [reply_tool_calls(("echo", {})), reply_text("done")],
        tools=[Recorder("echo")],
        pre_turn_policies=[MaxTurns(2)],
    )
    assert result.stopped_by is None
    assert result.text == "done"
    assert result.stop_reason is StopReason.STOP


async def test_budget_tokens_through_a_run() -> None:
    usage = Usage(input=400, output=100)
    result, stream = await run(
        endless(10, usage), tools=[Recorder("echo")], pre_turn_policies=[Budget(max_tokens=1_200)]
    )
    # 500 tokens a call: after three calls (1,500) no fourth call starts.
    assert len(stream.calls) == 3
    assert result.usage.input == 1_200
    assert result.stopped_by is not None
    assert result.stopped_by.startswith("Budget: token budget exhausted (1500 of 1200")


async def test_budget_cost_priced_by_the_loop_when_the_provider_reports_none() -> None:
    # $10 per million input tokens: each call of 20,000 input tokens costs $0.20.
    model = ModelSpec(provider="p", model_id="m", pricing=Pricing(input=10.0))
    result, stream = await run(
        endless(10, Usage(input=20_000)),
        tools=[Recorder("echo")],
        model=model,
        pre_turn_policies=[Budget(max_cost=0.5)],
    )
    assert len(stream.calls) == 3
    assert result.cost.total == pytest.approx(0.6)
    assert result.stopped_by is not None
    assert "cost budget exhausted" in result.stopped_by


async def test_budget_as_post_turn_policy_stops_after_the_turn() -> None:
    result, stream = await run(
        endless(10, Usage(total=1_000)),
        tools=[Recorder("echo")],
        post_turn_policies=[Budget(max_tokens=1_500)],
    )
    assert len(stream.calls) == 2
    assert result.stopped_by is not None
    assert result.stopped_by.startswith("Budget:")
