"""Session persistence: a ``SessionStore`` protocol, JSONL and SQLite stores, and Agent helpers.

A session is an append-only list of messages plus a little metadata. Both stores do their file
work in worker threads (``anyio.to_thread``), never on the event loop, and encode messages with
``agentloop.encode`` so ``CustomMessage`` subclasses round-trip.

``SessionRecorder`` persists an agent's committed messages as a run goes (it subscribes to
``MessageEnd`` events), and ``resume`` loads a session back with its tail repaired: a tool call
left without a result (the process died mid-batch) gets a synthetic error result, so the history
handed to a model is always well paired.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import os
import re
import threading
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

import anyio
import anyio.to_thread
import msgspec

from ._codec import decode, encode
from ._errors import AgentError
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
    import sqlite3
    from collections.abc import AsyncIterator, Callable, Iterator, Sequence

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


# --------------------------------------------------------------------------- JSONL


class _Meta(msgspec.Struct, frozen=True, kw_only=True):
    title: str = ""
    model: str | None = None
    created_at: int = 0
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


_meta_decoder = msgspec.json.Decoder(_Meta)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _fsync_dir(path: str) -> None:
    # Makes a created, renamed or removed entry durable; not possible on every platform.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class JsonlSessionStore:
    """One append-only JSONL file per session in ``directory``, plus a small metadata file.

    Each append is written with one ``write`` and (with ``fsync``) flushed to disk before it
    returns. A crash mid-write leaves a torn last line: ``load`` ignores it with a logged
    warning, and the next append cuts it off first, so one torn record never costs the rest of
    the session. ``message_count`` counts complete lines.

    Args:
        directory: where the files live (created on first use).
        fsync: flush every write to disk (turn off only for tests and throwaway sessions).
    """

    def __init__(self, directory: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.directory = os.fspath(directory)
        self.fsync = fsync
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._meta: dict[str, _Meta] = {}
        self._counts: dict[str, tuple[int, int]] = {}  # id -> (bytes counted, lines)

    def _lock(self, sid: str) -> threading.Lock:
        with self._guard:
            lock = self._locks.get(sid)
            if lock is None:
                lock = self._locks[sid] = threading.Lock()
            return lock

    def _log(self, sid: str) -> str:
        return os.path.join(self.directory, f"{sid}.jsonl")

    def _meta_path(self, sid: str) -> str:
        return os.path.join(self.directory, f"{sid}.meta.json")

    # ---------------------------------------------------------------- worker-thread parts

    def _write_meta(self, sid: str, meta: _Meta) -> None:
        path = self._meta_path(sid)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(msgspec.json.encode(meta))
            f.flush()
            if self.fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if self.fsync:
            _fsync_dir(self.directory)
        self._meta[sid] = meta

    def _read_meta(self, sid: str) -> _Meta:
        meta = self._meta.get(sid)
        if meta is not None:
            return meta
        log = self._log(sid)
        try:
            meta = _meta_decoder.decode(_read(self._meta_path(sid)))
        except FileNotFoundError:
            if not os.path.exists(log):
                raise SessionNotFound(sid) from None
            # The log was created but the process died before the metadata was written.
            meta = _Meta(created_at=os.stat(log).st_mtime_ns // 1_000_000)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            logger.warning("%s: unreadable metadata, using defaults: %s", sid, exc)
            meta = _Meta(created_at=os.stat(log).st_mtime_ns // 1_000_000)
        self._meta[sid] = meta
        return meta

    def _create(self, sid: str, meta: _Meta) -> SessionInfo:
        os.makedirs(self.directory, exist_ok=True)
        with self._lock(sid):
            try:
                fd = os.open(self._log(sid), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                raise ValueError(f"session {sid!r} already exists") from None
            os.close(fd)
            self._write_meta(sid, meta)  # also makes the new log's directory entry durable
            self._counts[sid] = (0, 0)
        return self._info(sid)

    def _append(self, sid: str, payload: bytes, messages: Sequence[AgentMessage]) -> None:
        with self._lock(sid):
            try:
                fd = os.open(self._log(sid), os.O_RDWR | os.O_APPEND | getattr(os, "O_BINARY", 0))
            except FileNotFoundError:
                raise SessionNotFound(sid) from None
            try:
                size = os.fstat(fd).st_size
                if size:
                    os.lseek(fd, size - 1, os.SEEK_SET)
                    if os.read(fd, 1) != b"\n":
                        payload = self._heal(sid, fd, size) + payload
                view = memoryview(payload)
                while view:
                    view = view[os.write(fd, view) :]
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            meta = self._read_meta(sid)
            title, model = _auto_fields(meta.title, meta.model, messages)
            if (title, model) != (meta.title, meta.model):
                self._write_meta(sid, msgspec.structs.replace(meta, title=title, model=model))

    def _heal(self, sid: str, fd: int, size: int) -> bytes:
        """Deal with a last line lacking its newline; returns what to write before the append.

        A complete record that only lost its newline gets one; a torn record (a crash
        mid-write) is cut off, since no reader could ever use it.
        """
        pos, tail = size, b""
        while pos > 0:
            step = min(pos, 1 << 16)
            pos -= step
            os.lseek(fd, pos, os.SEEK_SET)
            chunk = os.read(fd, step)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                pos += newline + 1
                tail = chunk[newline + 1 :] + tail
                break
            tail = chunk + tail
        try:
            decode(tail, AgentMessage)
        except (msgspec.DecodeError, msgspec.ValidationError):
            logger.warning("%s: cutting off a torn last line (%d bytes)", sid, len(tail))
            os.ftruncate(fd, pos)
            self._counts.pop(sid, None)
            return b""
        return b"\n"

    def _load(self, sid: str) -> list[AgentMessage]:
        try:
            data = _read(self._log(sid))
        except FileNotFoundError:
            raise SessionNotFound(sid) from None
        lines = data.split(b"\n")
        tail = lines.pop()
        chunks = [line for line in lines if line.strip()]
        if tail.strip():
            try:
                decode(tail, AgentMessage)
            except (msgspec.DecodeError, msgspec.ValidationError):
                logger.warning(
                    "%s: ignoring a torn last line (%d bytes; a crash mid-write?)", sid, len(tail)
                )
            else:
                chunks.append(tail)  # complete, only its newline was lost
        return _decode_all(chunks, sid)

    def _count(self, sid: str, size: int) -> int:
        counted, lines = self._counts.get(sid, (0, 0))
        if size < counted:
            counted, lines = 0, 0
        if size > counted:
            with open(self._log(sid), "rb") as f:
                f.seek(counted)
                while chunk := f.read(1 << 20):
                    lines += chunk.count(b"\n")
            self._counts[sid] = (size, lines)
        return lines

    def _info(self, sid: str) -> SessionInfo:
        # Under the session's lock: never between an append's write and its healing.
        with self._lock(sid):
            meta = self._read_meta(sid)
            try:
                stat = os.stat(self._log(sid))
            except FileNotFoundError:
                raise SessionNotFound(sid) from None
            count = self._count(sid, stat.st_size)
        return SessionInfo(
            id=sid,
            title=meta.title,
            model=meta.model,
            created_at=meta.created_at,
            updated_at=max(meta.created_at, stat.st_mtime_ns // 1_000_000),
            message_count=count,
            metadata=meta.metadata,
        )

    def _list(self) -> list[SessionInfo]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        out: list[SessionInfo] = []
        for name in names:
            sid = name[: -len(".jsonl")]
            if name.endswith(".jsonl") and _ID.fullmatch(sid):
                with contextlib.suppress(SessionNotFound):  # deleted while listing
                    out.append(self._info(sid))
        out.sort(key=lambda s: (s.updated_at, s.created_at), reverse=True)
        return out

    def _update(self, sid: str, changes: dict[str, Any]) -> SessionInfo:
        with self._lock(sid):
            meta = self._read_meta(sid)
            self._write_meta(sid, msgspec.structs.replace(meta, **changes))
        return self._info(sid)

    def _delete(self, sid: str) -> None:
        with self._lock(sid):
            try:
                os.remove(self._log(sid))
            except FileNotFoundError:
                raise SessionNotFound(sid) from None
            with contextlib.suppress(FileNotFoundError):
                os.remove(self._meta_path(sid))
            self._meta.pop(sid, None)
            self._counts.pop(sid, None)
            if self.fsync:
                _fsync_dir(self.directory)

    # ---------------------------------------------------------------- the protocol

    async def create(
        self,
        *,
        session_id: str | None = None,
        title: str = "",
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionInfo:
        meta = _Meta(title=title, model=model, created_at=now_ms(), metadata=metadata or {})
        return await _run(self._create, _new_id(session_id), meta)

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        if not messages:
            return
        payload = b"".join([encode(m) + b"\n" for m in messages])
        await _run(self._append, _new_id(session_id), payload, list(messages))

    async def load(self, session_id: str) -> list[AgentMessage]:
        return await _run(self._load, _new_id(session_id))

    async def info(self, session_id: str) -> SessionInfo:
        return await _run(self._info, _new_id(session_id))

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
        return await _run(self._update, _new_id(session_id), changes)

    async def delete(self, session_id: str) -> None:
        await _run(self._delete, _new_id(session_id))


# --------------------------------------------------------------------------- SQLite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    model TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0,
    metadata BLOB NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions (updated_at DESC);
"""
_COLUMNS = "id, title, model, created_at, updated_at, message_count, metadata"


