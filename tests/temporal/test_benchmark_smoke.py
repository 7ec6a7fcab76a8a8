"""``benchmarks/bench_temporal.py`` keeps working: a tiny run prints the expected JSON.

Nothing here looks at the figures: speed is never asserted in tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_bench_temporal_smoke() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    # A process group of its own: on a timeout the dev server it started goes with it.
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_temporal", "--calls", "1", "--repeat", "1"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0, stderr[-4000:]
    result = json.loads(stdout)
    for where in ("temporal", "in_process"):
        assert set(result[where]) == {"base_run_ms", "tool_call_ms", "model_call_ms"}
    assert result["abort_ms"] > 0
