"""Fake providers for tests and demos, in the spirit of httpx's ``MockTransport``.

``ScriptedStream`` plays back a script: on each call it streams the next scripted reply as
start/delta/end events in small chunks. ``FunctionStream`` computes each reply from the context.
Replies are ``AssistantMessage`` values; helpers build the common ones::

    model = ScriptedStream([
        reply_tool_calls(("add", {"a": 1, "b": 2})),
        reply_text("3"),
    ])

For provider authors, ``check_stream_fn`` is a conformance check of a ``StreamFn`` (event
grammar, text/tool/thinking scripts, typed errors, closing and cancellation); it raises
``ConformanceError`` listing every problem. Run it in your tests against your provider pointed
at a fake server (or the real API)::

    report = await check_stream_fn(
        MyProvider(base_url=fake_server_url),
        ModelSpec(provider="mine", model_id="m"),
        thinking=True,                                  # if the model shows its reasoning
        error_options=StreamOptions(api_key="bad-key"), # a call that must fail, typed
    )
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeAlias

import anyio
import msgspec

from ._conformance import (
    ConformanceError as ConformanceError,
    ConformanceReport as ConformanceReport,
    check_stream_fn as check_stream_fn,
)
from ._stream import (
    AssistantMessageEvent,
    Done,
    ErrorEvent,
    ExtensionBlock,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ._types import (
    AssistantMessage,
    Cost,
    ErrorKind,
    Extension,
    LlmContext,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
    ToolCall,
    Usage,
)

__all__ = [
    "ConformanceError",
    "ConformanceReport",
    "FunctionStream",
    "RecordedCall",
    "ScriptItem",
    "ScriptedStream",
    "check_stream_fn",
    "events_for",
    "reply_error",
    "reply_text",
    "reply_tool_calls",
]

Reply: TypeAlias = AssistantMessage | ErrorEvent
ScriptItem: TypeAlias = (
    AssistantMessage
    | ErrorEvent
    | BaseException
    | Sequence[AssistantMessageEvent]
    | Callable[[LlmContext], "Reply | Awaitable[Reply]"]
)
"""One answer of a ``ScriptedStream``: a message, an error event, an exception the stream
raises, a raw list of provider events (for malformed streams), or a function of the context."""

_encode = msgspec.json.encode
_NO_COST = Cost()


def reply_text(text: str, *, usage: Usage | None = None) -> AssistantMessage:
    """An answer that is just ``text`` and stops."""
    return AssistantMessage(content=[Text(text=text)], usage=usage or Usage())


def reply_tool_calls(
    *calls: tuple[str, Any] | ToolCall, text: str | None = None, usage: Usage | None = None
) -> AssistantMessage:
    """An answer calling tools: each call is ``(name, arguments)`` or a ``ToolCall``.

    Calls given as tuples get ids ``call_1``, ``call_2``, ... in order.
    """
    content: list[Any] = [] if text is None else [Text(text=text)]
    for i, call in enumerate(calls, 1):
        if isinstance(call, ToolCall):
            content.append(call)
        else:
            content.append(ToolCall(id=f"call_{i}", name=call[0], arguments=call[1]))
    return AssistantMessage(
        content=content, stop_reason=StopReason.TOOL_USE, usage=usage or Usage()
    )


def reply_error(
    kind: ErrorKind = ErrorKind.OTHER,
    message: str = "scripted failure",
    *,
    retry_after: float | None = None,
) -> ErrorEvent:
    """A model call that fails with a classified error."""
    return ErrorEvent(kind=kind, message=message, retry_after=retry_after)


def _chunks(text: str, size: int) -> Iterable[str]:
    if not text:
        return ("",)
    return (text[i : i + size] for i in range(0, len(text), size))


def events_for(message: AssistantMessage, *, chunk_size: int = 8) -> list[AssistantMessageEvent]:
    """The event sequence a well-behaved provider would send for ``message``."""
    events: list[AssistantMessageEvent] = [
        StreamStart(provider=message.provider or None, model_id=message.model_id or None)
    ]
    for index, block in enumerate(message.content):
        if isinstance(block, Text):
            events.append(TextStart(index=index))
            events.extend(TextDelta(index=index, delta=c) for c in _chunks(block.text, chunk_size))
            events.append(TextEnd(index=index))
        elif isinstance(block, Thinking):
            events.append(
                ThinkingStart(
                    index=index, redacted=block.redacted, data=block.data, meta=block.meta
                )
            )
            if block.thinking:
                events.extend(
                    ThinkingDelta(index=index, delta=c) for c in _chunks(block.thinking, chunk_size)
                )
            events.append(ThinkingEnd(index=index, signature=block.signature))
        elif isinstance(block, ToolCall):
            events.append(
                ToolCallStart(
                    index=index,
                    id=block.id,
                    name=block.name,
                    signature=block.signature,
                    meta=block.meta,
                )
            )
            raw = (
                block.partial_json
                if block.partial_json is not None
                else _encode(block.arguments).decode()
            )
            events.extend(ToolCallDelta(index=index, delta=c) for c in _chunks(raw, chunk_size))
            events.append(ToolCallEnd(index=index))
        elif isinstance(block, Extension):
            events.append(ExtensionBlock(index=index, type_name=block.type_name, data=block.data))
    if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
        events.append(
            ErrorEvent(
                kind=message.error_kind or ErrorKind.OTHER,
                message=message.error_message or "scripted failure",
                stop_reason=message.stop_reason,
                usage=message.usage,
            )
        )
    else:
        # A zero cost means "not reported", so that the model's pricing can fill it in.
        cost = None if message.cost == _NO_COST else message.cost
        events.append(Done(stop_reason=message.stop_reason, usage=message.usage, cost=cost))
    return events


class RecordedCall(msgspec.Struct, frozen=True, kw_only=True):
    """One call a fake provider received (the context copied as it was)."""

    model: ModelSpec
    context: LlmContext
    options: StreamOptions


class _FakeBase:
    def __init__(self, *, chunk_size: int, delay: float) -> None:
        self.chunk_size = chunk_size
        self.delay = delay
        self.calls: list[RecordedCall] = []

    def _record(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> None:
        snapshot = LlmContext(
            system_prompt=context.system_prompt,
            messages=list(context.messages),
            tools=list(context.tools),
        )
        self.calls.append(RecordedCall(model=model, context=snapshot, options=options))

    async def _play(self, item: Any, context: LlmContext) -> AsyncIterator[AssistantMessageEvent]:
        if callable(item) and not isinstance(item, AssistantMessage | ErrorEvent):
            item = item(context)
            if inspect.isawaitable(item):
                item = await item
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ErrorEvent):
            events: Sequence[AssistantMessageEvent] = (item,)
        elif isinstance(item, AssistantMessage):
            events = events_for(item, chunk_size=self.chunk_size)
        else:
            events = item
        delay = self.delay
        for event in events:
            if delay:
                await anyio.sleep(delay)
            yield event


class ScriptedStream(_FakeBase):
    """A ``StreamFn`` that plays back ``script``, one item per call.

    Items may be ``AssistantMessage`` replies, ``ErrorEvent`` failures, exceptions (raised by
    the stream), raw event sequences (for malformed streams), or callables receiving the
    context and returning (or awaiting) a reply. ``delay`` seconds pass before each event.
    When the script runs out, the call fails with an ``ErrorEvent`` saying so.

    Attributes:
        calls: every call received, with a copy of its context.
    """

    def __init__(
        self, script: Iterable[ScriptItem], *, chunk_size: int = 8, delay: float = 0.0
    ) -> None:
        super().__init__(chunk_size=chunk_size, delay=delay)
        self.script: list[ScriptItem] = list(script)
        self._next = 0

    @property
    def remaining(self) -> int:
        """How many scripted items have not been played yet."""
        return len(self.script) - self._next

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self._record(model, context, options)
        if self._next >= len(self.script):
            item: Any = ErrorEvent(kind=ErrorKind.OTHER, message="ScriptedStream: script exhausted")
        else:
            item = self.script[self._next]
            self._next += 1
        return self._play(item, context)


class FunctionStream(_FakeBase):
    """A ``StreamFn`` whose every reply is computed by ``fn(context)`` (sync or async)."""

    def __init__(
        self,
        fn: Callable[[LlmContext], Reply | Awaitable[Reply]],
        *,
        chunk_size: int = 8,
        delay: float = 0.0,
    ) -> None:
        super().__init__(chunk_size=chunk_size, delay=delay)
        self.fn = fn

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self._record(model, context, options)
        return self._play(self.fn, context)
