"""A noisy model against the gate: with no real change the gate rarely fails (at most 5 % of
the time, at 95 % confidence), and it does catch a real drop.

The model answers right with probability ``p`` (a seeded RNG per case, so that which repeat
gets which draw does not matter and every run of this test sees the same draws). Each gate
decision runs the whole suite twice, a baseline and a candidate, through the real runner and
compares them; fixed thresholds are off, so only the baseline comparison can fail the gate.
"""

from __future__ import annotations

import os
import random

import pytest

import agentloop as al
from agentloop.models import ResolvedModel, register_provider
from agentloop.testing import FunctionStream, reply_text
from agentloop_eval import (
    Criteria,
    EvalCase,
    Report,
    Suite,
    SuiteConfig,
    Thresholds,
    gate,
    run_suite,
    wilson,
)

pytestmark = pytest.mark.anyio

DECISIONS = int(os.environ.get("AGENTLOOP_EVAL_DECISIONS", "200"))
REPEATS = 20
LEVEL = 0.05  # the gate's stated false-failure rate at confidence 0.95
RATES = {"easy": 0.9, "medium": 0.7, "hard": 0.5}
TAGS = {"easy": ["a"], "medium": ["a", "b"], "hard": ["b"]}

# model id -> the (rate, RNG) its runs draw from; set before each suite run.
_draws: dict[str, tuple[float, random.Random]] = {}


def _noisy(model_id: str) -> ResolvedModel:
    rate, rng = _draws[model_id]
    stream = FunctionStream(lambda context: reply_text("4" if rng.random() < rate else "5"))
    return ResolvedModel(al.ModelSpec(provider="evalnoisy", model_id=model_id), stream)


register_provider("evalnoisy", _noisy, replace=True)

SUITE = Suite(
    config=SuiteConfig(name="noisy", concurrency=16, thresholds=Thresholds(default=0.0)),
    cases=[
        EvalCase(
            name=name,
            prompt="What is 2 + 2?",
            model=f"evalnoisy:{name}",
            repeats=REPEATS,
            tags=TAGS[name],
            criteria=Criteria(contains=["4"]),
        )
        for name in RATES
    ],
)


async def _run(seed: int, rates: dict[str, float]) -> Report:
    for index, (name, rate) in enumerate(rates.items()):
        _draws[name] = (rate, random.Random(seed * 31 + index))
    return await run_suite(SUITE, keep_trajectories=False)


async def _false_failures(
    first_seed: int, candidate_rates: dict[str, float], decisions: int
) -> int:
    failures = 0
    for decision in range(decisions):
        baseline = await _run(first_seed + 2 * decision, RATES)
        candidate = await _run(first_seed + 2 * decision + 1, candidate_rates)
        assert baseline.errors == candidate.errors == 0
        if not gate(candidate, baseline=baseline).passed:
            failures += 1
    return failures


async def test_with_no_real_change_the_gate_rarely_fails(anyio_backend: str) -> None:
    seed = 1_000_003 if anyio_backend == "trio" else 7
    failures = await _false_failures(seed, RATES, DECISIONS)
    rate, _, upper = wilson(failures, DECISIONS)
    print(f"false failures: {failures}/{DECISIONS} = {rate:.1%} (95% upper bound {upper:.1%})")
    assert upper <= LEVEL, (failures, DECISIONS)


async def test_a_real_drop_is_caught(anyio_backend: str) -> None:
    # "easy" falls from 0.9 to 0.2; with 20 runs a case, such a drop fails the gate 99 % of the
    # time (3,000 simulated decisions).
    dropped = {**RATES, "easy": 0.2}
    caught = await _false_failures(55 if anyio_backend == "trio" else 5, dropped, 20)
    print(f"caught: {caught}/20")
    assert caught >= 17
