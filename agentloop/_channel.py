"""The event channel between a running loop and the consumer of its event stream.

A zero-buffer anyio memory stream costs a task switch per event, which caps a token stream far
below what a model produces. This channel lets the producer append events synchronously and
wakes the consumer once per batch: the consumer drains everything buffered without switching,
and only then waits. Backpressure stays: when ``capacity`` events are waiting, the loop awaits
``wait_writable()`` at its next checkpoint until the consumer has drained them.

Progress updates from tools never block a tool: once the buffer is full, a newer update for the
same call replaces the one still waiting (updates coalesce).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import anyio

from ._events import ToolExecutionUpdate

if TYPE_CHECKING:
    from ._events import AgentEvent

__all__ = ["EventChannel"]


class _Coalesced:
    __slots__ = ("event",)

    def __init__(self, event: ToolExecutionUpdate) -> None:
        self.event = event


class EventChannel:
    """A bounded, batching single-producer single-consumer event queue."""

    __slots__ = (
        "_receiver_closed",
        "_sender_closed",
        "_writable",
        "boxed",
        "buffer",
        "capacity",
        "reader",
    )

    def __init__(self, capacity: int = 256) -> None:
        self.buffer: deque[Any] = deque()
        self.capacity = capacity
        # What the consumer waits on when the buffer is empty (set by the next event).
        self.reader: anyio.Event | None = None
        self._writable: anyio.Event | None = None
        # The updates waiting in boxes, by call: while none is, every buffered item is an event.
        self.boxed: dict[str, _Coalesced] = {}
        self._sender_closed = False
        self._receiver_closed = False

    # ---------------------------------------------------------------- producer side

    def send(self, event: AgentEvent) -> None:
        """Append ``event`` (never blocks). Events sent after the receiver closed are dropped."""
        if self._receiver_closed:
            return
        buffer = self.buffer
        if type(event) is ToolExecutionUpdate and (self.boxed or len(buffer) >= self.capacity):
            waiting = self.boxed.get(event.call_id)
            if waiting is not None:
                waiting.event = event  # still unread: the newer update replaces it
                return
            if len(buffer) >= self.capacity:
                box = _Coalesced(event)
                self.boxed[event.call_id] = box
                buffer.append(box)
            else:
                buffer.append(event)
        else:
            buffer.append(event)
        if self.reader is not None:
            self.wake_reader()

    def wake_reader(self) -> None:
        """Wake the consumer waiting for an event (a producer appending to ``buffer`` itself
        calls this when ``reader`` is set)."""
        reader = self.reader
        if reader is not None:
            self.reader = None
            reader.set()

    @property
    def full(self) -> bool:
        """Whether the producer should wait before sending more."""
        return len(self.buffer) >= self.capacity and not self._receiver_closed

    async def wait_writable(self) -> None:
        """Wait until the consumer has drained the buffer (or gone away).

        A producer may append events to ``buffer`` itself, with no check, when it calls this
        each time the buffer is full: after the consumer has gone, this drops them.
        """
        if self._receiver_closed:
            self.buffer.clear()
            return
        while self.full:
            writable = self._writable
            if writable is None:
                writable = self._writable = anyio.Event()
            await writable.wait()

    def close_sender(self) -> None:
        """No more events will come; the consumer's iteration ends once the buffer is empty."""
        self._sender_closed = True
        self.wake_reader()

    # ---------------------------------------------------------------- consumer side

    def close_receiver(self) -> None:
        """The consumer is gone: drop what is buffered and never block the producer again."""
        self._receiver_closed = True
        self.buffer.clear()
        self._wake_writer()

    def _wake_writer(self) -> None:
        writable = self._writable
        if writable is not None:
            self._writable = None
            writable.set()

    def receive_nowait(self) -> AgentEvent | None:
        """The next event if one is buffered, else ``None`` (the consumer's fast path)."""
        buffer = self.buffer
        if not buffer:
            return None
        item = buffer.popleft()
        if type(item) is _Coalesced:
            del self.boxed[item.event.call_id]
            return item.event
        return item  # type: ignore[no-any-return]

    async def receive(self) -> AgentEvent:
        """The next event.

        Raises:
            anyio.EndOfStream: the producer closed and everything was received.
        """
        buffer = self.buffer
        while not buffer:
            if self._sender_closed:
                raise anyio.EndOfStream
            self._wake_writer()
            reader = self.reader
            if reader is None:
                reader = self.reader = anyio.Event()
            await reader.wait()
        event = self.receive_nowait()
        assert event is not None
        return event
