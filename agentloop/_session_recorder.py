"""``SessionRecorder``: stores the messages an agent commits, in order, as its runs go.

Its promises, whatever the store does:

- **Nothing is stored twice.** A store's append is all or none; a failed batch stays queued and
  is appended again later. An append of a built-in store cut off by a timeout or a cancellation
  is either called off before it wrote anything or finishes in its worker thread, and the next
  flush waits for that outcome before it appends anything (``_sessions._Write``). An append to
  any other store (one of the application's own, or a wrapper) cannot say whether a cancelled
  append stored its batch, so it is shielded: only ``running()``'s bound cuts it off, and then
  the batch counts as not stored (such a store is best all or none under cancellation too).
- **Nothing is dropped silently.** What could not be stored stays queued (``pending``) and is
  reported by ``running()`` (``unstored``, ``error``). A message the store rejects for its own
  content (it raises ``TypeError``, ``ValueError``, ``RecursionError`` or
  ``msgspec.EncodeError`` for that message alone, and takes another one) is skipped, counted
  (``skipped``) and logged, so it never blocks the messages after it. The built-in stores never
  reject one: they store it degraded (``_session_codec``).
- **Bounded.** ``running()``'s end (the drain's last append and the final flush) gives up
  ``final_flush_timeout`` seconds after the block ends, even in the middle of an append, and
  never raises a store failure: it reports it.
- **Any event loop.** The recorder holds nothing bound to an event loop between flushes, so it
  works across successive ``anyio.run`` calls and backends.
"""

from __future__ import annotations

import collections
import logging
import math
import weakref
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
import msgspec
from anyio.lowlevel import RunVar

from ._errors import single_exception
from ._events import MessageEnd
from ._session_store import _ThreadedStore, _Write

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import TracebackType

    from anyio.abc import TaskGroup

    from ._abc import SessionStore
    from ._events import AgentEvent
    from ._types import AgentMessage

__all__ = ["SessionRecorder"]

logger = logging.getLogger("agentloop.sessions")

# Errors a store may raise for a message's content rather than for its own state. Anything else
# (OSError, a database error...) keeps the messages queued.
_REJECTED = (TypeError, ValueError, RecursionError, msgspec.EncodeError)

# One flush lock per recorder and event loop: an anyio lock belongs to the loop that made it.
_flush_locks: RunVar[weakref.WeakKeyDictionary[SessionRecorder, anyio.Lock]] = RunVar(
    "agentloop_session_recorder_locks"
)


