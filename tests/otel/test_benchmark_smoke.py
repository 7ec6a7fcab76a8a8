"""``benchmarks/bench_otel.py`` keeps working: its smoke run prints the expected JSON.

Nothing here looks at the figures: speed is never asserted in tests.
"""

from __future__ import annotations

import json

from tests._benchmarks import run_benchmark


def test_bench_otel_smoke() -> None:
    result = json.loads(run_benchmark("bench_otel", "--smoke"))
    assert result["unit"] == "us_per_turn"
    (row,) = result["sizes"].values()
    assert {"plain", "hooks", "api", "sdk", "overhead_api", "overhead_sdk"} <= row.keys()
