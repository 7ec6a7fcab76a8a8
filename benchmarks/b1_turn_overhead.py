"""B1 turn overhead: µs per turn of a run of N turns, each calling a no-op tool.

A run is N answers calling the ``noop`` tool once, then a final text answer; the figure is the
run's wall time divided by its N + 1 turns. Small N are repeated within one measurement so that
every measurement covers about ``--turns-per-sample`` turns. Three cases, interleaved in this
process: the floor (``floor.floor_run``), ``run_loop`` with no observer, and ``agent_loop`` with a
consumer iterating its event stream, and the everyday path a user writes: an ``Agent`` with an
``@tool`` function, awaited with ``prompt``. The per-turn cost must not grow with N.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import agentloop as al

from ._common import (
    MODEL,
    NoopTool,
    Replay,
    base_parser,
    emit_json,
    interleave,
    summary,
    tool_replies,
)
from .floor import floor_run, noop

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["main"]


def cases(turns: int, per_sample: int) -> dict[str, Callable[[], Awaitable[float]]]:
    replies = tool_replies(turns, "noop")
    runs = max(1, per_sample // turns)
    per_turn = runs * (turns + 1)
    tool = NoopTool()
    prompt = [al.UserMessage.from_text("go")]
    floor_tools: dict[str, Any] = {"noop": noop}

    def config() -> al.loop.AgentLoopConfig:
        return al.loop.AgentLoopConfig(model=MODEL, stream_fn=Replay(replies), tools=[tool])

    async def floor() -> float:
        total = 0.0
        for _ in range(runs):
            replay = Replay(replies)
            start = time.perf_counter()
            await floor_run(replay, floor_tools)
            total += time.perf_counter() - start
        return total / per_turn

    async def run_loop() -> float:
        total = 0.0
        for _ in range(runs):
            cfg = config()
            start = time.perf_counter()
            result = await al.loop.run_loop(prompt, al.loop.AgentContext(), cfg)
            total += time.perf_counter() - start
            assert len(result.messages) == 2 * turns + 2, result.stop_reason
        return total / per_turn

    async def event_stream() -> float:
        total = 0.0
        for _ in range(runs):
            cfg = config()
            start = time.perf_counter()
            async with al.loop.agent_loop(prompt, al.loop.AgentContext(), cfg) as events:
                async for _event in events:
                    pass
            total += time.perf_counter() - start
        return total / per_turn

    @al.tool(name="noop")
    async def noop_tool() -> str:
        """Do nothing."""
        return "ok"

    async def agent() -> float:
        total = 0.0
        for _ in range(runs):
            bot = al.Agent(model=MODEL, stream_fn=Replay(replies), tools=[noop_tool])
            start = time.perf_counter()
            result = await bot.prompt("go")
            total += time.perf_counter() - start
            assert len(result.messages) == 2 * turns + 2, result.stop_reason
        return total / per_turn

    return {"floor": floor, "run_loop": run_loop, "agent_loop": event_stream, "agent": agent}


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--turns", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--turns-per-sample", type=int, default=1000)
    args = parser.parse_args()
    if args.smoke:
        args.turns, args.turns_per_sample, args.repeat, args.warmup = [3, 10], 10, 1, 0
    out: dict[str, Any] = {"backend": args.backend, "unit": "us_per_turn", "sizes": {}}
    for turns in args.turns:
        times = interleave(
            args.backend,
            cases(turns, args.turns_per_sample),
            repeat=args.repeat,
            warmup=args.warmup,
        )
        us = {name: [t * 1e6 for t in values] for name, values in times.items()}
        out["sizes"][str(turns)] = {name: summary(values) for name, values in us.items()}
    emit_json(out)


if __name__ == "__main__":
    main()
