"""The caller-visible event stream: records, the sink workers publish to, and an in-memory hub.

Workers publish a run's events to an ``EventSink``; callers read them from an ``EventSource``.
Two kinds of record reach the sink:

- ``source="workflow"``: the loop's own events (turns, committed messages, tool starts and
  ends, ``AgentEnd``), published by the workflow through a local activity before each model or
  tool activity starts, before it waits for an approval, and at the end. ``seq`` numbers them
  in the run: a record published twice (a worker crashed after publishing, before its workflow
  task completed) is a duplicate.
- ``source="model"`` / ``source="tool"``: what an activity streams while it runs (the model's
  deltas as ``MessageUpdate``, a tool's progress as ``ToolExecutionUpdate``), tagged with the
  activity's ``key`` and ``attempt``. When Temporal retries an activity (a worker died, the
  model was throttled), the new attempt streams again from the start: a consumer that sees a
  later attempt of a key drops what the earlier ones published.

Live output goes to a sink instead of through the workflow because every signal or update a
workflow receives is written to its history: one per token would bloat the history and wake
the workflow for every delta. A sink is any pub/sub the workers and the callers share (Redis,
NATS, a WebSocket fan-out); ``EventHub`` is the in-memory one, for workers and callers in one
process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

import anyio
import msgspec

from agentloop import AgentEvent, ToolCall

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from contextlib import AbstractAsyncContextManager

    from anyio.streams.memory import MemoryObjectSendStream

__all__ = [
    "ApprovalRequested",
    "EventHub",
    "EventSink",
    "EventSource",
    "RunEvent",
    "StreamRecord",
]


class ApprovalRequested(
    msgspec.Struct, frozen=True, kw_only=True, tag="approval_requested", tag_field="type"
):
    """A tool call waits for a human's answer (``TemporalAgent.approve`` / ``reject``)."""

    call: ToolCall


RunEvent: TypeAlias = AgentEvent | ApprovalRequested
"""What a run's event stream yields: the loop's events, and approval requests."""


class StreamRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One event of a run, as published to a sink.

    Attributes:
        workflow_id: the run's workflow (a conversation's runs share it).
        run_id: the run.
        source: ``"workflow"``, ``"model"`` or ``"tool"`` (see the module's documentation).
        key: for activity records, the activity (``model-2``, ``tool-5``).
        attempt: for activity records, the attempt that produced it (1, 2, ...).
        seq: for workflow records, the event's index in the run; for activity records, its
            index within the attempt.
        event: the event.
    """

    workflow_id: str
    run_id: str
    source: Literal["workflow", "model", "tool"]
    seq: int
    event: RunEvent
    key: str = ""
    attempt: int = 0


class EventSink(Protocol):
    """Where workers publish records. ``publish`` must not raise for a slow reader: buffer or
    drop; an exception is logged and the run goes on without its stream."""

    async def publish(self, records: Sequence[StreamRecord]) -> None:
        """Hand ``records`` on (buffer or drop for a slow reader; never raise for one)."""


class EventSource(Protocol):
    """Where callers read records: ``subscribe`` one workflow id's records, from now on."""

    def subscribe(
        self, workflow_id: str
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamRecord]]:
        """The records of ``workflow_id`` from now on, as an async context manager yielding an
        async iterator.
        """


class EventHub:
    """An in-memory ``EventSink`` and ``EventSource``, for workers and callers in one process.

    Each subscriber has a buffer of ``buffer`` records; a subscriber whose buffer is full makes
    ``publish`` wait (backpressure on the activity streaming), so read promptly.
    """

    def __init__(self, *, buffer: int = 4096) -> None:
        self._buffer = buffer
        self._subscribers: dict[str, set[MemoryObjectSendStream[StreamRecord]]] = {}

    async def publish(self, records: Sequence[StreamRecord]) -> None:
        """Send each record to its workflow id's subscribers (waiting while a buffer is full)."""
        for record in records:
            for send in list(self._subscribers.get(record.workflow_id, ())):
                try:
                    await send.send(record)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    self._drop(record.workflow_id, send)

    def subscribe(self, workflow_id: str) -> _Subscription:
        """The records of ``workflow_id`` from now on (``async with hub.subscribe(id) as it:``)."""
        return _Subscription(self, workflow_id)

    def _add(self, workflow_id: str, send: MemoryObjectSendStream[StreamRecord]) -> None:
        self._subscribers.setdefault(workflow_id, set()).add(send)

    def _drop(self, workflow_id: str, send: MemoryObjectSendStream[StreamRecord]) -> None:
        subscribers = self._subscribers.get(workflow_id)
        if subscribers is not None:
            subscribers.discard(send)
            if not subscribers:
                del self._subscribers[workflow_id]
        send.close()


class _Subscription:
    """``async with hub.subscribe(workflow_id) as records: async for record in records``."""

    def __init__(self, hub: EventHub, workflow_id: str) -> None:
        self._hub = hub
        self._workflow_id = workflow_id
        self._send, self._receive = anyio.create_memory_object_stream[StreamRecord](hub._buffer)

    async def __aenter__(self) -> AsyncIterator[StreamRecord]:
        self._hub._add(self._workflow_id, self._send)
        return self._receive

    async def __aexit__(self, *exc_info: object) -> None:
        self._hub._drop(self._workflow_id, self._send)
        self._receive.close()
