"""Session stores under hostile conditions: other processes, a full disk, unencodable messages
and hostile records (issue 14, findings 5, 6 and 7)."""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import subprocess
import sys
import threading
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from agentloop import (
    AgentMessage,
    AssistantMessage,
    StopReason,
    Text,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    encode,
)
from agentloop.sessions import (
    JsonlSessionStore,
    SessionRecorder,
    SessionStore,
    SqliteSessionStore,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

UNENCODABLE = "<agentloop: unencodable"  # how a degraded value starts
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file locks")


def user(text: str) -> UserMessage:
    return UserMessage(content=[Text(text=text)], timestamp=1)


def said(text: str) -> AssistantMessage:
    return AssistantMessage(content=[Text(text=text)], timestamp=2)


def numbered(count: int, size: int = 0) -> list[AgentMessage]:
    return [user(f"{i} " + "x" * size) for i in range(count)]


def texts(messages: list[AgentMessage]) -> list[str]:
    return [m.content[0].text.split(" ")[0] for m in messages]  # type: ignore[union-attr]


@pytest.fixture(params=["jsonl", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "jsonl":
        yield JsonlSessionStore(tmp_path / "sessions", fsync=False)
    else:
        async with SqliteSessionStore(tmp_path / "sessions.db", synchronous="OFF") as db:
            yield db


# --------------------------------------------------------------------------- finding 5

# One writer of the stress test. It appends one message at a time, as a recorder does, and
# its file system returns short writes (POSIX allows ``write`` to take fewer bytes than asked,
# as network file systems and signals make it do): a line is then written in several calls,
# which widens the window in which the other process can see it half-written.
_WRITER = """
import os, sys
import anyio
from agentloop import Text, UserMessage
from agentloop.sessions import JsonlSessionStore

directory, sid, tag, count, backend = sys.argv[1:6]
real_write = os.write
os.write = lambda fd, data: real_write(fd, bytes(data[:512]))
store = JsonlSessionStore(directory, fsync=False)
pad = "x" * 1500

async def main() -> None:
    for i in range(int(count)):
        await store.append(sid, [UserMessage(content=[Text(text=f"{tag}{i} {pad}")])])

anyio.run(anyio.sleep, 0, backend=backend)  # the backend imported before the start
print("ready", flush=True)
sys.stdin.readline()
anyio.run(main, backend=backend)
"""
STRESS_ROUNDS = int(os.environ.get("AGENTLOOP_STRESS_ROUNDS", "3"))
STRESS_MESSAGES = 300  # per process and round


@posix_only
def test_two_processes_appending_to_one_jsonl_session_lose_nothing(tmp_path: Path) -> None:
    lost = 0
    interleaved = 0
    for round_number in range(STRESS_ROUNDS):
        directory = tmp_path / f"round{round_number}"
        store = JsonlSessionStore(directory, fsync=False)
        sid = anyio.run(store.create).id
        writers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _WRITER,
                    str(directory),
                    sid,
                    tag,
                    f"{STRESS_MESSAGES}",
                    backend,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for tag, backend in (("a", "asyncio"), ("b", "trio"))
        ]
        try:
            for writer in writers:
                assert writer.stdout is not None
                assert writer.stdout.readline().strip() == "ready"
            for writer in writers:
                assert writer.stdin is not None
                writer.stdin.write("go\n")
                writer.stdin.close()
            for writer in writers:
                assert writer.wait(timeout=60) == 0
        finally:
            for writer in writers:
                writer.kill()
                writer.wait()
                assert writer.stdout is not None
                writer.stdout.close()
        loaded = texts(anyio.run(store.load, sid))
        lost += 2 * STRESS_MESSAGES - len(loaded)
        # Each writer's messages are all there, once, in its own order.
        for tag in "ab":
            assert [t for t in loaded if t[0] == tag] == [
                f"{tag}{i}" for i in range(STRESS_MESSAGES)
            ]
        interleaved += sum(1 for x, y in zip(loaded, loaded[1:], strict=False) if x[0] != y[0])
    assert lost == 0
    assert interleaved > 0  # the writers really ran at the same time


@posix_only
@pytest.mark.anyio
async def test_jsonl_repair_never_cuts_a_line_another_writer_is_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    store = JsonlSessionStore(tmp_path, fsync=False)
    sid = (await store.create()).id
    await store.append(sid, [user("one")])
    log = tmp_path / f"{sid}.jsonl"

    waiting = threading.Event()
    real_flock = fcntl.flock

    def flock(fd: Any, operation: int) -> None:
        if threading.current_thread() is not threading.main_thread():
            waiting.set()  # the store's worker thread asks for the lock
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)

    # Another process, mid-way through writing its line, holding the file's lock.
    other = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        real_flock(other, fcntl.LOCK_EX)
        line = encode(said("the other writer's answer")) + b"\n"
        os.write(other, line[:10])
        async with anyio.create_task_group() as tg:
            tg.start_soon(store.append, sid, [user("two")])
            assert await anyio.to_thread.run_sync(waiting.wait, 5.0)
            os.write(other, line[10:])
            real_flock(other, fcntl.LOCK_UN)
    finally:
        os.close(other)
    assert await store.load(sid) == [user("one"), said("the other writer's answer"), user("two")]


@pytest.mark.anyio
async def test_jsonl_without_fcntl_serialises_appends_within_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentloop._jsonl_store as jsonl

    monkeypatch.setattr(jsonl, "_fcntl", None)
    store = JsonlSessionStore(tmp_path, fsync=False)
    assert store.locks_across_processes is False
    sid = (await store.create()).id
    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(store.append, sid, [user(f"{i}")])
    assert sorted(texts(await store.load(sid)), key=int) == [str(i) for i in range(20)]
    assert (await store.info(sid)).message_count == 20


# --------------------------------------------------------------------------- finding 6


REAL_WRITE = os.write
REAL_FSYNC = os.fsync


class FullDisk:
    """``os.write`` and ``os.fsync`` for one file: ``budget`` more bytes fit, then ENOSPC."""

    def __init__(self, path: Path, budget: int, *, fail_fsync: bool = False) -> None:
        stat = os.stat(path)
        self.file = (stat.st_dev, stat.st_ino)
        self.budget = budget
        self.fail_fsync = fail_fsync

    def is_ours(self, fd: int) -> bool:
        try:
            stat = os.fstat(fd)
        except OSError:
            return False
        return (stat.st_dev, stat.st_ino) == self.file

    def write(self, fd: int, data: Any) -> int:
        if not self.is_ours(fd):
            return REAL_WRITE(fd, data)
        if self.budget <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        written = REAL_WRITE(fd, bytes(memoryview(data)[: self.budget]))
        self.budget -= written
        return written

    def fsync(self, fd: int) -> None:
        if self.fail_fsync and self.is_ours(fd):
            raise OSError(errno.EIO, "Input/output error")
        REAL_FSYNC(fd)


@pytest.mark.anyio
@pytest.mark.parametrize("budget", [0, 1, 30, 75, 200])
async def test_jsonl_a_full_disk_leaves_nothing_and_the_retry_stores_each_message_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    store = JsonlSessionStore(tmp_path, fsync=False)
    sid = (await store.create()).id
    await store.append(sid, [said("before")])
    log = tmp_path / f"{sid}.jsonl"
    before = log.read_bytes()
    batch = numbered(4)  # each line is about 60 bytes: the budgets end in every line

    disk = FullDisk(log, budget)
    monkeypatch.setattr(os, "write", disk.write)
    with pytest.raises(OSError, match="No space left") as caught:
        await store.append(sid, batch)
    assert caught.value.errno == errno.ENOSPC
    assert log.read_bytes() == before
    assert (await store.info(sid)).message_count == 1

    disk.budget = 1 << 20  # space freed: the retry
    await store.append(sid, batch)
    assert await store.load(sid) == [said("before"), *batch]
    assert (await store.info(sid)).message_count == 5


@pytest.mark.anyio
async def test_jsonl_a_failed_fsync_rolls_the_append_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JsonlSessionStore(tmp_path, fsync=True)
    sid = (await store.create()).id
    await store.append(sid, [said("before")])
    log = tmp_path / f"{sid}.jsonl"
    before = log.read_bytes()
    disk = FullDisk(log, 1 << 20, fail_fsync=True)
    monkeypatch.setattr(os, "fsync", disk.fsync)
    with pytest.raises(OSError, match="Input/output error"):
        await store.append(sid, numbered(3))
    assert log.read_bytes() == before
    disk.fail_fsync = False
    await store.append(sid, numbered(3))
    assert await store.load(sid) == [said("before"), *numbered(3)]


@pytest.fixture
def full_disk(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str, bool], None]:
    """``full_disk(sid, full)``: a disk that takes one more small line, then is full."""

    def fill(sid: str, full: bool) -> None:
        if isinstance(store, JsonlSessionStore):
            disk = FullDisk(tmp_path / "sessions" / f"{sid}.jsonl", 70 if full else 1 << 30)
            monkeypatch.setattr(os, "write", disk.write)
        else:
            assert isinstance(store, SqliteSessionStore)
            with store._conn() as conn:
                pages = conn.execute("PRAGMA page_count").fetchone()[0]
                conn.execute(f"PRAGMA max_page_count = {pages if full else 1 << 30}")

    return fill


