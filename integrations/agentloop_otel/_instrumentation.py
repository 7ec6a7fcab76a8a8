"""``OpenTelemetry``: spans and metrics for agentloop runs, by the GenAI semantic conventions.

============================  ========  ==========================================  ============
span                          kind      around                                      parent
============================  ========  ==========================================  ============
``invoke_agent {agent}``      INTERNAL  a run                                       the current
``chat {model}``              CLIENT    one attempt of a model call (retries too)   the run's
``execute_tool {tool}``       INTERNAL  one tool call; linked to the ``chat`` span  the run's
                                        whose answer asked for it
============================  ========  ==========================================  ============

Each span is the current one while its part runs: a tool (in its task, or in a worker thread)
sees its ``execute_tool`` span, a sub-agent's ``invoke_agent`` nests under the ``execute_tool``
that started it, and a provider's HTTP spans nest under ``chat``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from opentelemetry import context as otel_context, trace
from opentelemetry.trace import SpanKind

import agentloop
from agentloop.abc import Instrumentation

from ._metrics import Instruments
from ._names import (
    AGENT_NAME,
    CAPTURE_CONTENT_ENV,
    CONVERSATION_ID,
    OPERATION_NAME,
    POLICY_EVENT,
    PROVIDER_NAME,
    REQUEST_MODEL,
    STEERING_EVENT,
    TOOL_CALL_ID,
    provider_name,
)
from ._spans import ChatScope, RunScope, Telemetry, ToolScope

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, TracerProvider
    from opentelemetry.util.types import AttributeValue

    from agentloop.abc import ModelCallInfo, RunInfo, RunNote, ToolCallInfo

__all__ = ["OpenTelemetry"]

Attributes = dict[str, "AttributeValue"]


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


class OpenTelemetry(Instrumentation):
    """An ``agentloop.abc.Instrumentation`` making OpenTelemetry spans and metrics.

    ``Agent(..., instrumentation=OpenTelemetry())`` (or ``AgentLoopConfig.instrumentation``);
    sub-agents started by the agent's tools are observed too. Without an SDK set up (the
    OpenTelemetry API alone) a run costs one non-recording span and nothing per turn.

    Args:
        tracer_provider: where spans go (default: the global one).
        meter_provider: where metrics go (default: the global one).
        capture_content: record messages, system instructions, tool definitions and tool
            arguments on the spans (off by default, as the conventions require; ``None`` reads
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``). Tool results are never
            recorded on ``execute_tool`` spans: a post-turn policy may still redact them; they
            appear, as the model read them, in the next ``chat`` span's input messages.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool | None = None,
    ) -> None:
        capture = _env_flag(CAPTURE_CONTENT_ENV) if capture_content is None else capture_content
        version = agentloop.__version__
        self._telemetry = Telemetry(
            trace.get_tracer("agentloop_otel", version, tracer_provider),
            Instruments(meter_provider, version),
            capture,
        )

    @property
    def capture_content(self) -> bool:
        """Whether content is recorded on the spans."""
        return self._telemetry.capture_content

    # ---------------------------------------------------------------- the hooks

    def run(self, run: RunInfo) -> RunScope | None:
        """The ``invoke_agent`` span, or ``None`` when nothing would record the run."""
        parent = otel_context.get_current()
        provider = provider_name(run.model.provider)
        attributes: Attributes = {
            OPERATION_NAME: "invoke_agent",
            PROVIDER_NAME: provider,
            AGENT_NAME: run.agent,
            REQUEST_MODEL: run.model.model_id,
        }
        if run.conversation_id:
            attributes[CONVERSATION_ID] = run.conversation_id
        telemetry = self._telemetry
        span: Span | None = telemetry.tracer.start_span(
            f"invoke_agent {run.agent}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        assert span is not None
        measured = telemetry.instruments.enabled
        if not span.is_recording():
            span = None
            if not measured:
                return None
        scope = RunScope(telemetry, run, span, parent, provider, measured)
        run.state = scope
        return scope

    def model_call(self, call: ModelCallInfo) -> ChatScope | None:
        run: RunScope | None = call.run.state
        return ChatScope(run, call) if run is not None else None

    def tool_call(self, call: ToolCallInfo) -> ToolScope | None:
        run: RunScope | None = call.run.state
        return ToolScope(run, call) if run is not None else None

    def note(self, note: RunNote) -> None:
        run: RunScope | None = note.run.state
        if run is None or run.span is None:
            return
        if note.kind == "steering":
            run.span.add_event(STEERING_EVENT, {"agentloop.cancelled_calls": note.cancelled})
            return
        attributes: Attributes = {
            "agentloop.policy.slot": note.slot,
            "agentloop.policy.name": note.source,
            "agentloop.policy.verdict": note.verdict,
        }
        if note.call_id is not None:
            attributes[TOOL_CALL_ID] = note.call_id
        if note.reason and self._telemetry.capture_content:
            attributes["agentloop.policy.reason"] = note.reason
        run.span.add_event(POLICY_EVENT, attributes)
