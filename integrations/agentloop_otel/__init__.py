"""agentloop_otel: OpenTelemetry traces and metrics for agentloop runs (GenAI conventions).

=================  ==================================================================
name               what it is
=================  ==================================================================
``OpenTelemetry``  the instrumentation: ``Agent(..., instrumentation=OpenTelemetry())``
=================  ==================================================================

Spans ``invoke_agent {agent}`` per run, ``chat {model}`` per model call attempt and
``execute_tool {tool}`` per tool call, with the conventions' attributes; steering, aborts,
retries and policy verdicts as span events; the metrics ``gen_ai.client.token.usage``,
``gen_ai.client.operation.duration``, ``gen_ai.client.operation.time_to_first_chunk`` and
``agentloop.tool.duration``. Content (messages, tool arguments) is recorded only when asked for.

Built on the OpenTelemetry API (``pip install anyio-agentloop[otel]``); set up an SDK to
export. Imports ``agentloop`` and nothing else of this project; runs on asyncio and trio.
"""

from agentloop import MissingExtra as _MissingExtra

_MissingExtra.check(
    "agentloop_otel", "otel", "opentelemetry"
)  # one clear line, not a deep ImportError

from ._instrumentation import OpenTelemetry as OpenTelemetry

__all__ = ["OpenTelemetry"]
