"""Session stores (JSONL and SQLite), history repair, and the recorder."""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from hypothesis import given, settings, strategies as st

from agentloop import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    Image,
    MessageEnd,
    MessageStart,
    StopReason,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    TurnStart,
    UserMessage,
    encode,
)
from agentloop._session_resume import INTERRUPTED
from agentloop.sessions import (
    JsonlSessionStore,
    SessionNotFound,
    SessionRecorder,
    SessionStore,
    SqliteSessionStore,
    load_session as resume,
    repair_history,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from pathlib import Path

pytestmark = pytest.mark.anyio


class Bookmark(CustomMessage, frozen=True, tag="test-sessions-bookmark"):
    label: str
    data: dict[str, Any] = {}


# Fixed timestamps, so equal helpers build equal messages.
def user(text: str) -> UserMessage:
    return UserMessage(content=[Text(text=text)], timestamp=1)


def said(text: str, model_id: str = "") -> AssistantMessage:
    return AssistantMessage(content=[Text(text=text)], model_id=model_id, timestamp=2)


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(
        content=[ToolCall(id=i, name="probe", arguments={"n": 1}) for i in ids],
        stop_reason=StopReason.TOOL_USE,
        timestamp=3,
    )


def result(call_id: str) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name="probe", content=[Text(text="ok")], timestamp=4
    )


def append_raw(path: Path, data: bytes) -> None:
    """Write bytes as a crashing process might have left them."""
    with open(path, "ab") as f:
        f.write(data)


def every_kind() -> list[AgentMessage]:
    return [
        UserMessage(
            content=[Text(text="look at this"), Image(data="aGk=", media_type="image/png")]
        ),
        AssistantMessage(
            content=[
                Thinking(thinking="hmm", signature="sig"),
                Text(text="calling"),
                ToolCall(id="c1", name="probe", arguments={"path": "/tmp", "deep": [1, 2]}),
            ],
            provider="p",
            model_id="model-x",
            stop_reason=StopReason.TOOL_USE,
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="probe", content=[Text(text="found")]),
        Bookmark(label="here", data={"line": 3}),
        said("done"),
    ]


