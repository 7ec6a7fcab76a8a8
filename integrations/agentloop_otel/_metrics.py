"""The metrics: the conventions' client metrics, and a histogram of tool call durations.

=============================================  ======  ==========================================
metric                                         unit    recorded
=============================================  ======  ==========================================
``gen_ai.client.token.usage``                  token   per model call attempt with usage, once
                                                       per ``gen_ai.token.type`` (input, output)
``gen_ai.client.operation.duration``           s       per model call attempt (``chat``) and per
                                                       run (``invoke_agent``)
``gen_ai.client.operation.time_to_first_chunk``  s     per attempt that received anything
``agentloop.tool.duration``                    s       per tool call; ``error.type`` says which
                                                       failed (count those for tool errors)
=============================================  ======  ==========================================

Failed operations carry ``error.type``, so error counts and rates come from the same
histograms, as the conventions intend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from opentelemetry import metrics

from ._names import (
    OPERATION_DURATION,
    TIME_TO_FIRST_CHUNK_METRIC,
    TOKEN_TYPE,
    TOKEN_USAGE,
    TOOL_DURATION,
    input_tokens,
)

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

    from agentloop import Usage

__all__ = ["Instruments", "metrics_enabled"]

# The buckets the conventions advise.
_TOKEN_BUCKETS: Final = [4.0**i for i in range(14)]
_DURATION_BUCKETS: Final = [0.01 * 2.0**i for i in range(14)]
_NOT_SET_UP: Final = frozenset({"_ProxyMeterProvider", "NoOpMeterProvider"})


def metrics_enabled(provider: metrics.MeterProvider | None) -> bool:
    """Whether anything would receive the measurements (a meter provider was set up).

    The API alone hands out proxies that drop every measurement until a provider is set; a
    provider of an unknown kind counts as set up.
    """
    if provider is None:
        provider = metrics.get_meter_provider()
    return type(provider).__name__ not in _NOT_SET_UP


class Instruments:
    """The histograms of one ``OpenTelemetry`` instrumentation."""

    __slots__ = ("duration", "first_chunk", "provider", "tokens", "tool_duration")

    def __init__(self, provider: metrics.MeterProvider | None, version: str) -> None:
        self.provider = provider
        meter = metrics.get_meter("agentloop_otel", version, meter_provider=provider)
        self.tokens = meter.create_histogram(
            TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self.first_chunk = meter.create_histogram(
            TIME_TO_FIRST_CHUNK_METRIC,
            unit="s",
            description="Time to receive the first chunk of a model's answer.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self.tool_duration = meter.create_histogram(
            TOOL_DURATION,
            unit="s",
            description="Duration of agentloop tool calls.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )

    @property
    def enabled(self) -> bool:
        return metrics_enabled(self.provider)

    def record_usage(self, usage: Usage, attributes: dict[str, AttributeValue]) -> None:
        """Input and output tokens of one model call."""
        self.tokens.record(input_tokens(usage), {**attributes, TOKEN_TYPE: "input"})
        self.tokens.record(usage.output, {**attributes, TOKEN_TYPE: "output"})
