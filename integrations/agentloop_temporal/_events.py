"""Reading a run's events from an ``EventSource``, with retried attempts sorted out.

The records of a run arrive from several places (the workflow's publish activity, each model
and tool activity, on whichever worker ran it). ``RunEvents`` turns them back into the event
sequence an in-process run emits:

- a workflow event seen again (published twice after a crash) is skipped;
- when a model call's activity is tried again, the consumer gets a ``StreamRetry`` first, the
  event an in-process run emits when a call is retried: what the earlier attempt streamed is
  void (a display discards it), and records of an earlier attempt arriving late are dropped;
- the iteration ends after the run's ``AgentEnd``, or raises when the run failed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import anyio

from agentloop import AgentEnd, ErrorKind, StreamRetry

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from types import TracebackType
    from typing import Self

    from anyio.abc import TaskGroup
    from temporalio.client import WorkflowHandle

    from ._client import AgentRun
    from ._records import EventSource, RunEvent, StreamRecord

__all__ = ["RunEvents"]


class RunEvents:
    """A run's events: ``async with ... as events: async for event in events: ...``.

    Yields ``agentloop`` events (and ``ApprovalRequested``) in the order an in-process run
    emits them, from the moment of subscribing. ``run`` is the run (``AgentRun``).
    """

    def __init__(
        self,
        source: EventSource,
        handle: WorkflowHandle[Any, Any],
        *,
        run: AgentRun | None = None,
        start: Callable[[], Awaitable[AgentRun]] | None = None,
    ) -> None:
        self._source = source
        self._handle = handle
        self._start = start
        self._run = run
        self._subscription: Any = None
        self._tg: TaskGroup | None = None
        self._send, self._receive = anyio.create_memory_object_stream[
            "StreamRecord | BaseException"
        ](math.inf)
        self._run_id: str | None = None
        self._next_seq = 0
        self._attempts: dict[str, int] = {}
        self._held: RunEvent | None = None
        self._ended = False

    @property
    def run(self) -> AgentRun:
        """The run whose events these are.

        Raises:
            RuntimeError: the stream has not been entered.
        """
        if self._run is None:
            raise RuntimeError("enter the event stream first")
        return self._run

    async def __aenter__(self) -> Self:
        subscription = self._source.subscribe(self._handle.id)
        records = await subscription.__aenter__()
        self._subscription = subscription
        try:
            if self._start is not None:
                self._run = await self._start()
            run = self.run
            self._run_id = run.run_id
            tg = anyio.create_task_group()
            await tg.__aenter__()
        except BaseException as exc:
            await subscription.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._tg = tg
        tg.start_soon(self._pump, records)
        tg.start_soon(self._watch, run)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        tg, self._tg = self._tg, None
        try:
            if tg is not None:
                tg.cancel_scope.cancel()
                try:
                    await tg.__aexit__(None, None, None)
                except BaseExceptionGroup as group:
                    raise group.exceptions[0] from None
        finally:
            self._send.close()
            self._receive.close()
            await self._subscription.__aexit__(exc_type, exc, tb)

    async def _pump(self, records: AsyncIterator[StreamRecord]) -> None:
        async for record in records:
            self._send.send_nowait(record)

    async def _watch(self, run: AgentRun) -> None:
        try:
            await run.handle.result()
        except Exception as exc:
            # A failed run publishes no ``AgentEnd``: end the iteration with its failure.
            self._send.send_nowait(exc)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> RunEvent:
        if self._held is not None:
            event, self._held = self._held, None
            return event
        while not self._ended:
            try:
                item = await self._receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                break
            if isinstance(item, BaseException):
                raise item
            accepted = self._accept(item)
            if accepted is not None:
                return accepted
        raise StopAsyncIteration

    def _accept(self, record: StreamRecord) -> RunEvent | None:
        if self._run_id is not None and record.run_id != self._run_id:
            return None  # another run of the conversation
        if record.source == "workflow":
            if record.seq < self._next_seq:
                return None  # published twice
            self._next_seq = record.seq + 1
            if type(record.event) is AgentEnd:
                self._ended = True
            return record.event
        current = self._attempts.get(record.key)
        if current is not None and record.attempt < current:
            return None  # a late record of a superseded attempt
        self._attempts[record.key] = record.attempt
        if current is not None and record.attempt > current and record.source == "model":
            self._held = record.event
            return StreamRetry(
                attempt=current,
                delay=0.0,
                kind=ErrorKind.NETWORK,
                message=f"{record.key}: attempt {current} did not finish; attempt "
                f"{record.attempt} streams again",
            )
        return record.event
