"""The session recorder at its edges: successive event loops, a slow or failing store, and
messages a store cannot take (issue 13 items 8 and 9, issue 14 finding 7)."""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from agentloop import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    MessageEnd,
    Text,
    ToolResultMessage,
    UserMessage,
)
from agentloop._session_store import _auto_fields as real
from agentloop.sessions import (
    JsonlSessionStore,
    SessionRecorder,
    SessionStore,
    SqliteSessionStore,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Sequence
    from pathlib import Path


def user(text: str) -> UserMessage:
    return UserMessage(content=[Text(text=text)], timestamp=1)


def said(text: str) -> AssistantMessage:
    return AssistantMessage(content=[Text(text=text)], timestamp=2)


def state(recorder: SessionRecorder) -> tuple[int, int, BaseException | None]:
    return recorder.stored, recorder.pending, recorder.last_error


def make_store(kind: str, tmp_path: Path) -> JsonlSessionStore | SqliteSessionStore:
    if kind == "jsonl":
        return JsonlSessionStore(tmp_path / "sessions", fsync=False)
    return SqliteSessionStore(tmp_path / "sessions.db", synchronous="OFF")


@pytest.fixture(params=["jsonl", "sqlite"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[JsonlSessionStore | SqliteSessionStore]:
    made = make_store(request.param, tmp_path)
    yield made
    if isinstance(made, SqliteSessionStore):
        await made.aclose()


# --------------------------------------------------------------------------- issue 13, item 8


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("backends", [("asyncio", "trio", "asyncio"), ("trio", "asyncio", "trio")])
def test_recorder_and_store_work_across_event_loops_and_backends(
    tmp_path: Path, kind: str, backends: tuple[str, ...]
) -> None:
    store = make_store(kind, tmp_path)
    sid = anyio.run(store.create, backend=backends[0]).id
    recorder = SessionRecorder(store, sid)

    async def run(number: int) -> None:
        recording = recorder.running()
        async with recording:
            recorder(MessageEnd(message=user(f"run {number}")))
            recorder(MessageEnd(message=said(f"answer {number}")))
        assert recording.unstored == 0

    async def flush_one_more() -> None:
        recorder.record(user("flushed"))
        await recorder.flush()

    for number, backend in enumerate(backends):
        anyio.run(run, number, backend=backend)
    for backend in backends:
        anyio.run(flush_one_more, backend=backend)

    expected: list[AgentMessage] = []
    for number in range(len(backends)):
        expected += [user(f"run {number}"), said(f"answer {number}")]
    expected += [user("flushed")] * len(backends)
    assert anyio.run(store.load, sid) == expected
    assert state(recorder) == (len(expected), 0, None)
    if isinstance(store, SqliteSessionStore):
        store.close()


# --------------------------------------------------------------------------- issue 13, item 9

HANG = 5.0  # how long a hanging store holds on (main took this long to return: a failure)
TIMEOUT = 0.5  # the final flush's bound in these tests
CALLER = 0.3  # the caller's own deadline around the run
SLACK = 1.5  # generous: two shared cores


class Hang:
    """Blocks a worker thread until released (or ``HANG`` seconds pass); says when it blocks."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()

    def block(self) -> None:
        self.entered.set()
        self.released.wait(HANG)


@pytest.fixture
def hang_mid_write(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hang]:
    """Makes both stores hang inside an append, after it has started writing."""
    import agentloop._jsonl_store as jsonl
    import agentloop._sqlite_store as sqlite

    hang = Hang()

    def auto_fields(*args: Any) -> Any:
        hang.block()
        return real(*args)

    monkeypatch.setattr(jsonl, "_auto_fields", auto_fields)
    monkeypatch.setattr(sqlite, "_auto_fields", auto_fields)
    yield hang
    hang.released.set()


async def run_until_deadline(recorder: SessionRecorder, messages: Sequence[AgentMessage]) -> Any:
    """A run that commits ``messages`` and is then cancelled by its caller's ``CALLER`` deadline;
    returns what ``running()`` reported and how long the caller waited."""
    start = time.monotonic()
    with anyio.move_on_after(CALLER):
        recording = recorder.running(final_flush_timeout=TIMEOUT)
        async with recording:
            for message in messages:
                recorder.record(message)
            await anyio.sleep_forever()
    return recording, time.monotonic() - start


@pytest.mark.anyio
async def test_final_flush_is_bounded_when_an_append_hangs_mid_write(
    store: SessionStore, hang_mid_write: Hang
) -> None:
    sid = (await store.create()).id
    recorder = SessionRecorder(store, sid)
    messages: list[AgentMessage] = [user("one"), said("two"), user("three")]

    recording, waited = await run_until_deadline(recorder, messages)
    assert waited < CALLER + TIMEOUT + SLACK
    assert hang_mid_write.entered.is_set()
    # Reported, not dropped: nothing is known to be stored yet.
    assert recording.unstored == 3
    assert isinstance(recording.error, TimeoutError)
    assert recorder.last_error is recording.error
    assert recorder.pending == 3

    # The abandoned append finishes in its thread; the next flush counts it, never repeats it.
    hang_mid_write.released.set()
    recorder.record(said("four"))
    await recorder.flush()
    assert await store.load(sid) == [*messages, said("four")]
    assert state(recorder) == (4, 0, None)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file locks")
@pytest.mark.anyio
async def test_final_flush_is_bounded_while_another_process_holds_the_jsonl_lock(
    tmp_path: Path,
) -> None:
    import fcntl
    import os

    store = JsonlSessionStore(tmp_path, fsync=False)
    sid = (await store.create()).id
    recorder = SessionRecorder(store, sid)
    messages: list[AgentMessage] = [user("one"), said("two")]

    other = os.open(tmp_path / f"{sid}.jsonl", os.O_RDONLY)
    try:
        fcntl.flock(other, fcntl.LOCK_EX)  # another process's long append
        recording, waited = await run_until_deadline(recorder, messages)
        assert waited < CALLER + TIMEOUT + SLACK
        assert recording.unstored == 2
        assert isinstance(recording.error, TimeoutError)
    finally:
        os.close(other)
    # The append that waited for the lock was called off: it never writes.
    assert await store.load(sid) == []
    await recorder.flush()
    assert await store.load(sid) == messages
    assert (recorder.stored, recorder.pending) == (2, 0)


class SlowStore:
    """An async store of the application's own that takes ``HANG`` seconds per append."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.slow = True

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        if self.slow:
            await anyio.sleep(HANG)
        await self.inner.append(session_id, messages)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.anyio
async def test_final_flush_is_bounded_with_a_slow_async_store(tmp_path: Path) -> None:
    slow = SlowStore(JsonlSessionStore(tmp_path, fsync=False))
    sid = (await slow.inner.create()).id
    recorder = SessionRecorder(slow, sid, final_flush_timeout=TIMEOUT)

    start = time.monotonic()
    with anyio.move_on_after(CALLER):
        recording = recorder.running()  # the recorder's own bound, as an Agent uses it
        async with recording:
            recorder.record(user("one"))
            await anyio.sleep_forever()
    assert time.monotonic() - start < CALLER + TIMEOUT + SLACK
    assert (recording.unstored, recorder.pending) == (1, 1)
    assert isinstance(recording.error, TimeoutError)

    slow.slow = False
    await recorder.flush()
    assert await slow.inner.load(sid) == [user("one")]


class GatedStore:
    """An async store of the application's own whose append waits at a gate; it notes whether
    an append was cancelled."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.entered = anyio.Event()
        self.gate = anyio.Event()
        self.cancelled = False

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        self.entered.set()
        try:
            await self.gate.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        await self.inner.append(session_id, messages)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.anyio
async def test_a_block_ending_normally_lets_the_append_under_way_finish(tmp_path: Path) -> None:
    gated = GatedStore(JsonlSessionStore(tmp_path, fsync=False))
    sid = (await gated.inner.create()).id
    recorder = SessionRecorder(gated, sid)

    async def open_the_gate() -> None:
        await anyio.wait_all_tasks_blocked()  # the recording waits for the drain
        gated.gate.set()

    async with anyio.create_task_group() as tg:
        recording = recorder.running(final_flush_timeout=HANG)
        async with recording:
            recorder.record(user("one"))
            await gated.entered.wait()
            tg.start_soon(open_the_gate)
    assert not gated.cancelled
    assert (recording.unstored, recording.error) == (0, None)
    assert await gated.inner.load(sid) == [user("one")]


@pytest.mark.anyio
async def test_a_cancelled_run_never_cuts_off_an_append_to_a_store_of_the_applications_own(
    tmp_path: Path,
) -> None:
    # A wrapper around a built-in store cannot tell whether a cancelled append stored its batch:
    # cutting it off and appending the batch again could store it twice.
    gated = GatedStore(JsonlSessionStore(tmp_path, fsync=False))
    sid = (await gated.inner.create()).id
    recorder = SessionRecorder(gated, sid, final_flush_timeout=HANG)

    async def open_the_gate() -> None:
        await anyio.wait_all_tasks_blocked()  # the cancelled recording waits for the drain
        gated.gate.set()

    async with anyio.create_task_group() as tg:
        with anyio.CancelScope() as run:
            recording = recorder.running()
            async with recording:
                recorder.record(user("one"))
                await gated.entered.wait()
                run.cancel()  # the caller gives up mid-append
                tg.start_soon(open_the_gate)
                await anyio.sleep_forever()
    assert not gated.cancelled
    assert (recording.unstored, recording.error) == (0, None)
    assert await gated.inner.load(sid) == [user("one")]


class FailingStore:
    """Wraps a store; fails every append while ``fail`` is set."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.fail = True
        self.failed = anyio.Event()

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        if self.fail:
            self.failed.set()
            raise OSError("disk full")
        await self.inner.append(session_id, messages)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.anyio
async def test_running_reports_a_lasting_store_failure_instead_of_raising(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    failing = FailingStore(JsonlSessionStore(tmp_path, fsync=False))
    sid = (await failing.inner.create()).id
    recorder = SessionRecorder(failing, sid)

    with caplog.at_level(logging.ERROR, logger="agentloop.sessions"):
        recording = recorder.running()
        async with recording:
            recorder.record(user("one"))
            await failing.failed.wait()
            recorder.record(said("two"))
    assert recording.unstored == 2
    assert isinstance(recording.error, OSError)
    assert str(recording.error) == "disk full"
    assert "2 committed messages are not stored" in caplog.text

    # The next run stores them, and its report is clean.
    failing.fail = False
    again = recorder.running()
    async with again:
        recorder.record(user("three"))
    assert (again.unstored, again.skipped, again.error) == (0, 0, None)
    assert await failing.inner.load(sid) == [user("one"), said("two"), user("three")]
    assert recorder.last_error is None


# --------------------------------------------------------------------------- issue 14, finding 7


class Opaque:
    pass


def poisoned(text: str) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id="c1",
        content=[Text(text=text)],
        details={"object": Opaque()},
        timestamp=3,
    )


class JsonOnlyStore:
    """An application's store that keeps ``details`` as JSON, so it rejects objects there."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.calls = 0

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        import json

        self.calls += 1
        for message in messages:
            json.dumps(getattr(message, "details", None))  # a JSON column of its own
        await self.inner.append(session_id, messages)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.anyio
async def test_recorder_skips_what_its_store_rejects_and_stores_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    strict = JsonOnlyStore(JsonlSessionStore(tmp_path, fsync=False))
    sid = (await strict.inner.create()).id
    recorder = SessionRecorder(strict, sid)

    with caplog.at_level(logging.ERROR, logger="agentloop.sessions"):
        recording = recorder.running()
        async with recording:
            for message in (user("one"), poisoned("bad"), said("two")):
                recorder.record(message)
        later = recorder.running()
        async with later:
            recorder.record(user("three"))
    assert await strict.inner.load(sid) == [user("one"), said("two"), user("three")]
    assert (recording.unstored, recording.skipped) == (0, 1)
    assert isinstance(recording.error, TypeError)
    assert (later.unstored, later.skipped, later.error) == (0, 0, None)
    assert (recorder.stored, recorder.skipped, recorder.pending) == (3, 1, 0)
    assert "skipping a message the store cannot take" in caplog.text
    assert strict.calls < 10  # no retrying the same batch over and over


@pytest.mark.anyio
async def test_recorder_with_a_builtin_store_keeps_storing_after_an_unencodable_message(
    store: SessionStore,
) -> None:
    sid = (await store.create()).id
    recorder = SessionRecorder(store, sid)
    recording = recorder.running()
    async with recording:
        recorder.record(user("one"))
        recorder.record(poisoned("bad"))
        recorder.record(said("two"))
    assert (recording.unstored, recording.skipped, recording.error) == (0, 0, None)
    async with recorder.running():
        recorder.record(user("three"))
    loaded = await store.load(sid)
    assert [type(m) for m in loaded] == [
        UserMessage,
        ToolResultMessage,
        AssistantMessage,
        UserMessage,
    ]
    details = loaded[1].details  # type: ignore[union-attr]
    assert details["object"].startswith("<agentloop: unencodable Opaque: <")
    assert (recorder.stored, recorder.pending) == (4, 0)


class Counter(CustomMessage, frozen=True, tag="test-sessions-recorder-counter"):
    count: int


@pytest.mark.anyio
async def test_recorder_reports_a_message_no_form_of_which_can_be_stored(
    store: SessionStore,
) -> None:
    sid = (await store.create()).id
    recorder = SessionRecorder(store, sid)
    broken = Counter(count=Opaque())  # type: ignore[arg-type]  # its degraded form is no int
    recording = recorder.running()
    async with recording:
        for message in (user("one"), broken, said("two")):
            recorder.record(message)
    assert (recording.unstored, recording.skipped) == (0, 1)
    assert recording.error is not None
    assert "Expected `int`" in str(recording.error)
    assert await store.load(sid) == [user("one"), said("two")]
    assert (recorder.stored, recorder.skipped, recorder.pending) == (2, 1, 0)


@pytest.mark.anyio
async def test_a_store_that_rejects_every_message_gets_none_skipped(tmp_path: Path) -> None:
    recorder = SessionRecorder(JsonlSessionStore(tmp_path), "../not-a-valid-id")
    for message in (user("one"), said("two"), user("three")):
        recorder.record(message)
    with pytest.raises(ValueError, match="invalid session id"):
        await recorder.flush()
    assert (recorder.pending, recorder.skipped, recorder.stored) == (3, 0, 0)
    assert isinstance(recorder.last_error, ValueError)
