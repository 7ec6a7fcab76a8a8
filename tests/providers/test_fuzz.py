"""Mutation fuzz over every adapter's recordings: whatever the bytes, a message or a typed error.

CI runs a small seeded profile on both backends; set ``AGENTLOOP_FUZZ_ITERATIONS`` (mutations
per adapter) for a larger local run, and ``AGENTLOOP_FUZZ_SEED`` to vary or reproduce one.
"""

from __future__ import annotations

import os
import random

import pytest

from ._fuzz import CORPUS, mutate, run_case

pytestmark = pytest.mark.anyio

ITERATIONS = int(os.environ.get("AGENTLOOP_FUZZ_ITERATIONS", "150"))
SEED = int(os.environ.get("AGENTLOOP_FUZZ_SEED", "20240514"))
ADAPTERS = sorted({seed.adapter for seed in CORPUS})


def test_the_corpus_covers_every_adapter() -> None:
    assert ADAPTERS == [
        "anthropic",
        "azure",
        "bedrock",
        "gemini",
        "mistral",
        "ollama",
        "openai_chat",
        "openai_responses",
        "proxy",
        "xai",
    ]


@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_mutated_recordings_end_in_a_message_or_a_typed_error(adapter: str) -> None:
    seeds = [seed for seed in CORPUS if seed.adapter == adapter]
    rng = random.Random(f"{SEED}/{adapter}")
    escapes: list[str] = []
    for i in range(ITERATIONS):
        mutant = mutate(rng.choice(seeds), rng)
        outcome = await run_case(mutant)
        if outcome.escape is not None:
            escapes.append(f"#{i} {mutant.seed.name} [{mutant.what}]: {outcome.escape}")
    assert not escapes, f"{len(escapes)} of {ITERATIONS} escaped:\n" + "\n".join(escapes[:20])
