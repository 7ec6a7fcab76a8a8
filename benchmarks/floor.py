"""The floor: the B1–B4 work written by hand, with no framework.

Plain coroutines and an anyio task group. A run consumes the same pre-built provider events as
agentloop does (from the same ``Replay``), folds them into a message, keeps a history list, and
runs each batch of tool calls as child tasks of a task group. It does nothing else: no events
for observers, no policies, no validation, no cancellation bookkeeping. Every figure of
agentloop is reported as a ratio to this.

``floor_run_asyncio`` is the same loop on asyncio alone, its calls run by ``asyncio.gather``: the
floor the performance issue measured its targets against. It runs on the asyncio backend only,
and shows what anyio's tasks cost on their own (B4's memory per run).

``python -m benchmarks.floor`` prints the floor's own figures for one backend.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec

import agentloop as al

from ._common import Replay, base_parser, emit_json, interleave, median, tool_replies

__all__ = [
    "asyncio_sleeper",
    "floor_run",
    "floor_run_asyncio",
    "floor_stream",
    "floor_stream_channel",
    "noop",
    "sleeper",
]

FloorTool = Callable[[Any], Awaitable[str]]
_decode = msgspec.json.decode


async def noop(arguments: Any) -> str:
    return "ok"


def sleeper(seconds: float) -> FloorTool:
    async def sleep(arguments: Any) -> str:
        await anyio.sleep(seconds)
        return "ok"

    return sleep


def asyncio_sleeper(seconds: float) -> FloorTool:
    async def sleep(arguments: Any) -> str:
        await asyncio.sleep(seconds)
        return "ok"

    return sleep


async def _fold(stream: Any) -> tuple[list[str], list[tuple[str, str, Any]]]:
    """Fold one streamed answer: its texts and its tool calls (id, name, arguments)."""
    parts: dict[int, list[str]] = {}
    starts: dict[int, al.stream.ToolCallStart] = {}
    async for event in stream:
        cls = type(event)
        if cls is al.stream.TextDelta or cls is al.stream.ToolCallDelta:
            parts[event.index].append(event.delta)
        elif cls is al.stream.TextStart:
            parts[event.index] = []
        elif cls is al.stream.ToolCallStart:
            parts[event.index] = []
            starts[event.index] = event
    texts: list[str] = []
    calls: list[tuple[str, str, Any]] = []
    for index, chunks in parts.items():
        start = starts.get(index)
        if start is None:
            texts.append("".join(chunks))
        else:
            calls.append((start.id, start.name, _decode("".join(chunks))))
    return texts, calls


async def _call(tool: FloorTool, call: tuple[str, str, Any], results: list[Any], i: int) -> None:
    results[i] = ("tool_result", call[0], await tool(call[2]))


async def floor_run(replay: Replay, tools: dict[str, FloorTool]) -> list[Any]:
    """One agent run by hand: stream, fold, run the calls in a task group, until no calls."""
    history: list[Any] = [("user", "go")]
    while True:
        texts, calls = await _fold(replay.next_stream())
        history.append(("assistant", texts, calls))
        if not calls:
            return history
        results: list[Any] = [None] * len(calls)
        async with anyio.create_task_group() as tg:
            for i, call in enumerate(calls):
                tg.start_soon(_call, tools[call[1]], call, results, i)
        history.extend(results)


async def _result(tool: FloorTool, call: tuple[str, str, Any]) -> Any:
    return ("tool_result", call[0], await tool(call[2]))


async def floor_run_asyncio(replay: Replay, tools: dict[str, FloorTool]) -> list[Any]:
    """The same run on asyncio alone: each batch of calls through ``asyncio.gather``."""
    history: list[Any] = [("user", "go")]
    while True:
        texts, calls = await _fold(replay.next_stream())
        history.append(("assistant", texts, calls))
        if not calls:
            return history
        history.extend(await asyncio.gather(*[_result(tools[c[1]], c) for c in calls]))


async def floor_stream(replay: Replay, on_event: Callable[[Any], object]) -> str:
    """One streamed answer by hand: fold each delta and hand each event to ``on_event``."""
    parts: list[str] = []
    async for event in replay.next_stream():
        if type(event) is al.stream.TextDelta:
            parts.append(event.delta)
        on_event(event)
    return "".join(parts)


async def floor_stream_channel(replay: Replay, on_event: Callable[[Any], object]) -> str:
    """The same, with a producer task sending each event through an anyio memory stream."""
    send, receive = anyio.create_memory_object_stream[Any](256)
    parts: list[str] = []

    async def produce() -> None:
        async with send:
            async for event in replay.next_stream():
                if type(event) is al.stream.TextDelta:
                    parts.append(event.delta)
                await send.send(event)

    async with anyio.create_task_group() as tg:
        tg.start_soon(produce)
        async with receive:
            async for event in receive:
                on_event(event)
    return "".join(parts)


def main() -> None:
    parser = base_parser("The floor alone: µs per turn of a hand-written loop.")
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    replies = tool_replies(args.turns, "noop")

    async def once() -> float:
        replay = Replay(replies)
        start = time.perf_counter()
        await floor_run(replay, {"noop": noop})
        return time.perf_counter() - start

    times = interleave(args.backend, {"floor": once}, repeat=args.repeat, warmup=args.warmup)
    emit_json(
        {
            "backend": args.backend,
            "turns": args.turns,
            "floor_us_per_turn": median(times["floor"]) / args.turns * 1e6,
        }
    )


if __name__ == "__main__":
    main()
