"""``benchmarks/bench_tui.py`` keeps working: its smoke run prints the expected JSON.

Nothing here looks at the figures: speed is never asserted in tests (``test_text_view`` counts
the work a frame does instead).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_bench_tui_smoke() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_tui", "--smoke"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout)
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
