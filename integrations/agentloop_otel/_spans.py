"""The spans: ``invoke_agent`` around a run, ``chat`` around each model call attempt,
``execute_tool`` around each tool call; each current while its part runs, and measured.

A run's ``RunScope`` is its state (``RunInfo.state``): the run span's context, which is the
parent of the run's chat and tool spans, and the latest answer's chat span, which each tool
span links to. ``span`` is ``None`` throughout a run whose spans would not be recorded (no
tracer provider set up, or not sampled) while its metrics are.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Self

import anyio
from opentelemetry import context as otel_context, trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from agentloop import StopReason
from agentloop.secrets import redact

from . import _content as content
from ._names import (
    ABORT_EVENT,
    CACHE_CREATION_TOKENS,
    CACHE_READ_TOKENS,
    CONVERSATION_ID,
    ERROR_TYPE,
    FINISH_REASONS,
    INPUT_MESSAGES,
    INPUT_TOKENS,
    OPERATION_NAME,
    OUTPUT_MESSAGES,
    OUTPUT_TOKENS,
    PROVIDER_NAME,
    REASONING_TOKENS,
    REQUEST_MAX_TOKENS,
    REQUEST_MODEL,
    REQUEST_TEMPERATURE,
    RESPONSE_MODEL,
    RETRY_EVENT,
    STEERING_EVENT,
    SYSTEM_INSTRUCTIONS,
    TIME_TO_FIRST_CHUNK,
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_ID,
    TOOL_DEFINITIONS,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TOOL_TYPE,
    finish_reason,
    input_tokens,
    model_error_type,
)

if TYPE_CHECKING:
    from types import TracebackType

    from opentelemetry.trace import Span, SpanContext, Tracer
    from opentelemetry.util.types import AttributeValue

    from agentloop import AgentResult, AssistantMessage, Usage
    from agentloop.abc import ModelCallInfo, RunInfo, ToolCallInfo

    from ._metrics import Instruments

__all__ = ["Telemetry", "ChatScope", "RunScope", "ToolScope"]

Attributes = dict[str, "AttributeValue"]


def _error_status(description: str | None) -> Status:
    """An error status whose description holds no secret the process knows (a failure's text
    may quote a server that echoed one)."""
    return Status(StatusCode.ERROR, None if description is None else redact(description))


class Telemetry:
    """What the spans of one instrumentation share: where they go, and what they record."""

    __slots__ = ("capture_content", "instruments", "tracer")

    def __init__(self, tracer: Tracer, instruments: Instruments, capture_content: bool) -> None:
        self.tracer = tracer
        self.instruments = instruments
        self.capture_content = capture_content


def _exception_type(exc: BaseException) -> str:
    """``error.type`` for an exception: its class's fully qualified name."""
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _usage_attributes(usage: Usage, attributes: Attributes) -> None:
    attributes[INPUT_TOKENS] = input_tokens(usage)
    attributes[OUTPUT_TOKENS] = usage.output
    if usage.cache_read:
        attributes[CACHE_READ_TOKENS] = usage.cache_read
    if usage.cache_write:
        attributes[CACHE_CREATION_TOKENS] = usage.cache_write
    reasoning = usage.extra.get("reasoning_tokens")
    if reasoning:
        attributes[REASONING_TOKENS] = reasoning


class RunScope:
    """The ``invoke_agent`` span (``None`` when only metrics record) and the run's state."""

    __slots__ = (
        "answer",
        "base",
        "context",
        "info",
        "measured",
        "span",
        "start",
        "telemetry",
        "token",
    )

    def __init__(
        self,
        telemetry: Telemetry,
        info: RunInfo,
        span: Span | None,
        parent: otel_context.Context,
        provider: str,
        measured: bool,
    ) -> None:
        self.telemetry = telemetry
        self.info = info
        self.span = span
        self.measured = measured
        # The run's context: the parent of its chat and tool spans.
        self.context = trace.set_span_in_context(span, parent) if span is not None else parent
        # The attributes every measurement of the run shares.
        self.base: Attributes = {PROVIDER_NAME: provider, REQUEST_MODEL: info.model.model_id}
        self.answer: SpanContext | None = None  # the chat span of the latest answer
        self.token: object = None
        self.start = 0.0

    def __enter__(self) -> Self:
        self.start = time.perf_counter()
        if self.span is not None:
            self.token = otel_context.attach(self.context)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        elapsed = time.perf_counter() - self.start
        if self.token is not None:
            otel_context.detach(self.token)  # type: ignore[arg-type]
        result = self.info.result
        error_type = _run_error(result, exc)
        span = self.span
        if span is not None:
            attributes: Attributes = {}
            if result is not None:
                _usage_attributes(result.usage, attributes)
                attributes["agentloop.stop_reason"] = str(result.stop_reason)
                if result.stopped_by:
                    attributes["agentloop.stopped_by"] = result.stopped_by
            if (result is not None and result.stop_reason is StopReason.ABORTED) or (
                exc is not None and isinstance(exc, anyio.get_cancelled_exc_class())
            ):
                span.add_event(ABORT_EVENT)
            if error_type is not None:
                attributes[ERROR_TYPE] = error_type
                span.set_status(_error_status(result.error if result else None))
            span.set_attributes(attributes)
            span.end()
        if self.measured:
            measured: Attributes = {OPERATION_NAME: "invoke_agent", **self.base}
            if error_type is not None:
                measured[ERROR_TYPE] = error_type
            self.telemetry.instruments.duration.record(elapsed, measured)


