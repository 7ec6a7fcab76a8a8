"""The benchmark scripts keep working: ``run_all --smoke`` runs and prints the expected JSON.

Nothing here looks at the figures: speed is never asserted in tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BACKENDS = ("asyncio", "trio")


def test_run_all_smoke() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run_all", "--smoke"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(proc.stdout)

    assert results["meta"]["smoke"] is True
    for key in (
        "b1_turn_overhead",
        "b2_streaming",
        "b3_parallel_tools",
        "b4_many_agents",
        "b5_import_time",
        "b6_parsers",
        "targets",
    ):
        assert key in results, key
    for backend in BACKENDS:
        sizes = results["b1_turn_overhead"][backend]["sizes"]
        assert sizes
        for row in sizes.values():
            assert {"floor", "run_loop", "agent_loop", "ratio_run_loop"} <= row.keys()
        assert {"event_stream", "callback", "subscriber", "floor_callback"} <= results[
            "b2_streaming"
        ][backend].keys()
        assert {"floor", "run_loop", "ratio"} <= results["b3_parallel_tools"][backend].keys()
        for row in results["b4_many_agents"][backend].values():
            assert {"wall", "peak_rss", "per_run"} <= row["agentloop"].keys()
            assert {"wall", "peak_rss", "per_run"} <= row["floor"].keys()
    assert "agentloop" in results["b5_import_time"]["modules"]