def _row_info(row: tuple[Any, ...]) -> SessionInfo:
    sid, title, model, created, updated, count, metadata = row
    return SessionInfo(
        id=sid,
        title=title,
        model=model,
        created_at=created,
        updated_at=updated,
        message_count=count,
        metadata=msgspec.json.decode(metadata),
    )


class SqliteSessionStore:
    """Sessions in one SQLite database (standard library ``sqlite3``, WAL mode).

    Every operation runs in a worker thread on a pooled connection (a connection is used by one
    thread at a time). Writes from this process are serialised by a lock, so concurrent appends
    never wait on SQLite's busy handler; other processes are covered by ``timeout``. Close the
    store (``aclose()`` or ``async with``) to close its connections.

    Args:
        path: the database file (created on first use).
        synchronous: SQLite's ``synchronous`` pragma; ``FULL`` makes every commit durable.
        timeout: seconds to wait for another process's write lock.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, synchronous: str = "FULL", timeout: float = 30.0
    ) -> None:
        if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            raise ValueError(f"invalid synchronous mode {synchronous!r}")
        self.path = os.fspath(path)
        self.synchronous = synchronous.upper()
        self.timeout = timeout
        self._guard = threading.Lock()
        self._write = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._ready = False
        self._closed = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every pooled connection; the store cannot be used afterwards."""
        await _run(self.close)

    def close(self) -> None:
        """Synchronous ``aclose()``."""
        with self._guard:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # ---------------------------------------------------------------- worker-thread parts

    def _connect(self) -> sqlite3.Connection:
        import sqlite3

        conn = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            with self._write:
                if not self._ready:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.executescript(_SCHEMA)
                    self._ready = True
        except BaseException:
            conn.close()
            raise
        return conn

    @contextlib.contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        with self._guard:
            if self._closed:
                raise RuntimeError("the session store is closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            conn = self._connect()
        try:
            yield conn
        finally:
            with self._guard:
                closed = self._closed
                if not closed:
                    self._idle.append(conn)
            if closed:
                conn.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._conn() as conn, self._write:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _create(self, info: SessionInfo) -> SessionInfo:
        import sqlite3

        with self._transaction() as conn:
            try:
                conn.execute(
                    f"INSERT INTO sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        info.id,
                        info.title,
                        info.model,
                        info.created_at,
                        info.updated_at,
                        0,
                        msgspec.json.encode(info.metadata),
                    ),
                )
            except sqlite3.IntegrityError:
                raise ValueError(f"session {info.id!r} already exists") from None
        return info

    def _append(self, sid: str, rows: list[bytes], messages: Sequence[AgentMessage]) -> None:
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT message_count, title, model FROM sessions WHERE id = ?", (sid,)
            ).fetchone()
            if row is None:
                raise SessionNotFound(sid)
            count, title, model = row
            conn.executemany(
                "INSERT INTO messages (session_id, seq, data) VALUES (?, ?, ?)",
                [(sid, count + i, data) for i, data in enumerate(rows)],
            )
            title, model = _auto_fields(title, model, messages)
            conn.execute(
                "UPDATE sessions SET message_count = ?, updated_at = ?, title = ?, model = ? "
                "WHERE id = ?",
                (count + len(rows), now_ms(), title, model, sid),
            )

    def _load(self, sid: str) -> list[AgentMessage]:
        with self._conn() as conn:
            # One read transaction, so the messages match the session row.
            conn.execute("BEGIN")
            try:
                if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None:
                    raise SessionNotFound(sid)
                rows = conn.execute(
                    "SELECT data FROM messages WHERE session_id = ? ORDER BY seq", (sid,)
                ).fetchall()
            finally:
                conn.execute("COMMIT")
        return _decode_all([bytes(r[0]) for r in rows], sid)

    def _info(self, sid: str) -> SessionInfo:
        with self._conn() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (sid,)).fetchone()
        if row is None:
            raise SessionNotFound(sid)
        return _row_info(row)

    def _list(self) -> list[SessionInfo]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions ORDER BY updated_at DESC, created_at DESC"
            ).fetchall()
        return [_row_info(r) for r in rows]

    def _update(self, sid: str, changes: dict[str, Any]) -> SessionInfo:
        if "metadata" in changes:
            changes["metadata"] = msgspec.json.encode(changes["metadata"])
        changes["updated_at"] = now_ms()
        with self._transaction() as conn:
            assignments = ", ".join(f"{name} = ?" for name in changes)
            cursor = conn.execute(
                f"UPDATE sessions SET {assignments} WHERE id = ?", (*changes.values(), sid)
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(sid)
        return self._info(sid)

    def _delete(self, sid: str) -> None:
        with self._transaction() as conn:
            if conn.execute("DELETE FROM sessions WHERE id = ?", (sid,)).rowcount == 0:
                raise SessionNotFound(sid)
            conn.execute("DELETE FROM messages WHERE session_id = ?", (sid,))

    # ---------------------------------------------------------------- the protocol

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
        rows = [encode(m) for m in messages]
        await _run(self._append, session_id, rows, list(messages))

    async def load(self, session_id: str) -> list[AgentMessage]:
        return await _run(self._load, session_id)

    async def info(self, session_id: str) -> SessionInfo:
        return await _run(self._info, session_id)

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
        return await _run(self._update, session_id, changes)

    async def delete(self, session_id: str) -> None:
        await _run(self._delete, session_id)


# --------------------------------------------------------------------------- agent helpers


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one real exception of an internal task group (else its first cancellation)."""
    cancelled = anyio.get_cancelled_exc_class()
    errors = [e for e in group.exceptions if not isinstance(e, cancelled)]
    if not errors:
        return group.exceptions[0]
    if len(errors) == 1:
        error = errors[0]
        return _single(error) if isinstance(error, BaseExceptionGroup) else error
    return group


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

    @contextlib.asynccontextmanager
    async def running(self, *, final_flush_timeout: float = 10.0) -> AsyncIterator[SessionRecorder]:
        """Run the drain task around a block, then flush what is left.

        The final flush also runs when the block is cancelled (shielded; it starts no new
        append after ``final_flush_timeout`` seconds), so a cancelled run keeps every message
        it committed. If the store fails while the block runs, draining stops (the
        failure is logged) and the final flush tries again.

        Raises:
            Exception: whatever the store raised in the final flush; an exception from the
                block comes out as itself, never wrapped in an exception group.
        """
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._drain)
                try:
                    yield self
                finally:
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            raise _single(group) from None
        finally:
            with anyio.move_on_after(final_flush_timeout, shield=True):
                await self.flush()
