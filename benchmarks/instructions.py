"""Instructions per turn under callgrind: a count that does not move with the machine's load.

Runs one workload twice under ``valgrind --tool=callgrind`` (0 turns and N turns, after the same
warm-up) and prints ``(I(N) - I(0)) / N``: the instructions one tool turn costs, through
``Agent`` + ``@tool`` (``--impl agent``) or the hand-written floor (``--impl floor``). Wall-time
ratios move by ±5% on a shared machine; this count (under one fixed hash seed) repeats to a
few instructions, which is what an A/B of a small change needs. Needs ``valgrind``
(``apt-get install valgrind``); slow (about ten seconds per count).

    python -m benchmarks.instructions --backend trio --impl agent --turns 200
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from typing import Any

import anyio

import agentloop as al

from ._common import MODEL, Replay, emit_json, tool_replies
from .floor import floor_run, noop

__all__ = ["main"]


@al.tool(name="noop")
async def _noop() -> str:
    """Do nothing."""
    return "ok"


async def _agent(turns: int) -> None:
    agent = al.Agent(model=MODEL, stream_fn=Replay(tool_replies(turns, "noop")), tools=[_noop])
    result = await agent.prompt("go")
    if len(result.messages) != 2 * turns + 2:
        raise RuntimeError(f"the run ended early: {result.stop_reason} {result.error}")


async def _floor(turns: int) -> None:
    history = await floor_run(Replay(tool_replies(turns, "noop")), {"noop": noop})
    if len(history) != 2 * turns + 2:
        raise RuntimeError("the floor's run ended early")


def _workload(turns: int, backend: str, impl: str) -> None:
    run: Any = _agent if impl == "agent" else _floor
    anyio.run(run, 3, backend=backend)  # the same warm-up for both counts
    anyio.run(run, turns, backend=backend)


def _count(turns: int, backend: str, impl: str) -> int:
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        "-m",
        "benchmarks.instructions",
        "--child",
        "--turns",
        str(turns),
        "--backend",
        backend,
        "--impl",
        impl,
    ]
    # One hash seed for every count: with a random one, set and dict layouts move the count by
    # up to ~1% from run to run; with a fixed one, repeated counts agree to a few instructions.
    env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600, env=env)
    found = re.search(r"Collected\s*:\s*(\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--impl", choices=("agent", "floor"), default="agent")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _workload(args.turns, args.backend, args.impl)
        return
    base = _count(0, args.backend, args.impl)
    total = _count(args.turns, args.backend, args.impl)
    emit_json(
        {
            "backend": args.backend,
            "impl": args.impl,
            "turns": args.turns,
            "instructions_per_turn": (total - base) // args.turns,
        }
    )


if __name__ == "__main__":
    main()
