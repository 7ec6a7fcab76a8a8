"""What a run costs beyond its turns: the pieces of a run's setup, and a short run whole.

- ``task_group_us``: an anyio task group opened and closed with no task (a run that calls tools
  opens one, at its first batch);
- ``token_us``: ``anyio.lowlevel.current_token()`` (taken once per run, for calls from threads);
- ``cancel_called_ns``: reading a cancel scope's ``cancel_called`` (the loop's abort checks);
- ``checkpoint_if_cancelled_us``: anyio's full check, which those checks replace on the hot path
  (here under one scope; it walks every scope the task is in);
- ``text_run_us`` / ``tool_run_us``: ``Agent.prompt`` for a text answer, and for one tool turn
  and an answer (the agent made outside the clock), next to the floor's same work; the minimum
  over the repetitions, each the mean of ``--runs`` runs.

    python -m benchmarks.bench_run_setup --backend trio
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import anyio.lowlevel

import agentloop as al

from ._common import MODEL, Replay, base_parser, emit_json, tool_replies
from .floor import floor_run, noop

__all__ = ["main"]


@al.tool(name="noop")
async def _noop() -> str:
    """Do nothing."""
    return "ok"


async def _task_groups(count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        async with anyio.create_task_group():
            pass
    return (time.perf_counter() - start) / count


async def _tokens(count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        anyio.lowlevel.current_token()
    return (time.perf_counter() - start) / count


async def _cancel_called(count: int) -> float:
    with anyio.CancelScope() as scope:  # noqa: ASYNC100 (the read is what is measured)
        start = time.perf_counter()
        for _ in range(count):
            scope.cancel_called  # noqa: B018 (the read is what is measured)
        elapsed = time.perf_counter() - start
    return elapsed / count


async def _checkpoints(count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        await anyio.lowlevel.checkpoint_if_cancelled()
    return (time.perf_counter() - start) / count


async def _agent_runs(turns: int, runs: int) -> float:
    replies = tool_replies(turns, "noop")
    total = 0.0
    for _ in range(runs):
        agent = al.Agent(model=MODEL, stream_fn=Replay(replies), tools=[_noop])
        start = time.perf_counter()
        await agent.prompt("go")
        total += time.perf_counter() - start
    return total / runs


async def _floor_runs(turns: int, runs: int) -> float:
    replies = tool_replies(turns, "noop")
    start = time.perf_counter()
    for _ in range(runs):
        await floor_run(Replay(replies), {"noop": noop})
    return (time.perf_counter() - start) / runs


def main() -> None:
    parser = base_parser(__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=2_000)
    args = parser.parse_args()
    count, runs, repeat = (50, 5, 1) if args.smoke else (args.count, args.runs, args.repeat)
    backend = args.backend

    def best(fn: Any, *fn_args: Any) -> float:
        return float(min(anyio.run(fn, *fn_args, backend=backend) for _ in range(repeat)))

    emit_json(
        {
            "backend": backend,
            "task_group_us": best(_task_groups, count) * 1e6,
            "token_us": best(_tokens, count) * 1e6,
            "cancel_called_ns": best(_cancel_called, count) * 1e9,
            "checkpoint_if_cancelled_us": best(_checkpoints, count) * 1e6,
            "text_run_us": {
                "floor": best(_floor_runs, 0, runs) * 1e6,
                "agent": best(_agent_runs, 0, runs) * 1e6,
            },
            "tool_run_us": {
                "floor": best(_floor_runs, 1, runs) * 1e6,
                "agent": best(_agent_runs, 1, runs) * 1e6,
            },
        }
    )


if __name__ == "__main__":
    main()
