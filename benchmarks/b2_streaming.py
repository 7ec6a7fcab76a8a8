"""B2 streaming: deltas per second of one answer streaming 10,000 text deltas of 4 characters.

Cases, interleaved in this process (the figure is deltas / wall time of the whole run):

- ``event_stream``: a consumer of the public stream (the ``EventStream`` ``agent_loop`` returns)
  (``--capacity N``: an ``EventStream`` holding up to N waiting events instead of 256);
- ``callback``: ``run_loop(..., on_event=cb)``;
- ``subscriber``: ``Agent.subscribe(cb)`` and ``await agent.prompt(...)``;
- ``agent_stream``: ``async with agent.stream(...) as events: async for event in events`` with
  ``isinstance`` checks, as an application (a UI) reads an agent's events;
- ``floor_callback``: the events folded by hand and handed to the same callback;
- ``floor_channel``: the same through a producer task and an anyio memory stream (buffer 256).

Every consumer does the same minimal work: count the events that carry a text delta.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import agentloop as al

from ._common import MODEL, Replay, base_parser, emit_json, interleave, summary, text_reply
from .floor import floor_stream, floor_stream_channel

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["main"]


class Counter:
    """The consumer: counts text deltas, whether it is given provider or agent events."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, event: Any) -> None:
        if type(event) is al.MessageUpdate:
            event = event.event
        if type(event) is al.stream.TextDelta:
            self.count += 1


def cases(deltas: int, capacity: int = 256) -> dict[str, Callable[[], Awaitable[float]]]:
    replies = [text_reply(deltas)]
    prompt = [al.UserMessage.from_text("go")]

    def config() -> al.loop.AgentLoopConfig:
        return al.loop.AgentLoopConfig(model=MODEL, stream_fn=Replay(replies))

    def check(counter: Counter) -> None:
        assert counter.count == deltas, counter.count

    async def event_stream() -> float:
        cfg, counter = config(), Counter()
        start = time.perf_counter()
        stream = al.loop.EventStream(prompt, al.loop.AgentContext(), cfg, capacity=capacity)
        async with stream as events:
            async for event in events:
                counter(event)
        elapsed = time.perf_counter() - start
        check(counter)
        return elapsed

    async def callback() -> float:
        cfg, counter = config(), Counter()
        start = time.perf_counter()
        await al.loop.run_loop(prompt, al.loop.AgentContext(), cfg, on_event=counter)
        elapsed = time.perf_counter() - start
        check(counter)
        return elapsed

    async def subscriber() -> float:
        counter = Counter()
        agent = al.Agent(model=MODEL, stream_fn=Replay(replies))
        agent.subscribe(counter)
        start = time.perf_counter()
        await agent.prompt("go")
        elapsed = time.perf_counter() - start
        check(counter)
        return elapsed

    async def agent_stream() -> float:
        agent = al.Agent(model=MODEL, stream_fn=Replay(replies))
        count = 0
        start = time.perf_counter()
        async with agent.stream("go") as events:
            async for event in events:
                if isinstance(event, al.MessageUpdate) and isinstance(
                    event.event, al.stream.TextDelta
                ):
                    count += 1
        elapsed = time.perf_counter() - start
        assert count == deltas, count
        return elapsed

    async def floor_callback() -> float:
        counter = Counter()
        start = time.perf_counter()
        await floor_stream(Replay(replies), counter)
        elapsed = time.perf_counter() - start
        check(counter)
        return elapsed

    async def floor_channel() -> float:
        counter = Counter()
        start = time.perf_counter()
        await floor_stream_channel(Replay(replies), counter)
        elapsed = time.perf_counter() - start
        check(counter)
        return elapsed

    return {
        "floor_callback": floor_callback,
        "floor_channel": floor_channel,
        "event_stream": event_stream,
        "callback": callback,
        "subscriber": subscriber,
        "agent_stream": agent_stream,
    }


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--capacity", type=int, default=256, help="the event stream's buffer")
    args = parser.parse_args()
    if args.smoke:
        args.deltas, args.repeat, args.warmup = 200, 1, 0
    times = interleave(
        args.backend, cases(args.deltas, args.capacity), repeat=args.repeat, warmup=args.warmup
    )
    rates = {name: [args.deltas / t for t in values] for name, values in times.items()}
    emit_json(
        {
            "backend": args.backend,
            "unit": "deltas_per_s",
            "deltas": args.deltas,
            "capacity": args.capacity,
            "cases": {name: summary(values) for name, values in rates.items()},
        }
    )


if __name__ == "__main__":
    main()
