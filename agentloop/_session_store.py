"""Session stores: the ``SessionStore`` protocol and what the built-in stores share.

A session is an append-only list of messages plus a little metadata. Both stores do their file
work in worker threads (``anyio.to_thread``), never on the event loop, and encode messages with
``agentloop.encode`` so ``CustomMessage`` subclasses round-trip; a message that cannot be encoded
is stored degraded and a record that cannot be read is skipped (``_session_codec``). Each store
has its own module (``_jsonl_store``, ``_sqlite_store``); their async methods live once, in
``_ThreadedStore``. An append is all or none, and a cancelled one is either called off or
finishes in its thread (``_Write``).

``SessionRecorder`` (``_session_recorder``) persists an agent's committed messages as a run goes;
``load_session`` (``_session_resume``) loads one back with its history repaired.
"""

from __future__ import annotations

import abc
import functools
import logging
import os
import re
import threading
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import anyio.to_thread
import msgspec

from ._errors import AgentError, SessionStoreError
from ._session_codec import encode_records
from ._types import AgentMessage, AssistantMessage, UserMessage, extract_text, now_ms

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["SessionInfo"]

logger = logging.getLogger("agentloop.sessions")
T = TypeVar("T")
P = TypeVar("P")  # what a store's ``_append`` takes: its encoded messages

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_TITLE_CHARS = 80


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A session's metadata. Times are milliseconds since the epoch."""

    id: str
    title: str = ""
    model: str | None = None
    created_at: int = 0
    updated_at: int = 0
    message_count: int = 0
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


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


async def _run(func: Callable[..., T], *args: Any) -> T:
    # Abandoned when cancelled: a thread waiting for another process's lock never holds up
    # a cancel scope.
    return await anyio.to_thread.run_sync(functools.partial(func, *args), abandon_on_cancel=True)


class _CalledOff(Exception):
    """An append was called off before it wrote anything (its caller stopped waiting)."""


class _Write:
    """One append handed to a worker thread; its caller may stop waiting for it at any time.

    The thread calls ``claim()`` once it holds the session's locks, just before it changes
    anything: from then on the append runs to its end (all or none) even if nobody waits for
    it any more. Until then, ``call_off()`` stops it from ever writing. So an abandoned append
    is either certainly not written or settles, in order, before anything else can touch the
    session; ``done`` and ``error`` tell which way it went.
    """

    __slots__ = ("_mutex", "_state", "done", "error", "rejected")

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._state = "pending"  # -> "called off" | "writing"
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.rejected: list[Exception] = []  # why messages that cannot be stored were left out

    def claim(self) -> None:
        """In the worker thread, before the first change.

        Raises:
            _CalledOff: the caller stopped waiting before the append started.
        """
        with self._mutex:
            if self._state == "called off":
                raise _CalledOff
            self._state = "writing"

    def call_off(self) -> bool:
        """Stop the append if it has not started writing; whether it will never write."""
        with self._mutex:
            if self._state == "pending":
                self._state = "called off"
            return self._state == "called off"

    def run(self, append: Callable[..., None], *args: Any) -> None:
        """In the worker thread: the store's append, its outcome recorded."""
        try:
            append(*args, self.claim)
        except BaseException as exc:
            self.error = exc
            raise
        finally:
            self.done.set()


class _ThreadedStore(abc.ABC, Generic[P]):
    """The ``SessionStore`` methods, each running its synchronous twin in a worker thread.

    A subclass supplies the twins (``_create``, ``_append``, ...), ``_pack`` (the encoded
    records as its ``_append`` takes them) and, to check ids, ``_session_id``. Its ``_append``
    calls ``claim()`` once it holds the session's locks and before it changes anything, and is
    all or none.

    Messages are encoded on the event loop by ``_session_codec.encode_records``: one that cannot
    be encoded is stored in a degraded form or skipped, never raised.

    Every method can be cancelled at once: its thread is abandoned. A cancelled append is
    either called off before it changes anything or finishes, all or none, before any later
    operation on the session; a cancelled ``create``, ``update`` or ``delete`` may still take
    effect.
    """

    def _session_id(self, session_id: str) -> str:
        """The id the synchronous parts get (a subclass that checks ids raises ``ValueError``)."""
        return session_id

    def _store_error(self, exc: Exception) -> SessionStoreError | None:
        """The typed error for a failure of the store's place, or ``None`` to let ``exc`` out
        as it is. By default an ``OSError`` becomes a ``SessionStoreError`` naming its file; a
        subclass adds its own (SQLite's errors)."""
        if isinstance(exc, OSError) and not isinstance(exc, AgentError):
            where = exc.filename if exc.filename is not None else self._place()
            return SessionStoreError(os.fsdecode(where), exc.strerror or str(exc), exc.errno)
        return None

    def _place(self) -> str:
        """The store's file or directory, for error messages."""
        return "?"

    def _checked(self, func: Callable[..., T], *args: Any) -> T:
        """In the worker thread: ``func(*args)``, a failure of the place raised typed."""
        try:
            return func(*args)
        except Exception as exc:
            typed = self._store_error(exc)
            if typed is None:
                raise
            raise typed from exc

    @abc.abstractmethod
    def _pack(self, records: list[bytes]) -> P: ...
    @abc.abstractmethod
    def _create(self, info: SessionInfo) -> SessionInfo: ...
    @abc.abstractmethod
    def _append(
        self, sid: str, payload: P, messages: Sequence[AgentMessage], claim: Callable[[], None]
    ) -> None: ...
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

    async def _append_tracked(
        self, session_id: str, messages: Sequence[AgentMessage], write: _Write
    ) -> None:
        """Append through ``write``, which its caller keeps to learn how an abandoned append
        ended (``SessionRecorder`` does)."""
        sid = self._session_id(session_id)
        records, kept, write.rejected = encode_records(messages, sid)
        if not records:
            write.done.set()
            return
        try:
            append = functools.partial(self._checked, self._append)
            await anyio.to_thread.run_sync(
                write.run, append, sid, self._pack(records), kept, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            write.call_off()
            raise

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
        return await _run(self._checked, self._create, info)

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        """Append messages, all or none (see ``SessionStore.append``).

        Cancelled, the append either never writes or finishes in its worker thread before any
        later operation on the session (from this process or another) can see the session.

        Raises:
            SessionNotFound: no such session.
            SessionStoreError: the store's place failed (a full disk, a directory it may not
                write, a file that is not a database): the append left nothing behind. It is an
                ``OSError`` too, with the system's ``errno`` when there is one.
        """
        if messages:
            await self._append_tracked(session_id, messages, _Write())

    async def load(self, session_id: str) -> list[AgentMessage]:
        return await _run(self._checked, self._load, self._session_id(session_id))

    async def info(self, session_id: str) -> SessionInfo:
        return await _run(self._checked, self._info, self._session_id(session_id))

    async def list_sessions(self) -> list[SessionInfo]:
        return await _run(self._checked, self._list)

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
        return await _run(self._checked, self._update, self._session_id(session_id), changes)

    async def delete(self, session_id: str) -> None:
        await _run(self._checked, self._delete, self._session_id(session_id))