@pytest.fixture(params=["jsonl", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "jsonl":
        yield JsonlSessionStore(tmp_path / "sessions")
    else:
        async with SqliteSessionStore(tmp_path / "sessions.db") as db:
            yield db


# --------------------------------------------------------------------------- both stores


async def test_messages_of_every_kind_round_trip(store: SessionStore) -> None:
    info = await store.create()
    history = every_kind()
    await store.append(info.id, history[:2])
    await store.append(info.id, history[2:])
    await store.append(info.id, [])
    loaded = await store.load(info.id)
    assert loaded == history
    assert type(loaded[3]) is Bookmark


async def test_metadata_titles_models_counts_and_order(store: SessionStore) -> None:
    first = await store.create(title="named", metadata={"owner": "ann"})
    second = await store.create(session_id="second-session", model="given-model")
    assert second.id == "second-session"
    assert first.created_at > 0
    assert first.message_count == 0

    await store.append(first.id, [user("not the title"), said("a", model_id="model-a")])
    await store.append(second.id, [user("What is the weather?\nin Paris"), said("b", "model-b")])

    one = await store.info(first.id)
    two = await store.info(second.id)
    assert (one.title, one.model, one.message_count, one.metadata) == (
        "named",
        "model-a",
        2,
        {"owner": "ann"},
    )
    assert (two.title, two.model, two.message_count) == ("What is the weather?", "given-model", 2)
    assert two.updated_at >= two.created_at

    renamed = await store.update(first.id, title="renamed", metadata={"owner": "bob"})
    assert renamed.title == "renamed"
    assert renamed.metadata == {"owner": "bob"}
    assert renamed.model == "model-a"

    listed = await store.list_sessions()
    assert {s.id for s in listed} == {first.id, second.id}
    assert [s.updated_at for s in listed] == sorted((s.updated_at for s in listed), reverse=True)
    assert {s.id: s.message_count for s in listed} == {first.id: 2, second.id: 2}


async def test_delete(store: SessionStore) -> None:
    keep = await store.create()
    gone = await store.create()
    await store.append(gone.id, [user("bye")])
    await store.delete(gone.id)
    assert [s.id for s in await store.list_sessions()] == [keep.id]
    with pytest.raises(SessionNotFound):
        await store.load(gone.id)
    with pytest.raises(SessionNotFound):
        await store.info(gone.id)
    with pytest.raises(SessionNotFound):
        await store.append(gone.id, [user("again")])
    with pytest.raises(SessionNotFound):
        await store.delete(gone.id)
    with pytest.raises(SessionNotFound):
        await store.update(gone.id, title="x")
    # The id is free again.
    again = await store.create(session_id=gone.id)
    assert await store.load(again.id) == []


async def test_ids_are_checked(store: SessionStore) -> None:
    await store.create(session_id="taken")
    with pytest.raises(ValueError, match="already exists"):
        await store.create(session_id="taken")
    with pytest.raises(ValueError, match="invalid session id"):
        await store.create(session_id="../escape")
    with pytest.raises(SessionNotFound):
        await store.load("never-created")


async def test_concurrent_appends_from_100_sessions_lose_nothing(store: SessionStore) -> None:
    sessions = 100
    appends = 5
    ids = [(await store.create(session_id=f"s{i:03}")).id for i in range(sessions)]

    async def writer(sid: str) -> None:
        for k in range(appends):
            await store.append(sid, [user(f"{sid} message {k}"), said(f"{sid} answer {k}")])

    async with anyio.create_task_group() as tg:
        for sid in ids:
            tg.start_soon(writer, sid)

    for sid in ids:
        loaded = await store.load(sid)
        expected: list[AgentMessage] = []
        for k in range(appends):
            expected += [user(f"{sid} message {k}"), said(f"{sid} answer {k}")]
        assert [m.content for m in loaded] == [m.content for m in expected]  # type: ignore[union-attr]
        assert (await store.info(sid)).message_count == 2 * appends


async def test_concurrent_appends_to_one_session_stay_whole(store: SessionStore) -> None:
    sid = (await store.create()).id
    async with anyio.create_task_group() as tg:
        for i in range(50):
            pair: list[AgentMessage] = [user(f"q{i}"), said(f"a{i}")]
            tg.start_soon(store.append, sid, pair)
    loaded = await store.load(sid)
    assert len(loaded) == 100
    # Each append's two messages stay adjacent, whatever the order of the appends.
    for question, answer in zip(loaded[::2], loaded[1::2], strict=True):
        assert isinstance(question, UserMessage)
        assert isinstance(answer, AssistantMessage)
        assert answer.text == "a" + question.content[0].text[1:]  # type: ignore[union-attr]


# --------------------------------------------------------------------------- JSONL


async def test_jsonl_torn_last_line_is_ignored_then_cut_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonlSessionStore(tmp_path)
    sid = (await store.create()).id
    history: list[AgentMessage] = [user("one"), said("two"), user("three")]
    await store.append(sid, history)
    line = encode(said("a long answer that was being written when the power went out"))
    append_raw(tmp_path / f"{sid}.jsonl", line[: len(line) // 2])

    with caplog.at_level(logging.WARNING, logger="agentloop.sessions"):
        assert await store.load(sid) == history
    assert "torn last line" in caplog.text
    assert (await store.info(sid)).message_count == 3

    caplog.clear()
    four = said("four")
    with caplog.at_level(logging.WARNING, logger="agentloop.sessions"):
        await store.append(sid, [four])
        assert await store.load(sid) == [*history, four]
    assert "cutting off a torn last line" in caplog.text
    assert (await store.info(sid)).message_count == 4
    lines = (tmp_path / f"{sid}.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert len(lines) == 5


async def test_jsonl_a_last_record_missing_only_its_newline_is_kept(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    sid = (await store.create()).id
    one, two, three = user("one"), said("two"), user("three")
    await store.append(sid, [one])
    append_raw(tmp_path / f"{sid}.jsonl", encode(two))
    assert await store.load(sid) == [one, two]
    await store.append(sid, [three])
    assert await store.load(sid) == [one, two, three]


async def test_jsonl_a_corrupt_record_costs_only_itself(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonlSessionStore(tmp_path)
    sid = (await store.create()).id
    one, two = user("one"), said("two")
    await store.append(sid, [one])
    append_raw(tmp_path / f"{sid}.jsonl", b'{"role":"user","content":[{"type":"nonsense"}]}\n')
    await store.append(sid, [two])
    with caplog.at_level(logging.WARNING, logger="agentloop.sessions"):
        assert await store.load(sid) == [one, two]
    assert "skipping unreadable record 2" in caplog.text


async def test_jsonl_sessions_survive_a_new_store_instance(tmp_path: Path) -> None:
    sid = (await JsonlSessionStore(tmp_path).create(title="kept")).id
    history = every_kind()
    await JsonlSessionStore(tmp_path).append(sid, history)
    fresh = JsonlSessionStore(tmp_path)
    assert await fresh.load(sid) == history
    info = await fresh.info(sid)
    assert (info.title, info.model, info.message_count) == ("kept", "model-x", 5)
    (tmp_path / "notes.txt").write_text("not a session")
    (tmp_path / "bad name!.jsonl").write_text("")
    assert [s.id for s in await fresh.list_sessions()] == [sid]


# --------------------------------------------------------------------------- SQLite


async def test_sqlite_uses_wal_and_closes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteSessionStore(path)
    sid = (await store.create()).id
    await store.append(sid, [user("hi")])
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    await store.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await store.load(sid)


async def test_sqlite_two_stores_on_one_file_lose_nothing(tmp_path: Path) -> None:
    async with (
        SqliteSessionStore(tmp_path / "s.db") as a,
        SqliteSessionStore(tmp_path / "s.db") as b,
    ):
        sid = (await a.create()).id
        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon((a if i % 2 else b).append, sid, [user(f"m{i}")])
        assert len(await b.load(sid)) == 20
        assert (await a.info(sid)).message_count == 20


# --------------------------------------------------------------------------- repair and resume


def test_repair_leaves_a_well_paired_history_alone() -> None:
    history: list[AgentMessage] = [
        user("go"),
        calls("a", "b"),
        result("b"),
        result("a"),
        said("done"),
    ]
    assert repair_history(history) == history


def test_repair_answers_unpaired_calls_and_drops_orphan_results() -> None:
    pending = calls("a", "b")
    history: list[AgentMessage] = [
        user("go"),
        pending,
        result("a"),
        user("next"),
        result("zzz"),
        calls("c"),
    ]
    repaired = repair_history(history)
    assert repaired[:3] == history[:3]
    synthetic = repaired[3]
    assert isinstance(synthetic, ToolResultMessage)
    assert (synthetic.tool_call_id, synthetic.is_error) == ("b", True)
    assert synthetic.content == [Text(text=INTERRUPTED)]
    assert synthetic.timestamp == pending.timestamp
    assert repaired[4] == user("next")
    assert repaired[5] == history[5]  # the orphan result is gone
    last = repaired[6]
    assert isinstance(last, ToolResultMessage)
    assert last.tool_call_id == "c"
    assert len(repaired) == 7
    assert repair_history(history) == repaired  # deterministic
    assert repair_history(repaired) == repaired


def well_paired(messages: Sequence[AgentMessage]) -> bool:
    """Every tool call is answered exactly once before the next user or assistant message,
    and every result answers a call."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ToolResultMessage):
            if message.tool_call_id not in open_calls:
                return False
            open_calls.discard(message.tool_call_id)
        elif isinstance(message, AssistantMessage | UserMessage):
            if open_calls:
                return False
            if isinstance(message, AssistantMessage):
                open_calls = {c.id for c in message.tool_calls}
    return not open_calls


_ids = st.sampled_from(["a", "b", "c"])
_messages = st.one_of(
    st.builds(user, st.text(max_size=5)),
    st.builds(said, st.text(max_size=5)),
    st.lists(_ids, min_size=1, max_size=3).map(lambda ids: calls(*ids)),
    _ids.map(result),
    st.builds(Bookmark, label=st.text(max_size=5)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_messages, max_size=30))
def test_repair_property(messages: list[AgentMessage]) -> None:
    repaired = repair_history(messages)
    assert well_paired(repaired)
    assert repair_history(repaired) == repaired
    originals = {id(m) for m in messages}
    kept = [m for m in repaired if id(m) in originals]
    # Only results are ever dropped, and what is kept keeps its order.
    kept_ids = {id(m) for m in kept}
    positions = [next(i for i, x in enumerate(messages) if x is m) for m in kept]
    assert positions == sorted(positions)
    assert all(isinstance(m, ToolResultMessage) for m in messages if id(m) not in kept_ids)
    for added in (m for m in repaired if id(m) not in originals):
        assert isinstance(added, ToolResultMessage)
        assert added.is_error
        assert added.content == [Text(text=INTERRUPTED)]


async def test_resume_repairs_a_torn_stored_session(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    sid = (await store.create()).id
    await store.append(sid, [user("go"), calls("a")])
    append_raw(tmp_path / f"{sid}.jsonl", encode(result("a"))[:10])
    history = await resume(store, sid)
    assert len(history) == 3
    tail = history[-1]
    assert isinstance(tail, ToolResultMessage)
    assert tail.is_error
    assert tail.tool_call_id == "a"


# --------------------------------------------------------------------------- recorder


class SpyStore:
    """Wraps a store: signals each append and can be told to fail."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.fail = False
        self.appends: list[int] = []
        self.appended = anyio.Event()
        self.failed = anyio.Event()

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        if self.fail:
            self.failed.set()
            raise OSError("disk full")
        await self.inner.append(session_id, messages)
        self.appends.append(len(messages))
        self.appended.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_recorder_stores_committed_messages_in_order(store: SessionStore) -> None:
    sid = (await store.create()).id
    recorder = SessionRecorder(store, sid)
    messages = every_kind()
    recorder(TurnStart())
    for m in messages:
        recorder(MessageStart(message=m))
        recorder(MessageEnd(message=m))
    assert recorder.pending == len(messages)
    await recorder.flush()
    assert recorder.pending == 0
    assert recorder.stored == len(messages)
    assert await store.load(sid) == messages


async def test_recorder_drains_while_running_and_flushes_on_exit(tmp_path: Path) -> None:
    spy = SpyStore(JsonlSessionStore(tmp_path))
    sid = (await spy.inner.create()).id
    recorder = SessionRecorder(spy, sid)
    async with recorder.running():
        recorder(MessageEnd(message=user("one")))
        await spy.appended.wait()  # stored while the block still runs
        assert await spy.inner.load(sid) == [user("one")]
        recorder(MessageEnd(message=said("two")))
        recorder(MessageEnd(message=user("three")))
    assert recorder.pending == 0
    assert await spy.inner.load(sid) == [user("one"), said("two"), user("three")]


async def test_recorder_keeps_what_was_committed_when_cancelled(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    sid = (await store.create()).id
    recorder = SessionRecorder(store, sid)
    with anyio.CancelScope() as scope:
        async with recorder.running():
            recorder(MessageEnd(message=user("one")))
            recorder(MessageEnd(message=calls("a")))
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert await store.load(sid) == [user("one"), calls("a")]


async def test_recorder_keeps_messages_queued_when_the_store_fails(tmp_path: Path) -> None:
    spy = SpyStore(JsonlSessionStore(tmp_path))
    sid = (await spy.inner.create()).id
    recorder = SessionRecorder(spy, sid)
    recorder(MessageEnd(message=user("one")))
    spy.fail = True
    with pytest.raises(OSError, match="disk full"):
        await recorder.flush()
    assert recorder.pending == 1
    spy.fail = False
    recorder(MessageEnd(message=said("two")))
    await recorder.flush()
    assert spy.appends == [2]
    assert await spy.inner.load(sid) == [user("one"), said("two")]


async def test_recorder_running_survives_a_passing_store_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spy = SpyStore(JsonlSessionStore(tmp_path))
    sid = (await spy.inner.create()).id
    recorder = SessionRecorder(spy, sid)
    spy.fail = True
    with caplog.at_level(logging.ERROR, logger="agentloop.sessions"):
        async with recorder.running():
            recorder(MessageEnd(message=user("one")))
            await spy.failed.wait()
            spy.fail = False
            recorder(MessageEnd(message=said("two")))
    assert "storing messages failed" in caplog.text
    assert await spy.inner.load(sid) == [user("one"), said("two")]


async def test_recorder_running_reports_a_lasting_store_failure(tmp_path: Path) -> None:
    spy = SpyStore(JsonlSessionStore(tmp_path))
    sid = (await spy.inner.create()).id
    recorder = SessionRecorder(spy, sid)
    spy.fail = True

    recording = recorder.running()
    async with recording:
        recorder(MessageEnd(message=user("one")))
        await spy.failed.wait()
    assert recorder.pending == 1
    assert recording.unstored == 1
    assert isinstance(recording.error, OSError)


async def test_recorder_running_lets_the_blocks_exception_through_unwrapped(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    sid = (await store.create()).id
    recorder = SessionRecorder(store, sid)

    async def run() -> None:
        async with recorder.running():
            recorder(MessageEnd(message=user("one")))
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await run()
    assert await store.load(sid) == [user("one")]
