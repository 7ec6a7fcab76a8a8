"""An incremental decoder for AWS's ``application/vnd.amazon.eventstream`` binary framing.

Bedrock's streaming APIs (ConverseStream among them) answer with a sequence of binary
messages. Each message is laid out as::

    total length     uint32, big-endian, counts every byte of the message
    headers length   uint32, big-endian
    prelude CRC32    uint32, CRC32 of the eight bytes above
    headers          name length (uint8), name (UTF-8), value type (uint8), value
    payload          total length - headers length - 16 bytes
    message CRC32    uint32, CRC32 of everything before it

Bytes arrive in arbitrary pieces; ``EventStreamDecoder.feed`` buffers them and returns every
message completed so far. A bad checksum, an impossible length or a stream that ends inside a
message raises ``EventStreamError``: a corrupt frame is never passed on as data. A message whose
prelude announces more than ``max_message_bytes`` raises ``FrameTooLarge`` before any of it is
buffered, so the buffer never holds more than one message and one network read.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from typing import Any

from ._frames import DEFAULT_MAX_EVENT_BYTES, FrameTooLarge

__all__ = ["EventStreamDecoder", "EventStreamError", "EventStreamMessage", "encode_message"]

_PRELUDE = struct.Struct(">III")
_PRELUDE_LEN = 12
_CRC_LEN = 4
_MIN_MESSAGE = _PRELUDE_LEN + _CRC_LEN
# The service's own limit on headers (its limit on a message, 16 MiB, is the default cap).
_MAX_HEADERS = 128 * 1024
_HEADER_CACHE = 64

_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

HeaderValue = bool | int | bytes | str | uuid.UUID


class EventStreamError(ValueError):
    """The byte stream is not valid event-stream framing (bad CRC, bad length, truncated)."""


class EventStreamMessage:
    """One decoded message: its headers (name to value) and raw payload bytes."""

    __slots__ = ("headers", "payload")

    def __init__(self, headers: dict[str, HeaderValue], payload: bytes) -> None:
        self.headers = headers
        self.payload = payload

    @property
    def message_type(self) -> str:
        """``event``, ``exception`` or ``error`` (the ``:message-type`` header)."""
        value = self.headers.get(":message-type", "event")
        return value if isinstance(value, str) else "event"

    @property
    def event_type(self) -> str | None:
        """The ``:event-type`` header (for events) or ``:exception-type`` (for exceptions)."""
        for name in (":event-type", ":exception-type"):
            value = self.headers.get(name)
            if isinstance(value, str):
                return value
        return None

    def __repr__(self) -> str:
        return f"EventStreamMessage(headers={self.headers!r}, payload={self.payload[:60]!r})"


def _decode_headers(raw: bytes | memoryview) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    view = memoryview(raw)
    pos, end = 0, len(view)
    try:
        while pos < end:
            name_len = view[pos]
            pos += 1
            if name_len == 0 or pos + name_len >= end:
                raise EventStreamError("header name is empty or runs past the header block")
            name = bytes(view[pos : pos + name_len]).decode("utf-8")
            pos += name_len
            kind = view[pos]
            pos += 1
            value: HeaderValue
            if kind == 0:
                value = True
            elif kind == 1:
                value = False
            elif kind == 2:
                value = _I8.unpack_from(view, pos)[0]
                pos += 1
            elif kind == 3:
                value = _I16.unpack_from(view, pos)[0]
                pos += 2
            elif kind == 4:
                value = _I32.unpack_from(view, pos)[0]
                pos += 4
            elif kind in (5, 8):  # long; timestamp (milliseconds since the epoch)
                value = _I64.unpack_from(view, pos)[0]
                pos += 8
            elif kind in (6, 7):  # byte array; string
                length = _U16.unpack_from(view, pos)[0]
                pos += 2
                if pos + length > end:
                    raise EventStreamError(f"header {name!r} value runs past the header block")
                data = bytes(view[pos : pos + length])
                pos += length
                value = data if kind == 6 else data.decode("utf-8")
            elif kind == 9:
                if pos + 16 > end:
                    raise EventStreamError(f"header {name!r} value runs past the header block")
                value = uuid.UUID(bytes=bytes(view[pos : pos + 16]))
                pos += 16
            else:
                raise EventStreamError(f"header {name!r} has unknown value type {kind}")
            if pos > end:
                raise EventStreamError(f"header {name!r} value runs past the header block")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise EventStreamError(f"malformed event-stream headers: {exc}") from exc
    return headers


class EventStreamDecoder:
    """Turns a byte stream, fed in pieces of any size, into ``EventStreamMessage`` values.

    Args:
        max_message_bytes: the largest message accepted (16 MiB by default, as the service).
    """

    __slots__ = ("_buffer", "_headers", "_max_message", "_offset")

    def __init__(self, *, max_message_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._max_message = max_message_bytes
        self._buffer = bytearray()
        self._offset = 0
        # A stream repeats a handful of header blocks (one per event type): decode each once.
        self._headers: dict[bytes, dict[str, HeaderValue]] = {}

    def feed(self, data: bytes) -> list[EventStreamMessage]:
        """Add ``data``; return every message it completed, in order.

        Raises:
            EventStreamError: a length is impossible or a CRC32 does not match.
            FrameTooLarge: a message announces more than ``max_message_bytes``.
        """
        buf = self._buffer
        buf += data
        out: list[EventStreamMessage] = []
        offset = self._offset
        while len(buf) - offset >= _PRELUDE_LEN:
            total, headers_len, prelude_crc = _PRELUDE.unpack_from(buf, offset)
            if zlib.crc32(memoryview(buf)[offset : offset + 8]) != prelude_crc:
                raise EventStreamError("event-stream prelude CRC32 mismatch (corrupt frame)")
            if total < _MIN_MESSAGE:
                raise EventStreamError(f"event-stream message length {total} is out of range")
            if total > self._max_message:
                raise FrameTooLarge("an event-stream message", self._max_message)
            if headers_len > _MAX_HEADERS or headers_len > total - _MIN_MESSAGE:
                raise EventStreamError(f"event-stream headers length {headers_len} is invalid")
            if len(buf) - offset < total:
                break
            view = memoryview(buf)
            try:
                body_end = offset + total - _CRC_LEN
                (message_crc,) = _U32.unpack_from(view, body_end)
                if zlib.crc32(view[offset:body_end]) != message_crc:
                    raise EventStreamError("event-stream message CRC32 mismatch (corrupt frame)")
                headers_start = offset + _PRELUDE_LEN
                raw = bytes(view[headers_start : headers_start + headers_len])
                known = self._headers.get(raw)
                if known is None:
                    known = _decode_headers(raw)
                    if len(self._headers) < _HEADER_CACHE:
                        self._headers[raw] = known
                headers = dict(known)
                payload = bytes(view[headers_start + headers_len : body_end])
            finally:
                view.release()
            out.append(EventStreamMessage(headers, payload))
            offset += total
        # Compact only once in a while, so a long stream costs no quadratic copying.
        if offset and offset >= len(buf) // 2:
            del buf[:offset]
            offset = 0
        self._offset = offset
        return out

    @property
    def pending(self) -> int:
        """Bytes received that do not yet form a whole message."""
        return len(self._buffer) - self._offset

    def close(self) -> None:
        """Declare the end of the byte stream.

        Raises:
            EventStreamError: the stream ended inside a message (truncated frame).
        """
        if self.pending:
            raise EventStreamError(
                f"event stream truncated: {self.pending} bytes of an unfinished message at the end"
            )


def _encode_header(name: str, value: HeaderValue) -> bytes:
    raw_name = name.encode("utf-8")
    out = _U8.pack(len(raw_name)) + raw_name
    if value is True:
        return out + b"\x00"
    if value is False:
        return out + b"\x01"
    if isinstance(value, int):
        return out + b"\x05" + _I64.pack(value)
    if isinstance(value, bytes):
        return out + b"\x06" + _U16.pack(len(value)) + value
    if isinstance(value, str):
        data = value.encode("utf-8")
        return out + b"\x07" + _U16.pack(len(data)) + data
    return out + b"\x09" + value.bytes


def encode_message(headers: dict[str, Any], payload: bytes) -> bytes:
    """Frame one message (used by tests and local fakes of the service).

    Integers are encoded as 64-bit longs, ``bytes`` as byte arrays, ``str`` as strings.
    """
    raw_headers = b"".join(_encode_header(k, v) for k, v in headers.items())
    total = _MIN_MESSAGE + len(raw_headers) + len(payload)
    prelude = struct.pack(">II", total, len(raw_headers))
    body = prelude + _U32.pack(zlib.crc32(prelude)) + raw_headers + payload
    return body + _U32.pack(zlib.crc32(body))
