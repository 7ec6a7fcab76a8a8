"""Where untrusted frames become events: the decoder and parser protocols, made total.

A ``FrameDecoder`` cuts a response body into frames and an adapter's ``StreamParser`` turns
each frame into ``AssistantMessageEvent`` values. Both read bytes from outside, so whatever
they raise (a ``KeyError`` for a missing field, a ``TypeError`` or ``AttributeError`` for a
value of the wrong type, a ``RecursionError`` for nesting too deep, ``FrameTooLarge`` past a
size cap) is turned here into one closing ``ErrorEvent``; and every event they make is checked
to be well-typed (``checked_event``) before it leaves. ``events_of`` and ``tail_of`` are total
over any bytes: ``HttpProvider`` never sees an exception from an adapter's parsing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from agentloop import AgentError, ErrorKind
from agentloop.stream import (
    AssistantMessageEvent,
    Done,
    ErrorEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ToolCallDelta,
)

from ._frames import FrameTooLarge
from ._ndjson import NDJSONError
from ._secrets import excerpt

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "FrameDecoder",
    "ProtocolError",
    "StreamParser",
    "checked_event",
    "events_of",
    "malformed",
    "tail_of",
]

_MAX_SHOWN = 500  # characters of a failure's own words shown in an error message


class ProtocolError(AgentError):
    """Raised by a parser for a stream that breaks its provider's protocol."""


# Failures that say what is wrong in their own words.
_MALFORMED = (ProtocolError, NDJSONError, msgspec.DecodeError)
# Failures of a frame the body ended in the middle of.
_CUT = (ProtocolError, NDJSONError, msgspec.DecodeError, ValueError)


class FrameDecoder(Protocol):
    """Turns body bytes into frames (SSE events, JSON lines, binary messages)."""

    def feed(self, chunk: bytes) -> list[Any]:
        """The frames ``chunk`` completed.

        Raises:
            ValueError: bytes that cannot be framed (the call ends as a malformed stream).
        """
        ...

    def close(self) -> list[Any]:
        """The body ended: any frame still pending."""
        ...


class StreamParser(Protocol):
    """Turns frames into ``AssistantMessageEvent`` values; one parser per call.

    ``feed`` raises ``ProtocolError`` (or ``msgspec.DecodeError``) for a malformed frame; any
    other exception it lets out is reported the same way (``events_of``), as a malformed
    stream, so a parser need not guard every access against values of the wrong type.
    ``end`` is called when the body ended without a terminal event: it returns the events that
    finish the message (an adapter tolerant of a missing sentinel returns ``Done``) or nothing,
    in which case the call ends as a ``network`` error ("stream cut short").
    """

    def feed(self, frame: Any) -> list[AssistantMessageEvent]:
        """The events one frame gives (often none, sometimes several).

        Raises:
            ProtocolError: a malformed frame (or anything else: see above).
            msgspec.DecodeError: a frame that is not valid JSON.
        """
        ...

    def end(self) -> list[AssistantMessageEvent]:
        """The body ended without a terminal event: the events that finish it, if any."""
        ...


# Events whose only field is their block's index: a check of it is the whole check.
_INDEX_ONLY = frozenset({TextStart, TextEnd})


def checked_event(event: Any) -> AssistantMessageEvent:
    """``event`` itself if it is a well-typed ``AssistantMessageEvent``.

    Parsers build events from untrusted JSON, and ``msgspec.Struct`` constructors do not check
    types: a number where the protocol has a string would otherwise travel on as an ill-typed
    delta. Deltas, nearly every event of a stream, take a two-check path; the others are
    checked field by field through a ``msgspec`` round trip.

    Raises:
        ProtocolError: ``event`` is not an event, or a field has the wrong type.
    """
    cls = type(event)
    if cls is TextDelta or cls is ThinkingDelta or cls is ToolCallDelta:
        if type(event.index) is int and type(event.delta) is str:
            return event  # type: ignore[no-any-return]
    elif cls in _INDEX_ONLY:
        if type(event.index) is int:
            return event  # type: ignore[no-any-return]
    elif cls is StreamStart:
        provider, model_id = event.provider, event.model_id
        if (provider is None or type(provider) is str) and (
            model_id is None or type(model_id) is str
        ):
            return event  # type: ignore[no-any-return]
    try:
        msgspec.convert(msgspec.to_builtins(event), AssistantMessageEvent)
    except (msgspec.ValidationError, TypeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"{cls.__name__} of the wrong shape: {exc}") from None
    return event  # type: ignore[no-any-return]


def events_of(
    name: str, decoder: FrameDecoder, parser: StreamParser, chunk: bytes
) -> Iterator[AssistantMessageEvent]:
    """The events ``chunk`` completes, up to a terminal one, each as soon as it is parsed (the
    first token of a large read is not kept waiting for the rest of it).

    Total over any bytes: whatever the decoder or the parser raises, and an event of the
    wrong shape, becomes a closing ``other`` error (after the events before it).
    """
    frames = getattr(decoder, "iter_feed", None)
    try:
        if frames is None:
            items: Any = decoder.feed(chunk)
        else:
            # A parser with a fast path for a one-line event takes it raw (see ``SSEDecoder``).
            items = frames(chunk, getattr(parser, "feed_data", None))
        for frame in items:
            for event in frame if type(frame) is list else parser.feed(frame):
                yield checked_event(event)
                cls = type(event)
                if cls is Done or cls is ErrorEvent:
                    return
    except Exception as exc:  # noqa: BLE001 (parsers of untrusted bytes are total)
        yield malformed(name, exc)


def tail_of(name: str, decoder: FrameDecoder, parser: StreamParser) -> list[AssistantMessageEvent]:
    """The body ended: the events of a frame still pending, then the parser's last word."""
    events: list[AssistantMessageEvent] = []
    try:
        for frame in decoder.close():
            events.extend(checked_event(event) for event in parser.feed(frame))
    except _CUT:
        events = []  # the body stopped in the middle of a frame: a cut stream, not a bad one
    except Exception as exc:  # noqa: BLE001 (parsers of untrusted bytes are total)
        return [*events, malformed(name, exc)]
    try:
        events.extend(checked_event(event) for event in parser.end())
    except Exception as exc:  # noqa: BLE001
        events.append(malformed(name, exc))
    return events


def malformed(name: str, exc: Exception) -> ErrorEvent:
    """The error for a frame the adapter could not use: bad JSON, or a shape the protocol
    does not allow (a missing field surfaces as ``KeyError``, a wrong type as ``TypeError``
    or ``AttributeError``, deep nesting as ``RecursionError``)."""
    if isinstance(exc, FrameTooLarge):
        return ErrorEvent(kind=ErrorKind.OTHER, message=f"{name}: the server sent {exc}")
    what = str(exc) if isinstance(exc, _MALFORMED) else f"{type(exc).__name__}: {exc}"
    what = excerpt(what, _MAX_SHOWN)
    return ErrorEvent(kind=ErrorKind.OTHER, message=f"{name}: malformed stream: {what}")