@pytest.mark.anyio
async def test_recorder_retry_after_a_full_disk_never_duplicates(
    store: SessionStore, full_disk: Callable[[str, bool], None]
) -> None:
    sid = (await store.create()).id
    await store.append(sid, [said("before")])
    recorder = SessionRecorder(store, sid)
    batch = numbered(4, size=3000)  # larger than a page: the database needs new pages too
    for message in batch:
        recorder.record(message)

    full_disk(sid, True)
    with pytest.raises((OSError, sqlite3.OperationalError)):
        await recorder.flush()
    assert recorder.pending == 4
    assert await store.load(sid) == [said("before")]
    assert (await store.info(sid)).message_count == 1

    full_disk(sid, False)
    await recorder.flush()
    assert texts(await store.load(sid)) == ["before", "0", "1", "2", "3"]
    assert (await store.info(sid)).message_count == 5
    assert (recorder.pending, recorder.stored) == (0, 4)


# --------------------------------------------------------------------------- finding 7


class Opaque:
    """An object JSON cannot represent."""

    def __repr__(self) -> str:
        return "Opaque(secret-free)"


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"down": [value]}
    return value


def unencodable() -> list[AgentMessage]:
    return [
        user("before"),
        AssistantMessage(
            content=[ToolCall(id="c1", name="probe", arguments={"deep": nested(1500)})],
            stop_reason=StopReason.TOOL_USE,
            timestamp=2,
        ),
        ToolResultMessage(
            tool_call_id="c1",
            tool_name="probe",
            content=[Text(text="found it")],
            details={"kept": 1, "object": Opaque()},
            timestamp=3,
        ),
        said("after"),
    ]


