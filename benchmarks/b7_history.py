"""B7 history: µs of framework work per ``Agent.prompt`` against the length of the history.

An agent holding N earlier messages (N = 100, 1,000, 10,000, 30,000) answers prompts from a
replayed model (one short text answer each), with each context transformer in turn: none, a
``SlidingWindow`` with a 200k-token budget (it drops most of a long history), one whose budget
is never reached (it keeps everything: the worst case for bookkeeping), and a
``SummarizingCompactor`` whose budget is never reached (its bookkeeping alone; no summary call).
The figure is the time per prompt, measured after one unmeasured prompt (the first run after the
history was set indexes it once); every case runs in the same process, interleaved. Goal: for
each transformer, the ratio to its smallest N stays near 1 (the cost is flat in history).
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


NEVER = 10**12  # a token budget no history reaches


def transformer(name: str) -> Any:
    if name == "none":
        return None
    if name == "window_200k":
        return al.context.SlidingWindow(max_tokens=200_000)
    if name == "window_unlimited":
        return al.context.SlidingWindow(max_tokens=NEVER)
    if name == "compactor":
        return al.context.SummarizingCompactor(Replay([]), max_tokens=NEVER)
    raise ValueError(name)


TRANSFORMERS = ("none", "window_200k", "window_unlimited", "compactor")


def case(n: int, prompts: int, transform: str) -> Callable[[], Awaitable[float]]:
    earlier = history(n)
    reply = final_reply()

    async def measure() -> float:
        shape = transformer(transform)
        agent = al.Agent(
            model=MODEL,
            stream_fn=Replay([reply] * (prompts + 1)),
            messages=earlier,
            **(
                {}
                if shape is None
                else {"async_transform_context": shape}
                if transform == "compactor"
                else {"transform_context": shape}
            ),
        )
        await agent.prompt("warm up")  # indexes the history once
        start = time.perf_counter()
        for _ in range(prompts):
            await agent.prompt("next")
        return (time.perf_counter() - start) / prompts

    return measure


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[100, 1000, 10_000, 30_000, 100_000]
    )
    parser.add_argument("--transformers", nargs="+", choices=TRANSFORMERS, default=TRANSFORMERS)
    parser.add_argument("--prompts", type=int, default=100)
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.prompts, args.repeat, args.warmup = [10, 100], 3, 1, 0
    cases = {f"{t}:{n}": case(n, args.prompts, t) for t in args.transformers for n in args.sizes}
    times = interleave(args.backend, cases, repeat=args.repeat, warmup=args.warmup)
    us = {name: [t * 1e6 for t in values] for name, values in times.items()}
    out: dict[str, Any] = {"backend": args.backend, "unit": "us_per_prompt", "transformers": {}}
    for t in args.transformers:
        sizes = {str(n): summary(us[f"{t}:{n}"]) for n in args.sizes}
        base = sizes[str(args.sizes[0])]["median"]
        out["transformers"][t] = {
            "sizes": sizes,
            "ratio_to_smallest": {
                n: (s["median"] / base if base else None) for n, s in sizes.items()
            },
        }
    emit_json(out)


if __name__ == "__main__":
    main()
