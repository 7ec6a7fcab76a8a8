"""Run the official MCP conformance suite against agentloop_mcp: server scenarios against
``serve()`` (server.py), client scenarios against the client (client.py).

    python tests/mcp/conformance/run.py            every leg (about three minutes)
    python tests/mcp/conformance/run.py --quick    the legs of the dated revisions, 2025-11-25 and
                                                   2026-07-28, client and server (CI's; about two)

It installs what it needs once into ``.mcp-conformance/`` (git-ignored) with npm: Node 22 (the
suite needs Node >= 22; npm's ``node`` package brings it) and the suite, pinned below. Each leg
runs with ``expected-failures.yml``; the run fails on a failure not listed there, or on a listed
one that passes. The per-scenario counts are printed and written to
``.mcp-conformance/summary.json`` (docs/mcp.md quotes them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PREFIX = ROOT / ".mcp-conformance"
SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
NODE = "node@22"
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
BASELINE = HERE / "expected-failures.yml"
RESULT = re.compile(r"^[✓✗] (\S+): (\d+) passed, (\d+) failed")

SERVER_LEGS = {
    "server 2025-11-25": ["--suite", "all", "--spec-version", "2025-11-25"],
    "server 2026-07-28": ["--suite", "all", "--spec-version", "2026-07-28"],
    "server extensions": ["--suite", "all"],
}
CLIENT_LEGS = {
    "client 2025-11-25": ["--suite", "all", "--spec-version", "2025-11-25"],
    "client 2026-07-28": ["--suite", "all", "--spec-version", "2026-07-28"],
    "client extensions": ["--suite", "all"],
}
# CI's legs: every dated revision; the extension legs (tasks, DPoP, ...) run in nox only.
QUICK = {"server 2025-11-25", "server 2026-07-28", "client 2025-11-25", "client 2026-07-28"}


def install() -> Path:
    """The suite's command, installed into ``.mcp-conformance`` unless it is there already."""
    bin_dir = PREFIX / "node_modules" / ".bin"
    version = SUITE.rsplit("@", 1)[1]
    installed = PREFIX / "node_modules" / "@modelcontextprotocol" / "conformance" / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != version:
        PREFIX.mkdir(exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(PREFIX),
                "--no-audit",
                "--no-fund",
                "--silent",
                NODE,
                SUITE,
                EVERYTHING,
            ],
            check=True,
        )
    return bin_dir


def run_leg(bin_dir: Path, name: str, args: list[str]) -> tuple[int, dict[str, list[int]]]:
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    command = [str(bin_dir / "conformance"), *args, "--expected-failures", str(BASELINE)]
    print(f"\n=== {name}: conformance {' '.join(args)}", flush=True)
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=PREFIX, timeout=900)
    output = done.stdout + done.stderr
    counts = {
        m.group(1): [int(m.group(2)), int(m.group(3))]
        for line in output.splitlines()
        if (m := RESULT.match(line.strip()))
    }
    tail = output[output.rfind("SUMMARY") :] if "SUMMARY" in output else output[-4000:]
    print(tail, flush=True)
    return done.returncode, counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the legs CI runs")
    options = parser.parse_args()
    bin_dir = install()
    python = sys.executable
    failures: list[str] = []
    summary: dict[str, dict[str, list[int]]] = {}

    server = subprocess.Popen(
        [python, str(HERE / "server.py"), "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()  # printed once the socket listens
        if not url.startswith("http://"):
            raise SystemExit("the conformance server did not start")
        for name, args in SERVER_LEGS.items():
            if options.quick and name not in QUICK:
                continue
            code, summary[name] = run_leg(bin_dir, name, ["server", "--url", url, *args])
            if code:
                failures.append(name)
    finally:
        server.kill()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()

    client = f"{python} {HERE / 'client.py'}"
    for name, args in CLIENT_LEGS.items():
        if options.quick and name not in QUICK:
            continue
        code, summary[name] = run_leg(
            bin_dir, name, ["client", "--command", client, "--timeout", "60000", *args]
        )
        if code:
            failures.append(name)

    (PREFIX / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    print("\n=== totals (checks passed / failed)")
    for name, counts in summary.items():
        passed = sum(c[0] for c in counts.values())
        failed = sum(c[1] for c in counts.values())
        clean = sum(1 for c in counts.values() if not c[1])
        print(
            f"{name}: {clean}/{len(counts)} scenarios clean, {passed} checks passed, {failed} failed"
        )
    if failures:
        print(f"unexpected results in: {', '.join(failures)}")
        return 1
    print("every leg matched expected-failures.yml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
