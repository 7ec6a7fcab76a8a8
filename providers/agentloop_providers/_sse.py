"""An incremental Server-Sent Events parser over a response's byte stream.

Follows the WHATWG "event stream interpretation" rules: lines end in CRLF, LF or CR (a CR at
the end of one chunk and an LF at the start of the next are one line ending); a line starting
with ``:`` is a comment (keep-alive); ``field: value`` loses one leading space from the value;
``data`` lines join with ``\\n``; a blank line dispatches the event, unless no data arrived.
One deliberate difference: the spec discards an event the stream ends before its blank line;
``close()`` dispatches it (recordings and some servers end that way, and the event is usually
the terminal one). Application-level sentinels such as OpenAI's ``[DONE]`` are the adapters'
business, not the parser's.

The parser works on bytes and decodes UTF-8 once per event: it never has to care about a
multi-byte character split between two network reads, because line endings are ASCII.

Bounded and linear: an unterminated line may grow to ``max_line_bytes`` and the ``data`` of one
event to ``max_event_bytes`` (each ``data`` line counted with the bookkeeping it costs, so the
cap bounds memory, not only text); past either, ``feed`` raises ``FrameTooLarge``. Every byte
is looked at a bounded number of times, however the stream is cut into chunks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ._frames import DEFAULT_MAX_EVENT_BYTES, SLICE_BYTES, FrameTooLarge, slices

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    DataHandler = Callable[[str, bytes], "list[Any] | None"]
    """Offered an event's name and its one ``data:`` line, raw: a parser's fast path."""

__all__ = ["SSEDecoder", "ServerSentEvent"]

_BOM = b"\xef\xbb\xbf"
_LINE_COST = 48  # what holding one more data line costs besides its bytes (object, list slot)
_MAX_RETRY_DIGITS = 10


class ServerSentEvent(msgspec.Struct, gc=False):
    """One dispatched event.

    Attributes:
        event: the ``event:`` name, ``"message"`` when none was sent.
        data: the ``data:`` lines joined with ``\\n``.
        id: the last event id seen on the stream so far ("" when none), as the spec defines.
        retry: the reconnection time in milliseconds, when this event carried a ``retry:``.
    """

    # A struct, not a class with an ``__init__``: one is made per event of every stream.
    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None


class SSEDecoder:
    """Feed it the body's bytes as they arrive; it returns the events each chunk completed.

    Example::

        decoder = SSEDecoder()
        async for chunk in response.aiter_bytes():
            for event in decoder.feed(chunk):
                ...
        decoder.close()   # the events a well-formed stream still owed (none, by the spec)

    Args:
        max_line_bytes: the longest line accepted (16 MiB by default).
        max_event_bytes: the most ``data`` one event may gather (16 MiB by default).
    """

    __slots__ = (
        "_data",
        "_data_size",
        "_event",
        "_last_id",
        "_max_event",
        "_max_line",
        "_pending",
        "_pending_size",
        "_retry",
        "_skip_lf",
        "_started",
    )

    def __init__(
        self,
        *,
        max_line_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        self._max_line = max_line_bytes
        self._max_event = max_event_bytes
        self._pending: list[bytes] = []  # pieces of an unterminated line, joined once it ends
        self._pending_size = 0
        self._skip_lf = False  # the previous chunk ended in CR: an LF now is the same ending
        self._started = False  # the BOM check is done
        self._data: list[bytes] = []
        self._data_size = 0
        self._event: bytes = b""
        self._last_id = ""
        self._retry: int | None = None

    @property
    def last_event_id(self) -> str:
        """The id to send as ``Last-Event-ID`` when reconnecting."""
        return self._last_id

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Parse ``chunk``; return the events it completed, in order.

        Raises:
            FrameTooLarge: a line or an event passed its cap.
        """
        return list(self.iter_feed(chunk))  # type: ignore[arg-type]  # (no handler: events)

    def iter_feed(
        self, chunk: bytes, handle: DataHandler | None = None
    ) -> Iterator[ServerSentEvent | list[Any]]:
        """``feed``, one event at a time: the first event of a large read is handed on before
        the rest of the read is parsed (what a caller waiting for the first token notices).

        ``handle(event, data)``, when given, is offered each event that is one ``data:`` line
        (with or without an ``event:`` line) as raw bytes, before any ``ServerSentEvent`` is
        made: what it returns (a list: the parser's events for it) is yielded instead; ``None``
        means the event takes the usual path.

        Raises:
            FrameTooLarge: a line or an event passed its cap.
        """
        if len(chunk) > SLICE_BYTES:
            for piece in slices(chunk):
                yield from self._events(piece, handle)
        else:
            yield from self._events(chunk, handle)

    def _events(
        self, chunk: bytes, handle: DataHandler | None = None
    ) -> Iterator[ServerSentEvent | list[Any]]:
        if not self._started and not self._pending and len(chunk) >= len(_BOM):
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        if (
            self._started
            and not self._pending
            and not self._data
            and not self._event
            and not self._skip_lf
            and b"\r" not in chunk
        ):
            # The usual stream, between two events: its complete events are split apart at
            # once, and each that is one "data: ..." line is made with no line-by-line work.
            # Any other event takes the general path below, whole; so does the last,
            # incomplete one.
            end = chunk.rfind(b"\n\n")
            if end >= 0:
                max_line = self._max_line
                for part in chunk[:end].split(b"\n\n"):
                    if len(part) > max_line:
                        yield from self._lines([*part.split(b"\n"), b""])  # (it raises)
                    elif part.startswith(b"data: ") and b"\n" not in part:
                        handled = None if handle is None else handle("message", part[6:])
                        if handled is not None:
                            yield handled
                        else:
                            yield ServerSentEvent(
                                "message", part[6:].decode("utf-8", "replace"), self._last_id
                            )
                    elif part.startswith(b"event: ") and part.count(b"\n") == 1:
                        name, _, data = part.partition(b"\n")
                        if data.startswith(b"data: ") and len(name) > 7:
                            event = name[7:].decode("utf-8", "replace")
                            handled = None if handle is None else handle(event, data[6:])
                            if handled is not None:
                                yield handled
                            else:
                                yield ServerSentEvent(
                                    event, data[6:].decode("utf-8", "replace"), self._last_id
                                )
                        else:
                            yield from self._lines([name, data, b""])
                    elif part:
                        yield from self._lines([*part.split(b"\n"), b""])
                chunk = chunk[end + 2 :]
                if not chunk:
                    return
        yield from self._lines(self._split(chunk))

    def _split(self, chunk: bytes) -> list[bytes]:
        """The complete lines of ``chunk`` (with what came before); the rest is held."""
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if not self._started:
            chunk = b"".join(self._pending) + chunk
            self._pending = []
            if len(chunk) < 3 and _BOM.startswith(chunk):
                if chunk:
                    self._pending.append(chunk)
                return []
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        if not chunk:
            return []
        if b"\r" in chunk:
            if chunk[-1] == 0x0D:
                self._skip_lf = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:
            self._hold(chunk)  # joined once, however many chunks a line spans
            return []
        lines = chunk.split(b"\n")
        if self._pending:
            self._hold(lines[0])
            lines[0] = b"".join(self._pending)
            self._pending = []
            self._pending_size = 0
        last = lines.pop()
        if last:
            self._hold(last)
        return lines

    def _hold(self, piece: bytes) -> None:
        self._pending_size += len(piece)
        if self._pending_size > self._max_line:
            raise FrameTooLarge("a server-sent event line", self._max_line)
        self._pending.append(piece)

    def close(self) -> list[ServerSentEvent]:
        """The body ended: dispatch an event still waiting for its closing blank line.

        The spec discards such an event; recorded streams (and some servers) end their last
        event without the blank line, so it is dispatched here. A body cut in the middle of a
        line yields that partial line as data, which the adapter's JSON decoding rejects.
        """
        partial = b"".join(self._pending)
        self._pending = []
        self._pending_size = 0
        out = list(self._lines([partial, b""] if partial else [b""]))
        self._event = b""
        return out

    def _lines(self, lines: list[bytes]) -> Iterator[ServerSentEvent]:
        data = self._data
        max_line = self._max_line
        for line in lines:
            if len(line) > max_line:
                raise FrameTooLarge("a server-sent event line", max_line)
            if not line:
                if data:
                    yield self._dispatch()
                    data = self._data
                else:
                    self._event = b""
                continue
            # The hot path: nearly every line of a model stream is "data: ...".
            if line.startswith(b"data:"):
                value = line[6:] if line[5:6] == b" " else line[5:]
                self._data_size += len(value) + _LINE_COST
                if self._data_size > self._max_event:
                    raise FrameTooLarge("a server-sent event", self._max_event)
                data.append(value)
                continue
            if line[0] == 0x3A:  # ":" comment, used as a keep-alive
                continue
            name, sep, value = line.partition(b":")
            if sep and value[:1] == b" ":
                value = value[1:]
            if name == b"event":
                self._event = value
            elif name == b"data":  # "data" with no colon: an empty data line
                self._data_size += _LINE_COST
                if self._data_size > self._max_event:
                    raise FrameTooLarge("a server-sent event", self._max_event)
                data.append(value)
            elif name == b"id":
                if b"\x00" not in value:
                    self._last_id = value.decode("utf-8", "replace")
            elif name == b"retry":
                if value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:
                    self._retry = int(value)
            # Any other field is ignored, as the spec says.

    def _dispatch(self) -> ServerSentEvent:
        data = self._data
        text = (data[0] if len(data) == 1 else b"\n".join(data)).decode("utf-8", "replace")
        event = self._event.decode("utf-8", "replace") if self._event else "message"
        sse = ServerSentEvent(event, text, self._last_id, self._retry)
        self._data = []
        self._data_size = 0
        self._event = b""
        self._retry = None
        return sse