def _run_error(result: AgentResult[Any] | None, exc: BaseException | None) -> str | None:
    if result is not None and result.stop_reason is StopReason.ERROR:
        return model_error_type(result.error_kind)
    if exc is not None and not isinstance(exc, anyio.get_cancelled_exc_class()):
        return _exception_type(exc)
    return None


class ChatScope:
    """A ``chat`` span around one model call attempt, and its measurements."""

    __slots__ = ("call", "run", "span", "start", "token")

    def __init__(self, run: RunScope, call: ModelCallInfo) -> None:
        self.run = run
        self.call = call
        self.span: Span | None = None
        self.token: object = None
        self.start = 0.0
        if run.span is None:
            return
        model_id = call.model.model_id
        attributes: Attributes = {
            OPERATION_NAME: "chat",
            PROVIDER_NAME: run.base[PROVIDER_NAME],
            REQUEST_MODEL: model_id,
            "agentloop.attempt": call.attempt,
        }
        conversation = run.info.conversation_id
        if conversation:
            attributes[CONVERSATION_ID] = conversation
        options = call.options
        if options.temperature is not None:
            attributes[REQUEST_TEMPERATURE] = options.temperature
        if options.max_tokens is not None:
            attributes[REQUEST_MAX_TOKENS] = options.max_tokens
        if run.telemetry.capture_content:
            request = call.request
            attributes[INPUT_MESSAGES] = content.input_messages(request.messages)
            if request.system_prompt:
                attributes[SYSTEM_INSTRUCTIONS] = content.system_instructions(request.system_prompt)
            if request.tools:
                attributes[TOOL_DEFINITIONS] = content.tool_definitions(request.tools)
        self.span = run.telemetry.tracer.start_span(
            f"chat {model_id}", context=run.context, kind=SpanKind.CLIENT, attributes=attributes
        )

    def __enter__(self) -> Self:
        self.start = time.perf_counter()
        if self.span is not None:
            self.token = otel_context.attach(trace.set_span_in_context(self.span, self.run.context))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        elapsed = time.perf_counter() - self.start
        if self.token is not None:
            otel_context.detach(self.token)  # type: ignore[arg-type]
        call, run = self.call, self.run
        message = call.message
        failed = message is not None and message.stop_reason is StopReason.ERROR
        error_type = model_error_type(message.error_kind) if failed and message else None
        if error_type is None and exc is not None:
            if not isinstance(exc, anyio.get_cancelled_exc_class()):
                error_type = _exception_type(exc)
        # Only what the response carried: a model the provider named, or the model of an
        # answer (the request's when the provider names none). A refused attempt (a 429)
        # named none.
        response_model = call.response_model
        if response_model is None and message is not None and not failed:
            response_model = message.model_id or call.model.model_id
        if self.span is not None:
            self._end_span(message, error_type, response_model, exc)
        if run.measured:
            self._measure(message, error_type, response_model, elapsed)

    def _end_span(
        self,
        message: AssistantMessage | None,
        error_type: str | None,
        response_model: str | None,
        exc: BaseException | None,
    ) -> None:
        span = self.span
        assert span is not None
        call = self.call
        attributes: Attributes = {}
        if response_model is not None:
            attributes[RESPONSE_MODEL] = response_model
        if call.first_chunk is not None:
            attributes[TIME_TO_FIRST_CHUNK] = max(call.first_chunk - self.start, 0.0)
        if message is not None:
            attributes[FINISH_REASONS] = [finish_reason(message.stop_reason, message.error_kind)]
            _usage_attributes(message.usage, attributes)
            if message.usage.estimated:
                attributes["agentloop.usage.estimated"] = True
            if self.run.telemetry.capture_content:
                attributes[OUTPUT_MESSAGES] = content.output_messages(message)
            if message.stop_reason is not StopReason.ERROR:
                self.run.answer = span.get_span_context()
        if call.retry_delay is not None:
            span.add_event(RETRY_EVENT, {"agentloop.retry.delay": call.retry_delay})
        if (message is not None and message.stop_reason is StopReason.ABORTED) or (
            exc is not None and isinstance(exc, anyio.get_cancelled_exc_class())
        ):
            span.add_event(ABORT_EVENT)
        if error_type is not None:
            attributes[ERROR_TYPE] = error_type
            description = message.error_message if message is not None else None
            span.set_status(_error_status(description))
        span.set_attributes(attributes)
        span.end()

    def _measure(
        self,
        message: AssistantMessage | None,
        error_type: str | None,
        response_model: str | None,
        elapsed: float,
    ) -> None:
        instruments = self.run.telemetry.instruments
        attributes: Attributes = {OPERATION_NAME: "chat", **self.run.base}
        if response_model is not None:
            attributes[RESPONSE_MODEL] = response_model
        if message is not None:
            usage = message.usage
            if usage.input or usage.output or usage.cache_read or usage.cache_write:
                instruments.record_usage(usage, attributes)
        if self.call.first_chunk is not None:
            instruments.first_chunk.record(max(self.call.first_chunk - self.start, 0.0), attributes)
        if error_type is not None:
            attributes[ERROR_TYPE] = error_type
        instruments.duration.record(elapsed, attributes)


