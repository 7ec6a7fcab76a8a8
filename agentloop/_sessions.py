"""Session persistence: a ``SessionStore`` protocol, JSONL and SQLite stores, and Agent helpers.

A session is an append-only list of messages plus a little metadata. Both stores do their file
work in worker threads (``anyio.to_thread``), never on the event loop, and encode messages with
``agentloop.encode`` so ``CustomMessage`` subclasses round-trip. Each store has its own module
(``_jsonl_store``, ``_sqlite_store``); their async methods live once, in ``_ThreadedStore``.

``SessionRecorder`` persists an agent's committed messages as a run goes (it subscribes to
``MessageEnd`` events), and ``resume`` loads a session back with its tail repaired: a tool call
left without a result (the process died mid-batch) gets a synthetic error result, so the history
handed to a model is always well paired.
"""

from __future__ import annotations

import abc
import collections
import functools
import logging
import re
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import anyio
import anyio.to_thread
import msgspec

from ._codec import decode
from ._errors import AgentError, single_exception
from ._events import MessageEnd
from ._types import (
    AgentMessage,
    AssistantMessage,
    Text,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    extract_text,
    now_ms,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import TracebackType

    from anyio.abc import TaskGroup

    from ._events import AgentEvent

__all__ = [
    "JsonlSessionStore",
    "SessionInfo",
    "SessionNotFound",
    "SessionRecorder",
    "SessionStore",
    "SqliteSessionStore",
    "repair_history",
    "resume",
]

logger = logging.getLogger("agentloop.sessions")
T = TypeVar("T")
P = TypeVar("P")  # what a store's ``_append`` takes: its encoded messages

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_TITLE_CHARS = 80


class SessionNotFound(AgentError, LookupError):
    """No session has this id."""


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A session's metadata. Times are milliseconds since the epoch."""

    id: str
    title: str = ""
    model: str | None = None
    created_at: int = 0
    updated_at: int = 0
    message_count: int = 0
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class SessionStore(Protocol):
    """Where sessions live. Every method is async; implementations keep I/O off the event loop."""

    async def create(
        self,
        *,
        session_id: str | None = None,
        title: str = "",
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionInfo:
        """Create an empty session (with a fresh id unless one is given).

        Raises:
            ValueError: the id is malformed or already taken.
        """
        ...

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        """Append messages durably, in order; all of them or (on error) none.

        Raises:
            SessionNotFound: no such session.
        """
        ...

    async def load(self, session_id: str) -> list[AgentMessage]:
        """Every message of the session, in order.

        Raises:
            SessionNotFound: no such session.
        """
        ...

    async def info(self, session_id: str) -> SessionInfo:
        """The session's metadata.

        Raises:
            SessionNotFound: no such session.
        """
        ...

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session's metadata, the most recently updated first."""
        ...

    async def update(
        self,
        session_id: str,
        *,
        title: str | None = None,
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionInfo:
        """Change the title, model or metadata (``None`` leaves a field as it is).

        Raises:
            SessionNotFound: no such session.
        """
        ...

    async def delete(self, session_id: str) -> None:
        """Delete the session and its messages.

        Raises:
            SessionNotFound: no such session.
        """
        ...


def _new_id(session_id: str | None) -> str:
    if session_id is None:
        import uuid

        return uuid.uuid4().hex
    if not _ID.fullmatch(session_id):
        raise ValueError(f"invalid session id {session_id!r}")
    return session_id


def _auto_fields(
    title: str, model: str | None, messages: Sequence[AgentMessage]
) -> tuple[str, str | None]:
    """Fill an empty title from the first user message and a missing model from the answers."""
    for message in messages:
        if title and model is not None:
            break
        if not title and type(message) is UserMessage:
            text = extract_text(message.content).strip()
            title = text.splitlines()[0][:_TITLE_CHARS] if text else ""
        elif model is None and type(message) is AssistantMessage:
            model = message.model_id or None
    return title, model


def _decode_all(chunks: list[bytes], where: str) -> list[AgentMessage]:
    """Decode encoded messages, at C speed when all are sound; bad ones are logged and skipped."""
    if not chunks:
        return []
    try:
        return decode(b"[" + b",".join(chunks) + b"]", list[AgentMessage])
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    out: list[AgentMessage] = []
    for number, chunk in enumerate(chunks, 1):
        try:
            out.append(decode(chunk, AgentMessage))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            logger.warning("%s: skipping unreadable record %d: %s", where, number, exc)
    return out


async def _run(func: Callable[..., T], *args: Any) -> T:
    return await anyio.to_thread.run_sync(functools.partial(func, *args))


class _ThreadedStore(abc.ABC, Generic[P]):
    """The ``SessionStore`` methods, each running its synchronous twin in a worker thread.

    A subclass supplies the twins (``_create``, ``_append``, ...), ``_encode`` (messages as its
    ``_append`` takes them, on the event loop) and, to check ids, ``_session_id``.
    """

    def _session_id(self, session_id: str) -> str:
        """The id the synchronous parts get (a subclass that checks ids raises ``ValueError``)."""
        return session_id

    @abc.abstractmethod
    def _encode(self, messages: Sequence[AgentMessage]) -> P: ...
    @abc.abstractmethod
    def _create(self, info: SessionInfo) -> SessionInfo: ...
    @abc.abstractmethod
    def _append(self, sid: str, payload: P, messages: Sequence[AgentMessage]) -> None: ...
    @abc.abstractmethod
    def _load(self, sid: str) -> list[AgentMessage]: ...
    @abc.abstractmethod
    def _info(self, sid: str) -> SessionInfo: ...
    @abc.abstractmethod
    def _list(self) -> list[SessionInfo]: ...
    @abc.abstractmethod
    def _update(self, sid: str, changes: dict[str, Any]) -> SessionInfo: ...
    @abc.abstractmethod
    def _delete(self, sid: str) -> None: ...

    async def create(
        self,
        *,
        session_id: str | None = None,
        title: str = "",
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionInfo:
        now = now_ms()
        info = SessionInfo(
            id=_new_id(session_id),
            title=title,
            model=model,
            created_at=now,
            updated_at=now,
            metadata=metadata or {},
        )
        return await _run(self._create, info)

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        if not messages:
            return
        payload = self._encode(messages)
        await _run(self._append, self._session_id(session_id), payload, list(messages))

    async def load(self, session_id: str) -> list[AgentMessage]:
        return await _run(self._load, self._session_id(session_id))

    async def info(self, session_id: str) -> SessionInfo:
        return await _run(self._info, self._session_id(session_id))

    async def list_sessions(self) -> list[SessionInfo]:
        return await _run(self._list)

    async def update(
        self,
        session_id: str,
        *,
        title: str | None = None,
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionInfo:
        changes = {"title": title, "model": model, "metadata": metadata}
        changes = {k: v for k, v in changes.items() if v is not None}
        return await _run(self._update, self._session_id(session_id), changes)

    async def delete(self, session_id: str) -> None:
        await _run(self._delete, self._session_id(session_id))


# --------------------------------------------------------------------------- agent helpers


INTERRUPTED = "tool call interrupted: the session ended before the tool returned a result"


def repair_history(messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    """Pair every tool call with a result; drop results that answer no call.

    A call with no result gets a synthetic error result, placed before the next user or
    assistant message (or at the end). The repair is deterministic (a synthetic result carries
    its call's timestamp), so repairing the same stored history twice gives equal results.
    """
    out: list[AgentMessage] = []
    pending: dict[str, ToolCall] = {}
    stamp = 0

    def close() -> None:
        for call in pending.values():
            out.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[Text(text=INTERRUPTED)],
                    is_error=True,
                    timestamp=stamp,
                )
            )
        pending.clear()

    for message in messages:
        cls = type(message)
        if cls is ToolResultMessage:
            assert isinstance(message, ToolResultMessage)
            if pending.pop(message.tool_call_id, None) is None:
                logger.warning("dropping a result for unknown tool call %r", message.tool_call_id)
                continue
        elif cls is AssistantMessage:
            assert isinstance(message, AssistantMessage)
            close()
            pending = {c.id: c for c in message.content if isinstance(c, ToolCall)}
            stamp = message.timestamp
        elif cls is UserMessage:
            close()
        out.append(message)
    close()
    return out


async def resume(store: SessionStore, session_id: str) -> list[AgentMessage]:
    """Load a session for an agent to continue from, its history repaired (``repair_history``).

    Raises:
        SessionNotFound: no such session.
    """
    return repair_history(await store.load(session_id))


class SessionRecorder:
    """Persists the messages an agent commits, in order, as its runs go.

    Subscribe it to the agent (``agent.subscribe(recorder)``, or pass ``recorder.record`` as
    the agent's ``on_message``): that synchronous part only queues each committed message. The
    appends happen in ``run()``, a drain task for the task group that runs the agent, or in
    ``flush()``; ``running()`` packages both around a block. Each append is shielded from
    cancellation, so cancelling the drain task never leaves a message half-stored or stored
    twice.

    Attributes:
        stored: how many messages have been appended so far.
    """

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.stored = 0
        self._queue: collections.deque[AgentMessage] = collections.deque()
        self._wakeup: anyio.Event | None = None
        self._lock: anyio.Lock | None = None

    def __call__(self, event: AgentEvent) -> None:
        """Queue the message of a ``MessageEnd`` event (other events are ignored)."""
        if type(event) is MessageEnd:
            self.record(event.message)

    def record(self, message: AgentMessage) -> None:
        """Queue one committed message (fits the Agent's ``on_message`` hook)."""
        self._queue.append(message)
        if self._wakeup is not None:
            self._wakeup.set()

    @property
    def pending(self) -> int:
        """How many queued messages are not stored yet."""
        return len(self._queue)

    async def flush(self) -> None:
        """Append every queued message to the store.

        Raises:
            Exception: whatever the store raised; the messages it did not take stay queued.
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            while self._queue:
                batch = list(self._queue)
                with anyio.CancelScope(shield=True):
                    await self.store.append(self.session_id, batch)
                for _ in batch:
                    self._queue.popleft()
                self.stored += len(batch)

    async def _drain(self) -> None:
        try:
            await self.run()
        except Exception:
            # The messages stay queued; the final flush of ``running()`` tries again.
            logger.exception(
                "%s: storing messages failed; retrying when the run ends", self.session_id
            )

    async def run(self) -> None:
        """Flush whenever messages are queued, until cancelled.

        Raises:
            Exception: whatever the store raised.
        """
        while True:
            if not self._queue:
                self._wakeup = anyio.Event()
                try:
                    await self._wakeup.wait()
                finally:
                    self._wakeup = None
            await self.flush()

    def running(self, *, final_flush_timeout: float = 10.0) -> _Recording:
        """Run the drain task around an ``async with`` block, then flush what is left.

        The final flush also runs when the block is cancelled (shielded; it starts no new
        append after ``final_flush_timeout`` seconds), so a cancelled run keeps every message
        it committed. If the store fails while the block runs, draining stops (the
        failure is logged) and the final flush tries again.

        Raises:
            Exception: whatever the store raised in the final flush; an exception from the
                block comes out as itself, never wrapped in an exception group.
        """
        return _Recording(self, final_flush_timeout)


class _Recording:
    """``SessionRecorder.running()``: a class, so no generator yields inside its task group."""

    def __init__(self, recorder: SessionRecorder, final_flush_timeout: float) -> None:
        self._recorder = recorder
        self._timeout = final_flush_timeout
        self._tg: TaskGroup | None = None

    async def __aenter__(self) -> SessionRecorder:
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        tg.start_soon(self._recorder._drain)
        return self._recorder

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg = self._tg
        assert tg is not None
        tg.cancel_scope.cancel()
        try:
            return await tg.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            raise single_exception(group) from None
        finally:
            with anyio.move_on_after(self._timeout, shield=True):
                await self._recorder.flush()


# Re-exported; last, because the stores subclass ``_ThreadedStore`` and take helpers from here.
from ._jsonl_store import JsonlSessionStore as JsonlSessionStore  # noqa: E402
from ._sqlite_store import SqliteSessionStore as SqliteSessionStore  # noqa: E402
