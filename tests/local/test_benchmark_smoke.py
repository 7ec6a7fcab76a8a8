"""``benchmarks/local_inference.py`` keeps working: its smoke run prints the expected JSON.

Nothing here looks at the figures: speed is never asserted in tests.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests._benchmarks import run_benchmark

if TYPE_CHECKING:
    from pathlib import Path


def test_local_inference_smoke(smollm2_path: Path) -> None:
    result = json.loads(run_benchmark("local_inference", "--smoke", timeout=600))
    assert result["meta"]["smoke"] is True
    rows = result["rows"]
    for name in ("floor", "provider", "run_loop"):
        assert {"seconds", "tokens", "tokens_per_s"} <= rows[name].keys()
        assert rows[name]["tokens"] > 0
    for name in ("queue", "two_contexts"):
        assert {"wall", "second_first_token"} <= rows[name].keys()
    assert "tokens_per_s" in rows["llama_server"] or "skipped" in rows["llama_server"]
    assert {"provider_vs_floor", "run_loop_vs_floor", "loop_overhead_us_per_token"} <= result[
        "ratios"
    ].keys()