class ToolScope:
    """An ``execute_tool`` span around one tool call, current in the call's task."""

    __slots__ = ("call", "run", "span", "start", "token")

    def __init__(self, run: RunScope, call: ToolCallInfo) -> None:
        self.run = run
        self.call = call
        self.span: Span | None = None
        self.token: object = None
        self.start = 0.0
        if run.span is None:
            return
        tool_call = call.call
        attributes: Attributes = {
            OPERATION_NAME: "execute_tool",
            TOOL_NAME: tool_call.name,
            TOOL_CALL_ID: tool_call.id,
            TOOL_TYPE: "function",
        }
        description = getattr(call.tool, "description", None)
        if description:
            attributes[TOOL_DESCRIPTION] = description
        if run.telemetry.capture_content:
            attributes[TOOL_CALL_ARGUMENTS] = content.json_text(call.arguments)
        links = [Link(run.answer)] if run.answer is not None else None
        self.span = run.telemetry.tracer.start_span(
            f"execute_tool {tool_call.name}",
            context=run.context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
        )

    def __enter__(self) -> Self:
        self.start = time.perf_counter()
        if self.span is not None:
            self.token = otel_context.attach(trace.set_span_in_context(self.span, self.run.context))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        elapsed = time.perf_counter() - self.start
        if self.token is not None:
            otel_context.detach(self.token)  # type: ignore[arg-type]
        call = self.call
        # Cancelled by steering or by an abort: not a failure of the tool, and not measured.
        cancelled = call.interrupted or exc is not None
        error_type, description = _tool_error(call, self.run.telemetry.capture_content)
        span = self.span
        if span is not None:
            if call.interrupted:
                span.add_event(STEERING_EVENT)
            elif exc is not None:
                span.add_event(ABORT_EVENT)
            if error_type is not None:
                span.set_attribute(ERROR_TYPE, error_type)
                span.set_status(_error_status(description))
            span.end()
        if self.run.measured and not cancelled:
            attributes: Attributes = {OPERATION_NAME: "execute_tool", TOOL_NAME: call.call.name}
            if error_type is not None:
                attributes[ERROR_TYPE] = error_type
            self.run.telemetry.instruments.tool_duration.record(elapsed, attributes)


def _tool_error(call: ToolCallInfo, capture: bool) -> tuple[str | None, str | None]:
    """``error.type`` and the status description of a tool call that failed."""
    exc = call.exception
    if exc is not None:
        kind = _exception_type(exc)
        return kind, f"{kind}: {exc}" if capture else kind
    if call.timed_out:
        return "timeout", "the tool call timed out"
    result = call.result
    if result is not None and result.is_error:
        return "tool_error", "the tool returned an error result"
    return None, None