class SessionRecorder:
    """Persists the messages an agent commits, in order, as its runs go.

    Subscribe it to the agent (``agent.subscribe(recorder)``, or pass ``recorder.record`` as
    the agent's ``on_message``): that synchronous part only queues each committed message. The
    appends happen in ``run()``, a drain task for the task group that runs the agent, or in
    ``flush()``; ``running()`` packages both around a block and reports what it could not
    store.

    Args:
        store: where the messages go.
        session_id: the session they belong to.
        final_flush_timeout: the default bound, in seconds, of ``running()``'s end (an Agent
            given this recorder as its ``session`` uses it for every run).

    Attributes:
        stored: how many messages have been appended so far.
        skipped: how many messages were given up on: the store rejected them alone, or (a
            built-in store) not even their degraded form could be stored.
        last_error: why the last flush did not store every queued message (a store error, or a
            ``TimeoutError`` from ``running()``'s final flush), or the rejection of a message
            it skipped; ``None`` after a flush that stored everything.
    """

    def __init__(
        self, store: SessionStore, session_id: str, *, final_flush_timeout: float = 10.0
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.final_flush_timeout = final_flush_timeout
        self.stored = 0
        self.skipped = 0
        self.last_error: BaseException | None = None
        self._queue: collections.deque[AgentMessage] = collections.deque()
        self._wakeup: anyio.Event | None = None
        # An abandoned append, where its batch starts in the queue and its size.
        self._in_doubt: tuple[_Write, int, int] | None = None
        self._rejection: BaseException | None = None  # why the last skipped message was
        # The bound ``running()`` sets on its end, and the shield of an append under way to a
        # store of the application's own (which the bound reaches through).
        self._deadline = math.inf
        self._shield: anyio.CancelScope | None = None

    def __call__(self, event: AgentEvent) -> None:
        """Queue the message of a ``MessageEnd`` event (other events are ignored)."""
        if type(event) is MessageEnd:
            self.record(event.message)

    def record(self, message: AgentMessage) -> None:
        """Queue one committed message (fits the Agent's ``on_message`` hook)."""
        self._queue.append(message)
        self._wake()

    @property
    def pending(self) -> int:
        """How many queued messages are not known to be stored yet.

        They include a batch whose append was abandoned mid-way: the next flush learns whether
        it landed and stores it only if it did not.
        """
        return len(self._queue)

    def _flush_lock(self) -> anyio.Lock:
        try:
            locks = _flush_locks.get()
        except LookupError:
            locks = weakref.WeakKeyDictionary()
            _flush_locks.set(locks)
        lock = locks.get(self)
        if lock is None:
            lock = locks[self] = anyio.Lock()
        return lock

    async def flush(self) -> None:
        """Append every queued message to the store.

        A message the store rejects (see the module notes) is skipped and counted, and the
        flush goes on with the next. An append to a store other than the built-in ones is
        shielded from cancellation (see the module notes); ``running()`` bounds it.

        Raises:
            Exception: whatever else the store raised; the messages it did not take stay
                queued (also in ``last_error``).
        """
        async with self._flush_lock():
            rejection: BaseException | None = None
            try:
                await self._settle()
                while self._queue:
                    batch = list(self._queue)
                    try:
                        rejected = await self._append(batch)
                    except _REJECTED:
                        rejection = await self._one_by_one() or rejection
                    else:
                        self._take(len(batch), rejected)
                        rejection = rejected[-1] if rejected else rejection
            except Exception as exc:
                self.last_error = exc
                raise
            self.last_error = rejection

    async def _one_by_one(self) -> BaseException | None:
        """Append queued messages one at a time, skipping those the store rejects alone.

        A message is skipped only once the store has taken another one, so a store that
        rejects everything (a bad session id, a closed file) gets nothing skipped: the
        messages stay queued and its error is raised. Returns the last rejection, if any.

        Raises:
            Exception: the store's error, when it took nothing.
        """
        doubtful: list[BaseException] = []  # the queue's first messages, each rejected alone
        last: BaseException | None = None
        while len(doubtful) < len(self._queue):
            try:
                rejected = await self._append([self._queue[len(doubtful)]], len(doubtful))
            except _REJECTED as exc:
                doubtful.append(exc)
                continue
            for error in doubtful:  # the store works: these messages are the problem
                logger.error(
                    "%s: skipping a message the store cannot take: %s: %s",
                    self.session_id,
                    type(error).__name__,
                    error,
                )
            self._take(len(doubtful), doubtful)
            self._take(1, rejected)
            if doubtful or rejected:
                last = [*doubtful, *rejected][-1]
            doubtful.clear()
        if doubtful:
            raise doubtful[0]
        return last

    def _take(self, count: int, rejected: Sequence[BaseException]) -> None:
        """Unqueue ``count`` messages, all stored but the ``rejected`` ones."""
        for _ in range(count):
            self._queue.popleft()
        self.stored += count - len(rejected)
        self.skipped += len(rejected)
        if rejected:
            self._rejection = rejected[-1]

    async def _append(
        self, batch: Sequence[AgentMessage], start: int = 0
    ) -> Sequence[BaseException]:
        """Append ``batch``, queued from ``start`` on; why the store left out the messages it
        could not store in any form (the built-in stores do, with a warning)."""
        store = self.store
        if not isinstance(store, _ThreadedStore):
            # Nothing tells whether a store of the application's own stored a batch when its
            # append was cancelled: only the end of ``running()`` may cut one off.
            with anyio.CancelScope(shield=True, deadline=self._deadline) as shield:
                self._shield = shield
                try:
                    await store.append(self.session_id, batch)
                finally:
                    self._shield = None
            if shield.cancelled_caught:
                raise TimeoutError("the session store did not finish an append in time")
            return ()
        write = _Write()
        try:
            await store._append_tracked(self.session_id, batch, write)
        except anyio.get_cancelled_exc_class():
            if not write.call_off():
                self._in_doubt = (write, start, len(batch))
            raise
        return write.rejected

    async def _settle(self) -> None:
        """Learn how an abandoned append ended, and unqueue its batch if it was stored."""
        in_doubt = self._in_doubt
        if in_doubt is None:
            return
        write, start, count = in_doubt
        if not write.done.is_set():
            await anyio.to_thread.run_sync(write.done.wait, abandon_on_cancel=True)
        self._in_doubt = None
        if write.error is None:
            self._queue.rotate(-start)  # the messages before it stay queued, in order
            self._take(count, write.rejected)
            self._queue.rotate(start)

    async def run(self) -> None:
        """Flush whenever messages are queued, until cancelled.

        Raises:
            Exception: whatever the store raised.
        """
        await self._run_until(lambda: False)

    async def _run_until(self, done: Callable[[], bool]) -> None:
        """Flush whenever messages are queued, until ``done()`` holds with nothing queued."""
        while True:
            if not self._queue:
                if done():
                    return
                self._wakeup = anyio.Event()
                try:
                    await self._wakeup.wait()
                finally:
                    self._wakeup = None
                continue
            await self.flush()

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    def running(self, *, final_flush_timeout: float | None = None) -> _Recording:
        """Run the drain task around an ``async with`` block, then flush what is left.

        When the block ends normally, the drain finishes the append under way and what is
        queued; when it ends with an exception or is cancelled, the drain stops at once. Either
        way a final flush follows (shielded, so a cancelled run keeps every message it
        committed). ``final_flush_timeout`` (by default the recorder's) bounds all of this,
        from the end of the block, even in the middle of an append: a built-in store's append cut off there is either called
        off or finishes in its thread, and the next flush settles it without storing anything
        twice. If the store fails while the block runs, draining stops (the failure is logged)
        and the final flush tries again.

        A store failure never comes out of the block: after it, the returned object's
        ``unstored``, ``skipped`` and ``error`` say what could not be stored and why (also
        logged as an error).

        Raises:
            BaseException: an exception from the block, as itself (never wrapped in a group).
        """
        if final_flush_timeout is None:
            final_flush_timeout = self.final_flush_timeout
        return _Recording(self, final_flush_timeout)


class _Recording:
    """What ``SessionRecorder.running()`` returns; ``async with`` it (it gives the recorder).

    A class, so no generator yields inside its task group. After the block:

    Attributes:
        unstored: committed messages still not stored (``recorder.pending``).
        skipped: messages given up on during the block (see ``SessionRecorder.skipped``).
        error: why, when either is not zero (a ``TimeoutError`` when the final flush ran out
            of time); otherwise ``None``.
    """

    def __init__(self, recorder: SessionRecorder, final_flush_timeout: float) -> None:
        self._recorder = recorder
        self._timeout = final_flush_timeout
        self._tg: TaskGroup | None = None
        self._closing = False
        self._drained: anyio.Event | None = None
        self._skipped_before = 0
        self.unstored = 0
        self.skipped = 0
        self.error: BaseException | None = None

    async def __aenter__(self) -> SessionRecorder:
        self._skipped_before = self._recorder.skipped
        self._drained = anyio.Event()
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        tg.start_soon(self._drain, self._drained)
        return self._recorder

    async def _drain(self, drained: anyio.Event) -> None:
        try:
            await self._recorder._run_until(lambda: self._closing)
        except Exception:
            # The messages stay queued; the final flush tries again.
            logger.exception(
                "%s: storing messages failed; retrying when the run ends",
                self._recorder.session_id,
            )
        finally:
            drained.set()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg, drained = self._tg, self._drained
        assert tg is not None
        assert drained is not None
        deadline = anyio.current_time() + self._timeout
        recorder = self._recorder
        recorder._deadline = deadline
        if recorder._shield is not None:
            recorder._shield.deadline = deadline
        try:
            return await self._close(tg, drained, deadline, exc_type, exc, tb)
        finally:
            recorder._deadline = math.inf

    async def _close(
        self,
        tg: TaskGroup,
        drained: anyio.Event,
        deadline: float,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        if exc_type is None:
            # A block that ended normally lets the drain finish the append under way (within
            # the time allowed), rather than cutting off a store that cannot tell a
            # cancelled append from a stored one.
            self._closing = True
            self._recorder._wake()
            with anyio.CancelScope(deadline=deadline, shield=True):
                await drained.wait()
        tg.cancel_scope.cancel()
        try:
            return await tg.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            raise single_exception(group) from None
        finally:
            await self._final_flush(deadline)

    async def _final_flush(self, deadline: float) -> None:
        recorder = self._recorder
        with anyio.CancelScope(deadline=deadline, shield=True) as scope:
            try:
                await recorder.flush()
            except Exception:  # noqa: BLE001, S110 - reported below, never raised
                pass
        if scope.cancelled_caught and recorder.pending:
            recorder.last_error = TimeoutError(
                f"the final flush did not finish within {self._timeout} seconds"
            )
        self.unstored = recorder.pending
        self.skipped = recorder.skipped - self._skipped_before
        if self.unstored:
            self.error = recorder.last_error
        elif self.skipped:
            self.error = recorder._rejection
        if self.unstored:  # skipped messages were reported one by one
            logger.error(
                "%s: %d committed messages are not stored: %s",
                recorder.session_id,
                self.unstored,
                self.error,
            )
