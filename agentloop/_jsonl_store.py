"""``JsonlSessionStore``: one append-only JSONL file per session, plus a small metadata file.

Several processes may share a directory: every change to a session happens under an exclusive
``flock`` of its log (reads take a shared one), so appends never interleave and the repair of a
torn last line only ever cuts what a writer that died left behind. Where ``fcntl`` is missing
(Windows), the locks cover the threads of one process only: there, one process per directory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from typing import TYPE_CHECKING, Any

import msgspec

from ._codec import decode
from ._errors import SessionNotFound
from ._session_codec import decode_records, is_message
from ._session_store import (
    _ID,
    SessionInfo,
    _auto_fields,
    _new_id,
    _ThreadedStore,
    logger,
)
from ._types import AgentMessage

if TYPE_CHECKING:
    import types
    from collections.abc import Callable, Iterator, Sequence


__all__ = ["JsonlSessionStore"]


def _import_fcntl() -> types.ModuleType | None:
    try:
        import fcntl
    except ImportError:  # Windows
        return None
    return fcntl


_fcntl = _import_fcntl()
_BINARY = getattr(os, "O_BINARY", 0)


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


@contextlib.contextmanager
def _locked(fd: int, *, exclusive: bool) -> Iterator[None]:
    """Hold ``flock`` on ``fd`` (no-op without ``fcntl``), released even if a child process
    inherited the descriptor."""
    if _fcntl is None:
        yield
        return
    _fcntl.flock(fd, _fcntl.LOCK_EX if exclusive else _fcntl.LOCK_SH)
    try:
        yield
    finally:
        _fcntl.flock(fd, _fcntl.LOCK_UN)


def _read_fd(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _count_messages(records: list[bytes]) -> int:
    """How many of ``records`` read as messages (all of them, at C speed, when all do)."""
    if not records:
        return 0
    with contextlib.suppress(Exception):
        if len(decode(b"[" + b",".join(records) + b"]", list[AgentMessage])) == len(records):
            return len(records)
    return sum(1 for record in records if is_message(record))


class JsonlSessionStore(_ThreadedStore[bytes]):
    """One append-only JSONL file per session in ``directory``, plus a small metadata file.

    Each append is written under an exclusive lock of the log (``flock``; see the module notes)
    and (with ``fsync``) flushed to disk before it returns. It is all or none: if a write or
    the flush fails (a full disk), the log is cut back to where the append began, so a retry
    never stores a message twice. A crash mid-write leaves a torn last line: ``load`` ignores
    it with a logged warning, and the next append (holding the lock, so no live writer is
    mid-line) cuts it off first. A record that is not a message (garbage, nesting too deep,
    wrong types) is skipped with a warning; the rest of the session loads. ``message_count``
    counts what ``load`` returns.

    Args:
        directory: where the files live (created on first use).
        fsync: flush every write to disk (turn off only for tests and throwaway sessions).

    Attributes:
        locks_across_processes: whether appends from other processes are serialised too
            (``False`` where ``fcntl`` is missing: there, one process per directory).
    """

    def __init__(self, directory: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.directory = os.fspath(directory)
        self.fsync = fsync
        self.locks_across_processes = _fcntl is not None
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._meta: dict[str, tuple[tuple[int, int, int], _Meta]] = {}  # id -> (file stat, meta)
        # id -> ((device, inode), bytes up to the last newline counted, lines)
        self._counts: dict[str, tuple[tuple[int, int], int, int]] = {}

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

    def _place(self) -> str:
        return self.directory

    def _session_id(self, session_id: str) -> str:
        # Ids name files: a malformed one never reaches a path.
        return _new_id(session_id)

    def _pack(self, records: list[bytes]) -> bytes:
        return b"".join([record + b"\n" for record in records])

    # ---------------------------------------------------------------- worker-thread parts

    @contextlib.contextmanager
    def _open_log(self, sid: str, flags: int, *, exclusive: bool) -> Iterator[int]:
        """The session's log, open and locked.

        Raises:
            SessionNotFound: no such session (or it was deleted while we waited for the lock).
        """
        path = self._log(sid)
        while True:
            try:
                fd = os.open(path, flags | _BINARY)
            except FileNotFoundError:
                raise SessionNotFound(sid) from None
            try:
                with _locked(fd, exclusive=exclusive):
                    # Deleted, maybe created again, while we waited: open the log anew.
                    mine = os.fstat(fd)
                    try:
                        now = os.stat(path)
                    except FileNotFoundError:
                        now = None
                    if now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                        yield fd
                        return
            finally:
                os.close(fd)

    def _write_meta(self, sid: str, meta: _Meta) -> None:
        path = self._meta_path(sid)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(msgspec.json.encode(meta))
                f.flush()
                if self.fsync:
                    os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise
        finally:
            self._meta.pop(sid, None)
        if self.fsync:
            _fsync_dir(self.directory)

    def _read_meta(self, sid: str) -> _Meta:
        """The metadata, cached until its file changes (another process may change it)."""
        path = self._meta_path(sid)
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            # The log was created but the process died before the metadata was written.
            try:
                created = os.stat(self._log(sid)).st_mtime_ns // 1_000_000
            except FileNotFoundError:
                raise SessionNotFound(sid) from None
            return _Meta(created_at=created)
        key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        cached = self._meta.get(sid)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            meta = _meta_decoder.decode(_read(path))
        except Exception as exc:  # noqa: BLE001 - a hostile file costs only its defaults
            logger.warning("%s: unreadable metadata, using defaults: %s", sid, exc)
            meta = _Meta(created_at=stat.st_mtime_ns // 1_000_000)
        self._meta[sid] = (key, meta)
        return meta

    def _create(self, info: SessionInfo) -> SessionInfo:
        sid = info.id
        meta = _Meta(
            title=info.title, model=info.model, created_at=info.created_at, metadata=info.metadata
        )
        os.makedirs(self.directory, exist_ok=True)
        with self._lock(sid):
            try:
                fd = os.open(self._log(sid), os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                raise ValueError(f"session {sid!r} already exists") from None
            try:
                with _locked(fd, exclusive=True):
                    self._write_meta(sid, meta)  # also makes the log's directory entry durable
            finally:
                os.close(fd)
            self._counts.pop(sid, None)
        return self._info(sid)

    def _append(
        self, sid: str, payload: bytes, messages: Sequence[AgentMessage], claim: Callable[[], None]
    ) -> None:
        with self._lock(sid), self._open_log(sid, os.O_RDWR | os.O_APPEND, exclusive=True) as fd:
            claim()
            size = os.fstat(fd).st_size
            if size:
                os.lseek(fd, size - 1, os.SEEK_SET)
                if os.read(fd, 1) != b"\n":
                    payload = self._heal(sid, fd, size) + payload
                    size = os.fstat(fd).st_size
            try:
                view = memoryview(payload)
                while view:
                    written = os.write(fd, view)
                    if written <= 0:
                        raise OSError(errno.EIO, "a write made no progress")
                    view = view[written:]
                if self.fsync:
                    os.fsync(fd)
            except BaseException:
                self._roll_back(sid, fd, size)
                raise
            # The messages are stored: nothing below may fail the append (a retry would
            # store them twice).
            try:
                self._note_title(sid, messages)
            except Exception as exc:  # noqa: BLE001
                logger.warning("%s: could not update the title or model: %s", sid, exc)

    def _roll_back(self, sid: str, fd: int, size: int) -> None:
        """Cut the log back to ``size``, where a failed append began."""
        try:
            os.ftruncate(fd, size)
            if self.fsync:
                os.fsync(fd)
        except OSError as exc:
            logger.error("%s: could not roll back a failed append: %s", sid, exc)

    def _note_title(self, sid: str, messages: Sequence[AgentMessage]) -> None:
        meta = self._read_meta(sid)
        title, model = _auto_fields(meta.title, meta.model, messages)
        if (title, model) != (meta.title, meta.model):
            self._write_meta(sid, msgspec.structs.replace(meta, title=title, model=model))

    def _heal(self, sid: str, fd: int, size: int) -> bytes:
        """Deal with a last line lacking its newline; returns what to write before the append.

        Called under the exclusive lock, so no live writer is mid-line: a complete record that
        only lost its newline gets one; a torn record (a crash mid-write) is cut off, since no
        reader could ever use it.
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
        if is_message(tail):
            return b"\n"
        logger.warning("%s: cutting off a torn last line (%d bytes)", sid, len(tail))
        os.ftruncate(fd, pos)
        return b""

    def _load(self, sid: str) -> list[AgentMessage]:
        with self._open_log(sid, os.O_RDONLY, exclusive=False) as fd:
            data = _read_fd(fd)
        lines = data.split(b"\n")
        tail = lines.pop()
        records = [line for line in lines if line.strip()]
        if tail.strip():
            if is_message(tail):
                records.append(tail)  # complete, only its newline was lost
            else:
                logger.warning(
                    "%s: ignoring a torn last line (%d bytes; a crash mid-write?)", sid, len(tail)
                )
        return decode_records(records, sid)

    def _count(self, sid: str, fd: int) -> int:
        """How many messages ``load`` would return: the complete lines that read as messages,
        and a last line that lost only its newline.

        Complete lines are counted once (the log only ever changes after its last newline:
        appends, torn-line cuts, roll-backs), so what was counted stays counted.
        """
        stat = os.fstat(fd)
        file = (stat.st_dev, stat.st_ino)
        counted, messages = 0, 0
        cached = self._counts.get(sid)
        if cached is not None and cached[0] == file and cached[1] <= stat.st_size:
            _, counted, messages = cached
        tail = b""
        if stat.st_size > counted:
            os.lseek(fd, counted, os.SEEK_SET)
            lines = _read_fd(fd).split(b"\n")
            tail = lines.pop()
            complete = [line for line in lines if line.strip()]
            messages += _count_messages(complete)
            counted += sum(len(line) + 1 for line in lines)
        self._counts[sid] = (file, counted, messages)
        if tail.strip() and is_message(tail):
            messages += 1
        return messages

    def _info(self, sid: str) -> SessionInfo:
        with self._lock(sid), self._open_log(sid, os.O_RDONLY, exclusive=False) as fd:
            meta = self._read_meta(sid)
            stat = os.fstat(fd)
            count = self._count(sid, fd)
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
        with self._lock(sid), self._open_log(sid, os.O_RDONLY, exclusive=True):
            meta = self._read_meta(sid)
            self._write_meta(sid, msgspec.structs.replace(meta, **changes))
        return self._info(sid)

    def _delete(self, sid: str) -> None:
        with self._lock(sid):
            if _fcntl is None:  # Windows cannot remove a file it holds open
                self._remove(sid)
            else:
                with self._open_log(sid, os.O_RDONLY, exclusive=True):
                    self._remove(sid)

    def _remove(self, sid: str) -> None:
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
