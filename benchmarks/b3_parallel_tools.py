"""B3 parallel tools: one answer calling a tool 100 times, each call sleeping 50 ms.

The run is that answer, the 100 concurrent calls, and a final text answer. The figure is the
run's wall time, against the ideal (one sleep, 50 ms) and against the floor doing the same
work by hand in the same process (interleaved), through ``run_loop`` with a ``Tool`` class and
through an ``Agent`` with an ``@tool`` function.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import anyio

import agentloop as al

from ._common import (
    MODEL,
    Replay,
    SleepTool,
    base_parser,
    emit_json,
    interleave,
    summary,
    tool_replies,
)
from .floor import floor_run, sleeper

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["main"]


def cases(calls: int, seconds: float) -> dict[str, Callable[[], Awaitable[float]]]:
    replies = tool_replies(1, "sleep", calls)
    tool = SleepTool(seconds)
    floor_tools: dict[str, Any] = {"sleep": sleeper(seconds)}
    prompt = [al.UserMessage.from_text("go")]

    async def floor() -> float:
        replay = Replay(replies)
        start = time.perf_counter()
        await floor_run(replay, floor_tools)
        return time.perf_counter() - start

    async def run_loop() -> float:
        cfg = al.loop.AgentLoopConfig(model=MODEL, stream_fn=Replay(replies), tools=[tool])
        start = time.perf_counter()
        result = await al.loop.run_loop(prompt, al.loop.AgentContext(), cfg)
        elapsed = time.perf_counter() - start
        assert len(result.messages) == calls + 3, result.stop_reason
        return elapsed

    @al.tool(name="sleep")
    async def sleep() -> str:
        """Sleep a while."""
        await anyio.sleep(seconds)
        return "ok"

    async def agent() -> float:
        bot = al.Agent(model=MODEL, stream_fn=Replay(replies), tools=[sleep])
        start = time.perf_counter()
        result = await bot.prompt("go")
        elapsed = time.perf_counter() - start
        assert len(result.messages) == calls + 3, result.stop_reason
        return elapsed

    return {"floor": floor, "run_loop": run_loop, "agent": agent}


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=0.05)
    args = parser.parse_args()
    if args.repeat == parser.get_default("repeat"):
        args.repeat = 30  # cheap (~60 ms each), and sleep-bound figures are noisy
    if args.smoke:
        args.calls, args.seconds, args.repeat, args.warmup = 5, 0.01, 1, 0
    times = interleave(
        args.backend, cases(args.calls, args.seconds), repeat=args.repeat, warmup=args.warmup
    )
    ms = {name: [t * 1e3 for t in values] for name, values in times.items()}
    emit_json(
        {
            "backend": args.backend,
            "unit": "ms",
            "calls": args.calls,
            "ideal_ms": args.seconds * 1e3,
            "cases": {name: summary(values) for name, values in ms.items()},
        }
    )


if __name__ == "__main__":
    main()
