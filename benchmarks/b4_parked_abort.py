"""B4, parked and aborted: N runs (100,000 by default) started at once, each parked in its first
tool call, then all aborted.

One process per implementation (``--impl floor``, ``run_loop`` or ``agent``, as in B4), so that
its memory is its own. Three figures:

* ``start_s``: from starting the first run to the N-th run entering its tool (every run's
  setup, first model answer and tool call);
* ``kib_per_run``: the resident memory the parked runs hold, (RSS parked - RSS before) / N;
* ``abort_s``: from cancelling the task group that holds them (an abort of every run) to the
  group's exit, every run having ended (the agents' runs with their closing events and a result
  for every call).

    python -m benchmarks.b4_parked_abort --impl agent --runs 100000 --backend trio
"""

from __future__ import annotations

import gc
import time
from typing import Any

import anyio

import agentloop as al

from ._common import MODEL, Replay, base_parser, emit_json, tool_replies
from .floor import floor_run

__all__ = ["main"]

IMPLS = ("floor", "run_loop", "agent")


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def _measure(impl: str, runs: int) -> dict[str, Any]:
    replies = tool_replies(3, "sleep")
    parked = 0
    all_parked = anyio.Event()
    never = anyio.Event()

    async def wait() -> None:
        nonlocal parked
        parked += 1
        if parked == runs:
            all_parked.set()
        await never.wait()

    @al.tool(name="sleep")
    async def sleep() -> str:
        """Wait until aborted."""
        await wait()
        return "ok"

    async def floor_tool(arguments: Any) -> str:
        await wait()
        return "ok"

    async def one() -> None:
        if impl == "floor":
            await floor_run(Replay(replies), {"sleep": floor_tool})
        elif impl == "run_loop":
            config = al.loop.AgentLoopConfig(model=MODEL, stream_fn=Replay(replies), tools=[sleep])
            await al.loop.run_loop([al.UserMessage.from_text("go")], al.loop.AgentContext(), config)
        else:
            agent = al.Agent(
                model=MODEL, stream_fn=Replay(replies), tools=[sleep], raise_on_error=False
            )
            await agent.prompt("go")

    gc.collect()
    before = _rss_kib()
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(runs):
            tg.start_soon(one)
        await all_parked.wait()
        parked_at = time.perf_counter()
        held = _rss_kib() - before
        abort_started = time.perf_counter()
        tg.cancel_scope.cancel()
    ended = time.perf_counter()
    return {
        "start_s": parked_at - started,
        "kib_per_run": held / runs,
        "abort_s": ended - abort_started,
    }


def main() -> None:
    parser = base_parser(__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument("--impl", choices=IMPLS, default="agent")
    parser.add_argument("--runs", type=int, default=100_000)
    args = parser.parse_args()
    runs = 200 if args.smoke else args.runs
    result = anyio.run(_measure, args.impl, runs, backend=args.backend)
    emit_json({"backend": args.backend, "impl": args.impl, "runs": runs, **result})


if __name__ == "__main__":
    main()
