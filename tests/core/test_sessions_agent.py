"""Sessions with a real Agent: persisting as the run goes, and resuming after a kill."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from agentloop import (
    Agent,
    AgentMessage,
    AssistantMessage,
    ModelSpec,
    SessionWriteFailed,
    ToolResultMessage,
    UserMessage,
    encode,
    tool,
)
from agentloop._session_resume import INTERRUPTED
from agentloop.sessions import (
    JsonlSessionStore,
    SessionRecorder,
    SessionStore,
    SqliteSessionStore,
    load_session as resume,
)
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from pathlib import Path

    from agentloop import FunctionTool

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="fake", model_id="fake-1")


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


class SpyStore:
    """A store wrapper that lets a test wait until some number of messages are stored."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.stored = 0
        self._waiters: list[tuple[int, anyio.Event]] = []

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        await self.inner.append(session_id, messages)
        self.stored += len(messages)
        for count, event in self._waiters:
            if self.stored >= count:
                event.set()

    async def stored_at_least(self, count: int) -> None:
        if self.stored < count:
            event = anyio.Event()
            self._waiters.append((count, event))
            await event.wait()

    async def load(self, session_id: str) -> list[AgentMessage]:
        return await self.inner.load(session_id)


@pytest.fixture(params=["jsonl", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "jsonl":
        yield JsonlSessionStore(tmp_path / "sessions")
    else:
        async with SqliteSessionStore(tmp_path / "sessions.db") as db:
            yield db


def blocking_probe(started: anyio.Event) -> FunctionTool:
    @tool
    async def probe(path: str) -> str:
        """Look at a path; never finishes."""
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return probe


async def test_an_agent_run_is_persisted_as_it_goes(store: SessionStore) -> None:
    sid = (await store.create()).id
    spy = SpyStore(store)
    recorder = SessionRecorder(spy, sid)  # type: ignore[arg-type]
    seen_during_run: list[AgentMessage] = []

    @tool
    async def probe(path: str) -> str:
        """Look at a path."""
        # The prompt and the tool call are stored while the tool still runs.
        await spy.stored_at_least(2)
        seen_during_run.extend(await store.load(sid))
        return f"{path}: fine"

    model = ScriptedStream([reply_tool_calls(("probe", {"path": "/etc"})), reply_text("all good")])
    agent = Agent(model=MODEL, stream_fn=model, tools=[probe])
    agent.subscribe(recorder)
    async with recorder.running():
        result = await agent.prompt("check /etc")
    assert result.text == "all good"
    assert [type(m) for m in seen_during_run] == [UserMessage, AssistantMessage]
    assert await store.load(sid) == agent.messages
    assert len(agent.messages) == 4
    info = await store.info(sid)
    assert info.title == "check /etc"
    assert info.message_count == 4


async def test_an_agent_killed_mid_run_resumes_with_a_well_paired_history(
    store: SessionStore, tmp_path: Path
) -> None:
    sid = (await store.create()).id
    started = anyio.Event()
    first_model = ScriptedStream([reply_tool_calls(("probe", {"path": "/srv"}))])
    agent = Agent(model=MODEL, stream_fn=first_model, tools=[blocking_probe(started)])
    recorder = SessionRecorder(store, sid)
    agent.subscribe(recorder)

    async with anyio.create_task_group() as process:
        process.start_soon(agent.prompt, "inspect /srv")
        await started.wait()
        await recorder.flush()  # the prompt and the tool call reach the disk...
        process.cancel_scope.cancel()  # ...then the process dies mid-tool
    # What the dying run committed afterwards never reached the store (a crash, not a
    # shutdown); for JSONL, a record was torn in the middle of its write.
    if isinstance(store, JsonlSessionStore):
        torn = encode(agent.messages[-1])
        with open(tmp_path / "sessions" / f"{sid}.jsonl", "ab") as f:  # noqa: ASYNC230
            f.write(torn[: len(torn) // 2])
    stored = await store.load(sid)
    assert [type(m) for m in stored] == [UserMessage, AssistantMessage]
    assert not well_paired(stored)

    history = await resume(store, sid)
    assert well_paired(history)
    assert history[:2] == stored
    synthetic = history[2]
    assert isinstance(synthetic, ToolResultMessage)
    assert synthetic.is_error
    assert synthetic.text == INTERRUPTED

    @tool
    async def probe(path: str) -> str:
        """Look at a path."""
        return f"{path}: fine"

    second_model = ScriptedStream(
        [
            reply_text("the last check was interrupted; retrying"),
            reply_tool_calls(("probe", {"path": "/srv"})),
            reply_text("done"),
        ]
    )
    resumed = Agent(model=MODEL, stream_fn=second_model, tools=[probe], messages=history)
    recorder = SessionRecorder(store, sid)
    resumed.subscribe(recorder)
    async with recorder.running():
        first = await resumed.continue_run()
        second = await resumed.prompt("try again")
    assert first.text == "the last check was interrupted; retrying"
    assert second.text == "done"
    for call in second_model.calls:
        assert well_paired(call.context.messages)
    assert well_paired(resumed.messages)
    # Resuming once more gives exactly the history the agent holds.
    assert await resume(store, sid) == resumed.messages


async def test_a_cancelled_agent_with_a_running_recorder_keeps_everything(
    store: SessionStore,
) -> None:
    sid = (await store.create()).id
    started = anyio.Event()
    model = ScriptedStream([reply_tool_calls(("probe", {"path": "/srv"}))])
    agent = Agent(model=MODEL, stream_fn=model, tools=[blocking_probe(started)])
    recorder = SessionRecorder(store, sid)
    agent.subscribe(recorder)

    async def run() -> None:
        async with recorder.running():
            await agent.prompt("inspect /srv")

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        tg.cancel_scope.cancel()
    assert recorder.pending == 0
    stored = await store.load(sid)
    assert stored == agent.messages
    assert well_paired(stored)
    assert await resume(store, sid) == stored


async def test_the_on_message_hook_records_too(store: SessionStore) -> None:
    sid = (await store.create()).id
    recorder = SessionRecorder(store, sid)
    agent = Agent(
        model=MODEL, stream_fn=ScriptedStream([reply_text("hello")]), on_message=recorder.record
    )
    await agent.prompt("hi")
    await recorder.flush()
    assert await store.load(sid) == agent.messages


class FailingStore:
    """A store wrapper that fails every append while ``fail`` is set."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.fail = True

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        if self.fail:
            raise OSError("disk full")
        await self.inner.append(session_id, messages)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def last_error(recorder: SessionRecorder) -> BaseException | None:
    return recorder.last_error  # read afresh (a type checker keeps an earlier narrowing)


async def test_prompt_never_raises_for_a_store_problem(store: SessionStore) -> None:
    sid = (await store.create()).id
    failing = FailingStore(store)
    recorder = SessionRecorder(failing, sid)  # type: ignore[arg-type]
    model = ScriptedStream([reply_text("first"), reply_text("second")])
    agent = Agent(model=MODEL, stream_fn=model, session=recorder)

    reports: list[SessionWriteFailed] = []
    agent.subscribe(lambda e: reports.append(e) if isinstance(e, SessionWriteFailed) else None)
    result = await agent.prompt("one")
    assert result.text == "first"
    assert recorder.pending == 2
    assert isinstance(recorder.last_error, OSError)
    # Reported in the result and to the subscribers, never raised.
    assert result.unsaved_messages == 2
    assert result.session_error is not None
    assert result.session_error.startswith("OSError")
    assert [(r.unstored, r.skipped) for r in reports] == [(2, 0)]

    failing.fail = False  # the disk has room again: the next run stores everything, once
    async with agent.stream("two") as events:
        async for _ in events:
            pass
    assert events.result.unsaved_messages == 0
    assert events.result.session_error is None
    assert len(reports) == 1
    assert await store.load(sid) == agent.messages
    assert len(agent.messages) == 4
    assert recorder.pending == 0
    assert last_error(recorder) is None  # cleared by the flush that stored everything


@pytest.mark.parametrize("backends", [("asyncio", "trio"), ("trio", "asyncio")])
@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_prompt_sync_on_successive_backends_stores_every_run(
    tmp_path: Path, kind: str, backends: tuple[str, str]
) -> None:
    store: JsonlSessionStore | SqliteSessionStore
    if kind == "jsonl":
        store = JsonlSessionStore(tmp_path, fsync=False)
    else:
        store = SqliteSessionStore(tmp_path / "s.db", synchronous="OFF")
    sid = anyio.run(store.create).id
    model = ScriptedStream([reply_text("first"), reply_text("second")])
    agent = Agent(model=MODEL, stream_fn=model, session=SessionRecorder(store, sid))
    for number, backend in enumerate(backends):
        agent.prompt_sync(f"prompt {number}", backend=backend)
    assert len(agent.messages) == 4
    assert anyio.run(store.load, sid) == agent.messages
    if isinstance(store, SqliteSessionStore):
        store.close()
