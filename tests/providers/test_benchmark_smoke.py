"""``benchmarks/b8_request_building.py`` keeps working: its smoke run prints the expected JSON.

Nothing here looks at the figures: speed is never asserted in tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_b8_request_building_smoke() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.b8_request_building", "--smoke"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout)
    assert result["unit"] == "cpu_us_per_turn"
    assert result["meta"]["smoke"] is True
    assert {"anthropic", "bedrock", "gemini", "openai_chat", "proxy"} <= result["adapters"].keys()
    for rows in result["adapters"].values():
        assert rows.keys() == {str(n) for n in result["sizes"]}
        for row in rows.values():
            assert {"plain", "cached", "speedup", "body_bytes", "cache_bytes"} <= row.keys()
