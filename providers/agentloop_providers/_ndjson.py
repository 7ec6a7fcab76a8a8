"""An incremental newline-delimited JSON parser over a response's byte stream.

Each line is one JSON value. Lines may end in LF or CRLF; blank lines are skipped; the last line
may lack its newline (a non-streaming JSON body is a one-line NDJSON stream).

Linear and bounded: the pieces of a line still arriving are kept in a list and joined once, when
its newline comes (however many reads it spans), and a line longer than ``max_line_bytes``
raises ``FrameTooLarge`` as soon as it passes the cap.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

import msgspec

from agentloop import AgentError

from ._frames import DEFAULT_MAX_EVENT_BYTES, SLICE_BYTES, FrameTooLarge, slices
from ._secrets import excerpt

__all__ = ["NDJSONDecoder", "NDJSONError"]

T = TypeVar("T")

# Decoding failures of an untrusted line: bad JSON, bad UTF-8, nesting deeper than msgspec goes.
_UNDECODABLE = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


class NDJSONError(AgentError, ValueError):
    """A line that is not valid JSON (or not of the expected type)."""

    def __init__(self, message: str, line: bytes) -> None:
        super().__init__(message)
        self.line = line


class NDJSONDecoder(Generic[T]):
    """Feed it the body's bytes as they arrive; it returns the values each chunk completed.

    ``type`` is any type msgspec can decode into (``Any`` by default); decoding straight into a
    ``msgspec.Struct`` skips building dicts.

    Args:
        type: what each line decodes into.
        max_line_bytes: the longest line accepted (16 MiB by default).

    Raises:
        NDJSONError: from ``feed``/``close``, for a line that does not decode.
        FrameTooLarge: from ``feed``, for a line longer than ``max_line_bytes``.
    """

    __slots__ = ("_decode", "_max_line", "_pending", "_pending_size")

    @overload
    def __init__(self: NDJSONDecoder[Any], *, max_line_bytes: int = ...) -> None: ...

    @overload
    def __init__(self, type: type[T], *, max_line_bytes: int = ...) -> None: ...  # noqa: A002

    def __init__(  # noqa: A002
        self, type: Any = Any, *, max_line_bytes: int = DEFAULT_MAX_EVENT_BYTES
    ) -> None:
        self._decode = msgspec.json.Decoder(type).decode
        self._max_line = max_line_bytes
        self._pending: list[bytes] = []  # pieces of an unterminated line
        self._pending_size = 0

    def feed(self, chunk: bytes) -> list[T]:
        """Parse ``chunk``; return the values of the lines it completed, in order."""
        if len(chunk) > SLICE_BYTES:
            return [value for piece in slices(chunk) for value in self._feed(piece)]
        return self._feed(chunk)

    def _feed(self, chunk: bytes) -> list[T]:
        if b"\n" not in chunk:
            self._hold(chunk)
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
        max_line = self._max_line
        out: list[T] = []
        for line in lines:
            if len(line) > max_line:
                raise FrameTooLarge("a JSON line", max_line)
            if line and not line.isspace():
                out.append(self._line(line))
        return out

    def close(self) -> list[T]:
        """The body ended: decode a last line that had no newline."""
        rest = b"".join(self._pending)
        self._pending = []
        self._pending_size = 0
        return [self._line(rest)] if rest and not rest.isspace() else []

    def _hold(self, piece: bytes) -> None:
        self._pending_size += len(piece)
        if self._pending_size > self._max_line:
            raise FrameTooLarge("a JSON line", self._max_line)
        self._pending.append(piece)

    def _line(self, line: bytes) -> T:
        try:
            return self._decode(line)  # type: ignore[no-any-return]
        except _UNDECODABLE as exc:
            shown = excerpt(line[:1000].decode("utf-8", "replace"), 200)
            raise NDJSONError(f"malformed JSON line: {exc} in {shown!r}", line) from exc
