"""``benchmarks/b8_request_building.py`` keeps working: its smoke run prints the expected JSON.

Nothing here looks at the figures: speed is never asserted in tests.
"""

from __future__ import annotations

import json

from tests._benchmarks import run_benchmark


def test_b8_request_building_smoke() -> None:
    result = json.loads(run_benchmark("b8_request_building", "--smoke"))
    assert result["unit"] == "cpu_us_per_turn"
    assert result["meta"]["smoke"] is True
    assert {"anthropic", "bedrock", "gemini", "openai_chat", "proxy"} <= result["adapters"].keys()
    for rows in result["adapters"].values():
        assert rows.keys() == {str(n) for n in result["sizes"]}
        for row in rows.values():
            assert {"plain", "cached", "speedup", "body_bytes", "cache_bytes"} <= row.keys()
