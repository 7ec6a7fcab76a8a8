"""``JsonlSessionStore``: one append-only JSONL file per session, plus a small metadata file."""

from __future__ import annotations

import contextlib
import os
import threading
from typing import TYPE_CHECKING, Any

import msgspec

from ._codec import decode, encode
from ._sessions import (
    _ID,
    SessionInfo,
    SessionNotFound,
    _auto_fields,
    _decode_all,
    _new_id,
    _ThreadedStore,
    logger,
)
from ._types import AgentMessage

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["JsonlSessionStore"]


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


class JsonlSessionStore(_ThreadedStore[bytes]):
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

    def _session_id(self, session_id: str) -> str:
        # Ids name files: a malformed one never reaches a path.
        return _new_id(session_id)

    def _encode(self, messages: Sequence[AgentMessage]) -> bytes:
        return b"".join([encode(m) + b"\n" for m in messages])

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

    def _create(self, info: SessionInfo) -> SessionInfo:
        sid = info.id
        meta = _Meta(
            title=info.title, model=info.model, created_at=info.created_at, metadata=info.metadata
        )
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
