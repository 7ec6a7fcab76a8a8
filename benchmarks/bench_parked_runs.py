"""What a parked run holds: N runs (B4's) all waiting in their first tool call, counted at once.

When the N-th run's tool is entered, every run is parked in a tool call: the script then counts,
per run, the Python memory allocated since the runs started (``tracemalloc``), and the objects
the cyclic GC tracks (``gc.get_objects()``, after a collection), by type with ``--types``. The
same for the floor, ``run_loop`` and an ``Agent`` per run, so that what each layer adds shows
(on asyncio, also for ``asyncio_floor``: the floor on asyncio alone, with ``asyncio.gather``):

    python -m benchmarks.bench_parked_runs --backend trio --types 12

The counting itself is outside what is counted (its snapshot is taken first); the runs then go
on to their end. Memory here is the Python heap only (B4's RSS figure also holds the
allocator's slack).
"""

from __future__ import annotations

import asyncio
import collections
import gc
import tracemalloc
from typing import Any

import anyio

import agentloop as al

from ._common import MODEL, Replay, base_parser, emit_json, tool_replies
from .floor import floor_run, floor_run_asyncio

__all__ = ["main"]

TURNS = 3
IMPLS = ("floor", "asyncio_floor", "run_loop", "agent")


def _tracked() -> collections.Counter[str]:
    gc.collect()
    return collections.Counter(type(o).__qualname__ for o in gc.get_objects())


async def _park(impl: str, runs: int, found: dict[str, Any]) -> None:
    """Start ``runs`` runs; when the last one enters its tool, count what they all hold."""
    replies = tool_replies(TURNS, "sleep")
    parked = 0
    release = anyio.Event()

    async def wait() -> None:
        nonlocal parked
        parked += 1
        if parked == runs:
            if "before" in found:
                found["memory"] = tracemalloc.get_traced_memory()[0]
                found["objects"] = _tracked()
            release.set()
        await release.wait()

    @al.tool(name="sleep")
    async def sleep() -> str:
        """Wait for every run to park."""
        await wait()
        return "ok"

    class Sleep(al.Tool):
        name = "sleep"
        description = "Wait for every run to park."

        async def execute(
            self, call_id: str, arguments: Any, on_update: al.abc.OnUpdate
        ) -> al.AgentToolResult:
            await wait()
            return al.AgentToolResult.text("ok")

    async def floor_tool(arguments: Any) -> str:
        await wait()
        return "ok"

    tool = Sleep()
    prompt = [al.UserMessage.from_text("go")]

    async def one() -> None:
        if impl == "floor":
            await floor_run(Replay(replies), {"sleep": floor_tool})
        elif impl == "asyncio_floor":
            await floor_run_asyncio(Replay(replies), {"sleep": floor_tool})
        elif impl == "run_loop":
            config = al.loop.AgentLoopConfig(model=MODEL, stream_fn=Replay(replies), tools=[tool])
            await al.loop.run_loop(prompt, al.loop.AgentContext(), config)
        else:
            agent = al.Agent(model=MODEL, stream_fn=Replay(replies), tools=[sleep])
            await agent.prompt("go")

    if impl == "asyncio_floor":
        await asyncio.gather(*[one() for _ in range(runs)])
        return
    async with anyio.create_task_group() as tg:
        for _ in range(runs):
            tg.start_soon(one)


def measure(impl: str, runs: int, backend: str, types: int) -> dict[str, Any]:
    anyio.run(_park, impl, min(runs, 50), {}, backend=backend)  # warm-up: nothing counted
    found: dict[str, Any] = {}
    before = _tracked()
    tracemalloc.start()
    found["before"] = tracemalloc.get_traced_memory()[0]
    try:
        anyio.run(_park, impl, runs, found, backend=backend)
    finally:
        tracemalloc.stop()
    objects = found["objects"] - before
    out: dict[str, Any] = {
        "kib_per_run": (found["memory"] - found["before"]) / 1024 / runs,
        "tracked_per_run": sum(objects.values()) / runs,
    }
    if types:
        out["tracked_types_per_run"] = {
            name: round(count / runs, 2) for name, count in objects.most_common(types)
        }
    return out


def main() -> None:
    parser = base_parser(__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--types", type=int, default=0, help="the N most tracked types, per run")
    args = parser.parse_args()
    runs = 20 if args.smoke else args.runs
    emit_json(
        {
            "backend": args.backend,
            "runs": runs,
            "turns": TURNS,
            "impls": {
                impl: measure(impl, runs, args.backend, args.types)
                for impl in IMPLS
                if impl != "asyncio_floor" or args.backend == "asyncio"
            },
        }
    )


if __name__ == "__main__":
    main()
