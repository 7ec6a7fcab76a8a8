"""How fast a threaded tool call is stopped: abort, ``tool_timeout`` and steering.

Each case runs one ``@tool`` plain function blocked in its worker thread (``time.sleep`` of
``--block`` seconds, 2 by default), and measures, in ms, median and worst of ``--repeat``:

- ``abort``: from ``agent.abort()`` (called once the thread has started) to ``agent.prompt``
  returning the aborted result;
- ``timeout``: ``tool_timeout=0.05``, from the tool's start to the run's end, minus the 50 ms;
- ``steer``: a second tool steers the agent once the thread has started; from that moment to
  the run's end (the blocked call is cancelled, the model answers once more at once).

The abandoned threads finish their sleep on their own; their results are discarded.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

import anyio
import anyio.to_thread

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._common import MODEL, base_parser, emit_json, summary


def _blocking_tool(started: threading.Event, block: float) -> al.AgentTool:
    @al.tool
    def stuck() -> str:
        """Block in the worker thread."""
        started.set()
        time.sleep(block)
        return "late"

    return stuck


async def abort(block: float) -> float:
    started = threading.Event()
    agent = al.Agent(
        model=MODEL,
        stream_fn=ScriptedStream([reply_tool_calls(("stuck", {})), reply_text("x")]),
        tools=[_blocking_tool(started, block)],
    )
    when: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(agent.prompt, "go", raise_on_error=False))
        await anyio.to_thread.run_sync(started.wait)
        when.append(time.perf_counter())
        agent.abort()
    return time.perf_counter() - when[0]


async def timeout(block: float) -> float:
    started = threading.Event()
    agent = al.Agent(
        model=MODEL,
        stream_fn=ScriptedStream([reply_tool_calls(("stuck", {})), reply_text("x")]),
        tools=[_blocking_tool(started, block)],
        tool_timeout=0.05,
    )
    ends: list[float] = []

    def on_event(event: Any) -> None:
        if type(event) is al.ToolExecutionStart:
            ends.append(time.perf_counter())
        elif type(event) is al.ToolExecutionEnd:
            ends.append(time.perf_counter())

    agent.subscribe(on_event)
    await agent.prompt("go")
    return ends[1] - ends[0] - 0.05


async def steer(block: float) -> float:
    started = threading.Event()
    when: list[float] = []
    agents: list[al.Agent] = []

    @al.tool
    async def nudge() -> str:
        """Steer once the other call's thread runs."""
        await anyio.to_thread.run_sync(started.wait)
        when.append(time.perf_counter())
        agents[0].steer("change of plan")
        return "nudged"

    agent = al.Agent(
        model=MODEL,
        stream_fn=ScriptedStream(
            [reply_tool_calls(("stuck", {}), ("nudge", {})), reply_text("steered")]
        ),
        tools=[_blocking_tool(started, block), nudge],
    )
    agents.append(agent)
    await agent.prompt("go")
    return time.perf_counter() - when[0]


CASES = {"abort": abort, "timeout": timeout, "steer": steer}


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--block", type=float, default=2.0, help="seconds each thread sleeps")
    args = parser.parse_args()
    repeat, block = (2, 0.2) if args.smoke else (args.repeat, args.block)

    async def run() -> dict[str, list[float]]:
        out: dict[str, list[float]] = {name: [] for name in CASES}
        for _ in range(repeat):
            for name, case in CASES.items():
                out[name].append(1000 * await case(block))
        return out

    times = anyio.run(run, backend=args.backend)
    emit_json(
        {
            "backend": args.backend,
            "unit": "ms",
            "cases": {name: summary(values) for name, values in times.items()},
        }
    )


if __name__ == "__main__":
    main()
