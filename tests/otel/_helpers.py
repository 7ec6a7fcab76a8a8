"""An in-memory OpenTelemetry SDK per test, and what the tests ask of the spans it kept."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agentloop as al
from agentloop.testing import ScriptedStream
from agentloop_otel import OpenTelemetry

if TYPE_CHECKING:
    from collections.abc import Iterator

    from opentelemetry.sdk.trace import ReadableSpan

MODEL = al.ModelSpec(provider="openai", model_id="gpt-test")
FAST_RETRY = al.retry.ExponentialBackoff(base_delay=0.0, jitter=False, max_attempts=3)


class Telemetry:
    """A tracer provider and a meter provider that keep everything in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def instrumentation(self, **kwargs: Any) -> OpenTelemetry:
        return OpenTelemetry(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **kwargs
        )

    def agent(
        self, script: list[Any], *, capture_content: bool = False, **kwargs: Any
    ) -> al.Agent[Any]:
        kwargs.setdefault("retry_strategy", FAST_RETRY)
        return al.Agent(
            model=MODEL,
            stream_fn=ScriptedStream(script),
            instrumentation=self.instrumentation(capture_content=capture_content),
            **kwargs,
        )

    # ---------------------------------------------------------------- spans

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        return self.exporter.get_finished_spans()

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        (span,) = self.named(name)
        return span

    # ---------------------------------------------------------------- metrics

    def points(self, metric: str) -> list[tuple[dict[str, Any], int, float]]:
        """(attributes, count, sum) of each data point of ``metric``."""
        data = self.reader.get_metrics_data()
        out: list[tuple[dict[str, Any], int, float]] = []
        if data is None:
            return out
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        for point in m.data.data_points:
                            out.append(
                                (dict(point.attributes or {}), point.count, point.sum)  # type: ignore[union-attr]
                            )
        return out

    def metric_names(self) -> set[str]:
        data = self.reader.get_metrics_data()
        if data is None:
            return set()
        return {m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def call_id(span: ReadableSpan) -> str:
    """The tool call id of an ``execute_tool`` span."""
    return str((span.attributes or {})["gen_ai.tool.call.id"])


def event_names(span: ReadableSpan) -> list[str]:
    return [e.name for e in span.events]


def every_text(telemetry: Telemetry) -> Iterator[str]:
    """Every string the spans and metrics hold: names, attributes, events, statuses."""
    for span in telemetry.spans:
        yield span.name
        yield from _strings(dict(span.attributes or {}))
        for event in span.events:
            yield event.name
            yield from _strings(dict(event.attributes or {}))
        if span.status.description:
            yield span.status.description
    data = telemetry.reader.get_metrics_data()
    if data is not None:
        yield json.dumps(data.to_json())


def _strings(attributes: dict[str, Any]) -> Iterator[str]:
    for key, value in attributes.items():
        yield key
        if isinstance(value, tuple | list):
            yield from (str(v) for v in value)
        else:
            yield str(value)
