"""An incremental newline-delimited JSON parser over a response's byte stream.

Each line is one JSON value. Lines may end in LF or CRLF; blank lines are skipped; the last line
may lack its newline (a non-streaming JSON body is a one-line NDJSON stream).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

import msgspec

__all__ = ["NDJSONDecoder", "NDJSONError"]

T = TypeVar("T")


class NDJSONError(ValueError):
    """A line that is not valid JSON (or not of the expected type)."""

    def __init__(self, message: str, line: bytes) -> None:
        super().__init__(message)
        self.line = line


class NDJSONDecoder(Generic[T]):
    """Feed it the body's bytes as they arrive; it returns the values each chunk completed.

    ``type`` is any type msgspec can decode into (``Any`` by default); decoding straight into a
    ``msgspec.Struct`` skips building dicts.

    Raises:
        NDJSONError: from ``feed``/``close``, for a line that does not decode.
    """

    __slots__ = ("_decode", "_partial")

    @overload
    def __init__(self: NDJSONDecoder[Any]) -> None: ...

    @overload
    def __init__(self, type: type[T]) -> None: ...  # noqa: A002

    def __init__(self, type: Any = Any) -> None:  # noqa: A002
        self._decode = msgspec.json.Decoder(type).decode
        self._partial = b""

    def feed(self, chunk: bytes) -> list[T]:
        """Parse ``chunk``; return the values of the lines it completed, in order."""
        buf = self._partial + chunk if self._partial else chunk
        lines = buf.split(b"\n")
        self._partial = lines.pop()
        return [self._line(line) for line in lines if line.strip()]

    def close(self) -> list[T]:
        """The body ended: decode a last line that had no newline."""
        rest, self._partial = self._partial, b""
        return [self._line(rest)] if rest.strip() else []

    def _line(self, line: bytes) -> T:
        try:
            return self._decode(line)  # type: ignore[no-any-return]
        except msgspec.DecodeError as exc:
            shown = line[:200].decode("utf-8", "replace")
            raise NDJSONError(f"malformed JSON line: {exc} in {shown!r}", line) from exc
