"""``benchmarks/bench_temporal.py`` keeps working: a tiny run prints the expected JSON.

Nothing here looks at the figures: speed is never asserted in tests.
"""

from __future__ import annotations

import json

from tests._benchmarks import run_benchmark


def test_bench_temporal_smoke() -> None:
    # In a process group of its own: on a timeout the dev server it started goes with it.
    stdout = run_benchmark("bench_temporal", "--calls", "1", "--repeat", "1", timeout=120)
    result = json.loads(stdout)
    for where in ("temporal", "in_process"):
        assert set(result[where]) == {"base_run_ms", "tool_call_ms", "model_call_ms"}
    assert result["abort_ms"] > 0
