"""B4 many agents: N runs at once on one event loop, 3 tool turns each, tools sleep 10 ms.

Each run answers three times with one call to a tool that sleeps 10 ms, then with text. One
process measures one implementation (``--impl floor``, ``asyncio_floor``, ``run_loop`` or
``agent``) at one N, so that its peak RSS is its own: ``run_all.py`` interleaves the processes.
``asyncio_floor`` is the floor on asyncio alone, its runs and calls started by
``asyncio.gather`` (asyncio backend only). After a small warm-up, the figures are the wall
time of all N runs, the peak RSS (Linux ``VmHWM``, reset after the warm-up through
``/proc/self/clear_refs``; ``getrusage`` elsewhere), and the memory per run: (peak RSS - RSS
before the runs) / N. With ``--tracemalloc`` the memory per run is instead the traced peak of
Python allocations / N (slower; the wall time is then not meaningful).
"""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
from typing import Any

import anyio

import agentloop as al

from ._common import (
    MODEL,
    Replay,
    SleepTool,
    base_parser,
    emit_json,
    peak_rss_kib,
    reset_peak_rss,
    rss_kib,
    tool_replies,
)
from .floor import asyncio_sleeper, floor_run, floor_run_asyncio, sleeper

__all__ = ["main"]

TURNS = 3


async def many(impl: str, runs: int, seconds: float) -> float:
    replies = tool_replies(TURNS, "sleep")
    done = 0

    if impl == "floor":
        tools: dict[str, Any] = {"sleep": sleeper(seconds)}

        async def one() -> None:
            nonlocal done
            history = await floor_run(Replay(replies), tools)
            assert len(history) == 2 * TURNS + 2
            done += 1

    elif impl == "asyncio_floor":
        tools = {"sleep": asyncio_sleeper(seconds)}

        async def one() -> None:
            nonlocal done
            history = await floor_run_asyncio(Replay(replies), tools)
            assert len(history) == 2 * TURNS + 2
            done += 1

    elif impl == "run_loop":
        tool = SleepTool(seconds)
        prompt = [al.UserMessage.from_text("go")]

        async def one() -> None:
            nonlocal done
            config = al.loop.AgentLoopConfig(model=MODEL, stream_fn=Replay(replies), tools=[tool])
            result = await al.loop.run_loop(prompt, al.loop.AgentContext(), config)
            assert len(result.messages) == 2 * TURNS + 2, result.stop_reason
            done += 1

    else:

        @al.tool(name="sleep")
        async def sleep() -> str:
            """Sleep a while."""
            await anyio.sleep(seconds)
            return "ok"

        async def one() -> None:
            nonlocal done
            agent = al.Agent(model=MODEL, stream_fn=Replay(replies), tools=[sleep])
            result = await agent.prompt("go")
            assert len(result.messages) == 2 * TURNS + 2, result.stop_reason
            done += 1

    start = time.perf_counter()
    if impl == "asyncio_floor":
        await asyncio.gather(*[one() for _ in range(runs)])
    else:
        async with anyio.create_task_group() as tg:
            for _ in range(runs):
                tg.start_soon(one)
    elapsed = time.perf_counter() - start
    assert done == runs
    return elapsed


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument(
        "--impl", choices=("floor", "asyncio_floor", "run_loop", "agent"), default="agent"
    )
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=0.01)
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument(
        "--gc",
        choices=("on", "off", "tuned"),
        default="on",
        help="the cyclic GC as Python sets it up (on), disabled for the runs (off), or tuned "
        "for a server as docs/performance.md suggests (tuned: gc.freeze() after the warm-up, "
        "then --thresholds)",
    )
    parser.add_argument(
        "--thresholds",
        default="100000,50,100",
        help="the collector's three thresholds under --gc tuned (default: 100000,50,100)",
    )
    args = parser.parse_args()
    if args.impl == "asyncio_floor" and args.backend != "asyncio":
        parser.error("--impl asyncio_floor runs on the asyncio backend only")
    if args.smoke:
        args.runs, args.warmup = min(args.runs, 20), 0
    for _ in range(args.warmup):
        anyio.run(many, args.impl, min(args.runs, 50), args.seconds, backend=args.backend)
    gc.collect()
    reset = reset_peak_rss()
    before = rss_kib()
    if args.tracemalloc:
        tracemalloc.start()
    if args.gc == "off":
        gc.disable()
    elif args.gc == "tuned":
        gc.freeze()
        first, second, third = (int(n) for n in args.thresholds.split(","))
        gc.set_threshold(first, second, third)
    wall = anyio.run(many, args.impl, args.runs, args.seconds, backend=args.backend)
    out: dict[str, Any] = {
        "backend": args.backend,
        "impl": args.impl,
        "runs": args.runs,
        "turns": TURNS,
        "tool_seconds": args.seconds,
        "gc": args.gc,
        "thresholds": gc.get_threshold(),
        "wall_s": wall,
        "rss_before_kib": before,
        "peak_rss_kib": peak_rss_kib(),
        "peak_reset": reset,
    }
    if args.tracemalloc:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out["traced_peak_kib"] = peak / 1024
        out["kib_per_run"] = peak / 1024 / args.runs
        out["method"] = "tracemalloc"
    else:
        out["kib_per_run"] = max(0, out["peak_rss_kib"] - before) / args.runs
        out["method"] = "rss"
    emit_json(out)


if __name__ == "__main__":
    main()
