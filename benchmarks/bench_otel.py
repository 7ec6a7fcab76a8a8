"""OpenTelemetry overhead: µs per turn of the B1 run, without and with ``agentloop_otel``.

The run is B1's: N answers calling the ``noop`` tool once, then a final text answer, through
``run_loop``; the figure is the run's wall time divided by its N + 1 turns (N = 0: one turn,
where the per-run cost shows). ``--deltas D`` makes every answer stream D text deltas before
its tool call. Four cases, interleaved in this process:

- ``plain``: no instrumentation;
- ``hooks``: an instrumentation whose every hook is a context manager doing nothing: what
  the loop itself spends on being observed;
- ``api``: ``OpenTelemetry()`` with the OpenTelemetry API alone: no SDK set up, the global
  providers are the API's proxies (what an application gets from the extra alone);
- ``sdk``: ``OpenTelemetry`` given an SDK ``TracerProvider`` whose ``SimpleSpanProcessor``
  exports to an exporter that drops every span, and an SDK ``MeterProvider`` whose in-memory
  reader is never collected (so every span and measurement is made, none is shipped).

The overheads are ``case / plain - 1``. The SDK's own cost is fixed per span (about 15-25 µs
in CPython) and per measurement (about 5-10 µs); a turn here makes two spans and five
measurements, with a model that answers at once, so the SDK's figure is the worst case: next to
a real model's answer (hundreds of milliseconds) the same microseconds are a rounding error.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import agentloop as al
from agentloop.abc import Instrumentation

from ._common import (
    MODEL,
    NoopTool,
    Replay,
    base_parser,
    emit_json,
    final_reply,
    interleave,
    summary,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

__all__ = ["main"]


def replies(turns: int, deltas: int) -> list[Sequence[al.stream.AssistantMessageEvent]]:
    """``turns`` answers (each ``deltas`` text deltas, then a ``noop`` call), then a final one."""
    from agentloop.testing import events_for

    content: list[Any] = [al.Text(text="abcd" * deltas)] if deltas else []
    content.append(al.ToolCall(id="call_1", name="noop", arguments={}))
    usage = al.Usage(input=1000, output=50, total=1050)
    answer = al.AssistantMessage(content=content, stop_reason=al.StopReason.TOOL_USE, usage=usage)
    return [events_for(answer, chunk_size=4)] * turns + [final_reply()]


_NOTHING = nullcontext()


class Hooks(Instrumentation):
    """Every hook entered, doing nothing."""

    def run(self, run: Any) -> Any:
        return _NOTHING

    def model_call(self, call: Any) -> Any:
        return _NOTHING

    def tool_call(self, call: Any) -> Any:
        return _NOTHING


def sdk_instrumentation() -> Any:
    """``OpenTelemetry`` on an SDK that records everything and exports nothing."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    from agentloop_otel import OpenTelemetry

    class DropEverything(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(DropEverything()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return OpenTelemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)


def cases(turns: int, per_sample: int, deltas: int) -> dict[str, Callable[[], Awaitable[float]]]:
    from agentloop_otel import OpenTelemetry

    events = replies(turns, deltas)
    runs = max(1, per_sample // max(turns, 1))
    per_turn = runs * (turns + 1)
    tool = NoopTool()
    prompt = [al.UserMessage.from_text("go")]
    api = OpenTelemetry()
    sdk = sdk_instrumentation()

    def case(instrumentation: Any) -> Callable[[], Awaitable[float]]:
        async def measure() -> float:
            total = 0.0
            for _ in range(runs):
                config = al.loop.AgentLoopConfig(
                    model=MODEL,
                    stream_fn=Replay(events),
                    tools=[tool],
                    instrumentation=instrumentation,
                )
                start = time.perf_counter()
                result = await al.loop.run_loop(prompt, al.loop.AgentContext(), config)
                total += time.perf_counter() - start
                assert len(result.messages) == 2 * turns + 2, result.stop_reason
            return total / per_turn

        return measure

    return {"plain": case(None), "hooks": case(Hooks()), "api": case(api), "sdk": case(sdk)}


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--turns", type=int, nargs="+", default=[0, 10, 100])
    parser.add_argument("--turns-per-sample", type=int, default=1000)
    parser.add_argument("--deltas", type=int, default=0, help="text deltas per answer")
    args = parser.parse_args()
    if args.smoke:
        args.turns, args.turns_per_sample, args.repeat, args.warmup = [3], 10, 1, 0
    out: dict[str, Any] = {
        "backend": args.backend,
        "unit": "us_per_turn",
        "deltas": args.deltas,
        "sizes": {},
    }
    for turns in args.turns:
        times = interleave(
            args.backend,
            cases(turns, args.turns_per_sample, args.deltas),
            repeat=args.repeat,
            warmup=args.warmup,
        )
        us = {name: [t * 1e6 for t in values] for name, values in times.items()}
        row: dict[str, Any] = {name: summary(values) for name, values in us.items()}
        plain = row["plain"]["median"]
        for name in ("hooks", "api", "sdk"):
            row[f"overhead_{name}"] = row[name]["median"] / plain - 1 if plain else None
            row[f"added_us_{name}"] = row[name]["median"] - plain
        out["sizes"][str(turns)] = row
    emit_json(out)


if __name__ == "__main__":
    main()
