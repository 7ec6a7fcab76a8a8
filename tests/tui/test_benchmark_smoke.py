"""``benchmarks/bench_tui.py`` keeps working: its smoke run prints the expected JSON.

Nothing here looks at the figures: speed is never asserted in tests (``test_text_view`` counts
the work a frame does instead).
"""

from __future__ import annotations

import json

from tests._benchmarks import run_benchmark


def test_bench_tui_smoke() -> None:
    result = json.loads(run_benchmark("bench_tui", "--smoke", timeout=90))
    (run,) = result["runs"].values()
    for side in ("tui", "log"):
        assert run[side]["frames"] == 2000 // result["per_frame"]
        assert {
            "frame_p50_ms",
            "frame_p99_ms",
            "start_p50_p99_ms",
            "end_p50_p99_ms",
            "cpu_s",
            "cpu_per_1k_tokens_ms",
        } <= run[side].keys()
