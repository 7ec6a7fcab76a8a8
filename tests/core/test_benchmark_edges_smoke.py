"""``benchmarks/bench_edges.py`` keeps working: its smoke run prints the expected JSON.

Nothing here looks at the figures: speed is never asserted in tests.
"""

from __future__ import annotations

import json

import pytest

from tests._benchmarks import run_benchmark


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_bench_edges_smoke(backend: str) -> None:
    result = json.loads(run_benchmark("bench_edges", "--smoke", "--backend", backend))
    assert result["unit"] == "ms"
    assert set(result["cases"]) == {"abort", "timeout", "steer"}
    assert all(case["n"] == 2 for case in result["cases"].values())
