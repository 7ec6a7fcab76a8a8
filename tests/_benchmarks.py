"""Running a benchmark script the way a user does, for the smoke tests that keep them working.

Nothing that uses this looks at the figures: speed is never asserted in tests.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_benchmark(module: str, *args: str, timeout: float = 60) -> str:
    """``python -m benchmarks.<module> <args>`` from the repository; its standard output.

    The script runs in a process group of its own: on a timeout it goes, with any server it
    started. Fails the test when it exits with an error, or when a process it started (tagged
    through its environment) is still running after it ended.
    """
    env = dict(os.environ)
    tag = f"{module}-{uuid.uuid4().hex}"
    env["AGENTLOOP_BENCHMARK_RUN"] = tag
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen(
        [sys.executable, "-m", f"benchmarks.{module}", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0, stderr[-4000:]
    assert _still_running(tag) == [], f"{module} left processes running"
    return stdout


def _still_running(tag: str) -> list[str]:
    """The command lines of live processes whose environment carries ``tag`` (Linux's /proc;
    elsewhere nothing is found)."""
    marker = f"AGENTLOOP_BENCHMARK_RUN={tag}".encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found
