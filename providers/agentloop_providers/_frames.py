"""The size limit every frame decoder enforces, and the error that ends a stream over it.

A decoder buffers what it cannot yet hand on: an unterminated line, the ``data`` lines of an
event still waiting for its blank line, a binary message still arriving. Left unbounded, a
server (or anything between it and us) can make that buffer grow without end. Each decoder
takes a cap in bytes and raises ``FrameTooLarge`` as soon as a buffer would pass it, so its
memory stays within a small multiple of the cap (the buffer, and the one copy made when it is
joined). ``HttpProvider(max_event_bytes=...)`` sets the cap for its decoder; the call then ends
as an ``other`` error naming the limit.

Decoding a JSON frame can take more memory than the frame's text (a list of empty objects
grows about twenty-fold): the cap bounds that too, by the same factor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloop import AgentError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "SLICE_BYTES", "FrameTooLarge", "slices"]

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
"""16 MiB: AWS's own limit for one event-stream message, and far above any model's event."""

SLICE_BYTES = 64 * 1024


class FrameTooLarge(AgentError, ValueError):
    """A line, event or message grew past its decoder's cap; the stream cannot go on."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"{what} longer than {limit:,} bytes (the max_event_bytes limit)")
        self.limit = limit


def slices(chunk: bytes) -> Iterator[bytes]:
    """``chunk`` in pieces of at most 64 KiB, made one at a time, so that one huge read is never
    split into lines all at once (each piece is checked before the next is cut)."""
    for start in range(0, len(chunk), SLICE_BYTES):
        yield chunk[start : start + SLICE_BYTES]
