"""``SqliteSessionStore``: every session in one SQLite database (``sqlite3`` loads on first use)."""

from __future__ import annotations

import contextlib
import os
import threading
from typing import TYPE_CHECKING, Any, Self, TypeVar

import msgspec

from ._errors import SessionNotFound, SessionStoreError
from ._session_codec import decode_records
from ._session_store import SessionInfo, _auto_fields, _run, _ThreadedStore, logger
from ._types import AgentMessage, now_ms

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Iterator, Sequence

__all__ = ["SqliteSessionStore"]

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


def _as_bytes(value: object) -> bytes:
    # SQLite keeps whatever type a row was given; another program may have written text.
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8", "replace")


def _as_int(value: object) -> int:
    # A column another program wrote may hold text, a real, a blob or NULL: a count or a time
    # that is not a whole number reads as 0.
    if type(value) is int:
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str | bytes):
        with contextlib.suppress(ValueError):
            return int(value)
    return 0


_metadata_decoder = msgspec.json.Decoder(dict[str, Any])
T = TypeVar("T")
# SQLite's codes for a place the process may not write (the file, its journal, its directory)
# and for a database it may not open.
_READ_ONLY = {"SQLITE_READONLY", "SQLITE_READONLY_DIRECTORY", "SQLITE_CANTOPEN"}


def _row_info(row: tuple[Any, ...]) -> SessionInfo:
    sid, title, model, created, updated, count, metadata = row
    try:
        decoded = _metadata_decoder.decode(metadata)
    except Exception as exc:  # noqa: BLE001 - a hostile row costs only its metadata
        logger.warning("%s: unreadable metadata, using none: %s", sid, exc)
        decoded = {}
    return SessionInfo(
        id=str(sid),
        title=title if isinstance(title, str) else "",
        model=model if isinstance(model, str) else None,
        created_at=_as_int(created),
        updated_at=_as_int(updated),
        message_count=_as_int(count),
        metadata=decoded,
    )


class SqliteSessionStore(_ThreadedStore[list[bytes]]):
    """Sessions in one SQLite database (standard library ``sqlite3``, WAL mode).

    Every operation runs in a worker thread on a pooled connection (a connection is used by one
    thread at a time). Writes from this process are serialised by a lock, so concurrent appends
    never wait on SQLite's busy handler; other processes are covered by ``timeout``. Each append
    is one transaction: all or none, a full disk included. A row that is not a message is
    skipped with a warning; the rest of the session loads. Close the store (``aclose()`` or
    ``async with``) to close its connections.

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
        self._read_only = False  # set once the place turns out to be one we may not write

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

    def _pack(self, records: list[bytes]) -> list[bytes]:
        return records

    def _place(self) -> str:
        return self.path

    def _store_error(self, exc: Exception) -> SessionStoreError | None:
        import sqlite3

        if not isinstance(exc, sqlite3.Error):
            return super()._store_error(exc)
        code = getattr(exc, "sqlite_errorname", "")
        if code == "SQLITE_NOTADB":
            return SessionStoreError(self.path, f"not a SQLite database ({exc})")
        if code == "SQLITE_CANTOPEN":
            return SessionStoreError(self.path, f"cannot open it ({exc})")
        if code in _READ_ONLY or "readonly" in str(exc):
            return SessionStoreError(self.path, f"cannot write here ({exc})")
        return SessionStoreError(self.path, str(exc))

    # ---------------------------------------------------------------- worker-thread parts

    def _connect(self) -> sqlite3.Connection:
        import sqlite3

        if self._read_only:
            # A WAL database can only be read where SQLite may create its ``-shm`` file, or
            # when opened immutable: read-only, without locks. Where we may not write, neither
            # can a writer of ours; another user's writer would not be seen consistently.
            from urllib.parse import quote

            uri = f"file:{quote(os.path.abspath(self.path))}?immutable=1"
            return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
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

    def _reading(self, read: Callable[[sqlite3.Connection], T]) -> T:
        """``read`` on a pooled connection; where the store may not write (a read-only
        directory, file or medium), again on a read-only one."""
        import sqlite3

        try:
            with self._conn() as conn:
                return read(conn)
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorname", "")
            if self._read_only or code not in _READ_ONLY or not os.path.isfile(self.path):
                raise
            logger.info("%s: cannot write here (%s); reading it read-only", self.path, exc)
            with self._guard:
                self._read_only = True
                idle, self._idle = self._idle, []
            for conn in idle:
                conn.close()
            with self._conn() as conn:
                return read(conn)

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

    def _append(
        self,
        sid: str,
        rows: list[bytes],
        messages: Sequence[AgentMessage],
        claim: Callable[[], None],
    ) -> None:
        # One transaction: a full disk or a crash leaves none of the rows.
        with self._transaction() as conn:
            claim()
            row = conn.execute(
                "SELECT message_count, title, model FROM sessions WHERE id = ?", (sid,)
            ).fetchone()
            if row is None:
                raise SessionNotFound(sid)
            count, title, model = row
            count = _as_int(count)
            title = title if isinstance(title, str) else ""
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
        def read(conn: sqlite3.Connection) -> list[Any]:
            # One read transaction, so the messages match the session row.
            conn.execute("BEGIN")
            try:
                if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None:
                    raise SessionNotFound(sid)
                return conn.execute(
                    "SELECT data FROM messages WHERE session_id = ? ORDER BY seq", (sid,)
                ).fetchall()
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

        rows = self._reading(read)
        return decode_records([_as_bytes(r[0]) for r in rows], sid)

    def _info(self, sid: str) -> SessionInfo:
        row = self._reading(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (sid,)
            ).fetchone()
        )
        if row is None:
            raise SessionNotFound(sid)
        return _row_info(row)

    def _list(self) -> list[SessionInfo]:
        rows = self._reading(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM sessions ORDER BY updated_at DESC, created_at DESC"
            ).fetchall()
        )
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
