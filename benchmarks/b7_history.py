"""B7 history: µs of framework work per ``Agent.prompt`` against the length of the history.

An agent holding N earlier messages (N = 0, 1,000, 10,000, 100,000; no transformers) answers
prompts from a replayed model (one short text answer each). The figure is the time per prompt,
measured after one unmeasured prompt (the first run after the history was set indexes it once);
the baseline is the same agent with an empty history, measured in the same process, interleaved.
Goal: the ratio to the baseline stays near 1 whatever N (the cost is flat in history).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import agentloop as al

from ._common import MODEL, Replay, base_parser, emit_json, final_reply, interleave, summary

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["main"]


def history(n: int) -> list[al.AgentMessage]:
    out: list[al.AgentMessage] = []
    for i in range(n // 2):
        out.append(al.UserMessage.from_text(f"question {i}"))
        out.append(al.AssistantMessage(content=[al.Text(text=f"answer {i}")]))
    return out


def case(n: int, prompts: int) -> Callable[[], Awaitable[float]]:
    earlier = history(n)
    reply = final_reply()

    async def measure() -> float:
        agent = al.Agent(model=MODEL, stream_fn=Replay([reply] * (prompts + 1)), messages=earlier)
        await agent.prompt("warm up")  # indexes the history once
        start = time.perf_counter()
        for _ in range(prompts):
            await agent.prompt("next")
        return (time.perf_counter() - start) / prompts

    return measure


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 1000, 10_000, 100_000])
    parser.add_argument("--prompts", type=int, default=200)
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.prompts, args.repeat, args.warmup = [0, 100], 5, 1, 0
    cases = {str(n): case(n, args.prompts) for n in args.sizes}
    times = interleave(args.backend, cases, repeat=args.repeat, warmup=args.warmup)
    us = {name: [t * 1e6 for t in values] for name, values in times.items()}
    out: dict[str, Any] = {
        "backend": args.backend,
        "unit": "us_per_prompt",
        "sizes": {name: summary(values) for name, values in us.items()},
    }
    base = out["sizes"][str(args.sizes[0])]["median"]
    out["ratio_to_smallest"] = {
        name: (s["median"] / base if base else None) for name, s in out["sizes"].items()
    }
    emit_json(out)


if __name__ == "__main__":
    main()