def append_raw(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def depth_of(value: Any) -> int:
    depth = 0
    while isinstance(value, dict | list):
        value = value["down"] if isinstance(value, dict) else value[0]
        depth += 1
    return depth


@pytest.mark.anyio
async def test_an_unencodable_message_is_stored_degraded_and_later_ones_too(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    sid = (await store.create()).id
    with caplog.at_level(logging.WARNING, logger="agentloop.sessions"):
        await store.append(sid, unencodable())
        await store.append(sid, [user("later")])
    assert "stored in a degraded form" in caplog.text
    loaded = await store.load(sid)
    assert [type(m) for m in loaded] == [
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        AssistantMessage,
        UserMessage,
    ]
    assert loaded[0] == user("before")
    assert loaded[3:] == [said("after"), user("later")]

    call = loaded[1].content[0]  # type: ignore[union-attr]
    assert isinstance(call, ToolCall)
    assert (call.id, call.name) == ("c1", "probe")
    clipped = call.arguments["deep"]
    assert 1 < depth_of(clipped) < 1500
    bottom = clipped
    while isinstance(bottom, dict | list):
        bottom = bottom["down"] if isinstance(bottom, dict) else bottom[0]
    assert bottom == f"{UNENCODABLE} nested too deep>"

    result = loaded[2]
    assert isinstance(result, ToolResultMessage)
    assert result.content == [Text(text="found it")]
    assert result.details == {"kept": 1, "object": f"{UNENCODABLE} Opaque: Opaque(secret-free)>"}
    assert (await store.info(sid)).message_count == 5


# Lines another program (or a bug, or an attacker with write access) could leave in a log.
HOSTILE_LINES = [
    b"not json at all",
    b"\xff\xfe\x00 binary",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"role":"tool_result","tool_call_id":"x","content":[],"details":'
    + b"[" * 50_000
    + b"]" * 50_000
    + b"}",
    b'{"role":"user","content":"a string where a list belongs"}',
    b'{"role":42}',
    b"[]",
    b'"a string"',
    b"null",
    b'{"role":"assistant","content":[{"type":"tool_call","id":1,"name":[]}]}',
    b'{"role":"no-such-role","content":[]}',
    b'{"role":"user","content":[],"timestamp":1e999}',
    b'{"role":"user","content":[]},{"role":"user","content":[]}',
]


@pytest.mark.anyio
async def test_hostile_jsonl_lines_are_skipped_and_reported_the_rest_loads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonlSessionStore(tmp_path, fsync=False)
    sid = (await store.create()).id
    log = tmp_path / f"{sid}.jsonl"
    good: list[AgentMessage] = []
    for i, line in enumerate(HOSTILE_LINES):
        good.append(user(f"good {i}"))
        await store.append(sid, good[-1:])
        append_raw(log, line + b"\n")
    append_raw(log, b"[" * 100_000)  # a hostile torn last line, too
    with caplog.at_level(logging.WARNING, logger="agentloop.sessions"):
        assert await store.load(sid) == good
    assert caplog.text.count("skipping unreadable record") == len(HOSTILE_LINES)
    assert "ignoring a torn last line" in caplog.text

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agentloop.sessions"):
        await store.append(sid, [said("still appendable")])
        assert await store.load(sid) == [*good, said("still appendable")]
    assert "cutting off a torn last line" in caplog.text
    # info() counts what load() returns: not the hostile lines (issue 34 §3).
    assert (await store.info(sid)).message_count == len(good) + 1


@pytest.mark.anyio
async def test_hostile_sqlite_rows_are_skipped_and_reported_the_rest_loads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.db"
    async with SqliteSessionStore(path, synchronous="OFF") as store:
        sid = (await store.create()).id
        await store.append(sid, [user("first")])
        with sqlite3.connect(path) as conn:
            conn.executemany(
                "INSERT INTO messages (session_id, seq, data) VALUES (?, ?, ?)",
                [(sid, 1 + i, line) for i, line in enumerate(HOSTILE_LINES)],
            )
            conn.execute(
                "UPDATE sessions SET message_count = ?, metadata = ? WHERE id = ?",
                (1 + len(HOSTILE_LINES), b"[" * 100_000, sid),
            )
        conn.close()
        await store.append(sid, [user("last")])
        with caplog.at_level(logging.WARNING, logger="agentloop.sessions"):
            assert await store.load(sid) == [user("first"), user("last")]
            info = await store.info(sid)
            assert [s.id for s in await store.list_sessions()] == [sid]
        assert caplog.text.count("skipping unreadable record") == len(HOSTILE_LINES)
        assert info.metadata == {}
        assert "unreadable metadata" in caplog.text
