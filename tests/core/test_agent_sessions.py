"""The Agent's own session option, ``Agent.resume`` and ``Agent.compact``."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import anyio
import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import MODEL, paired

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["jsonl", "sqlite"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[al.sessions.SessionStore]:
    if request.param == "jsonl":
        yield al.sessions.JsonlSessionStore(tmp_path / "sessions")
    else:
        sqlite = al.sessions.SqliteSessionStore(tmp_path / "sessions.db")
        async with sqlite:
            yield sqlite


async def test_the_session_option_stores_every_committed_message(
    store: al.sessions.SessionStore,
) -> None:
    @al.tool
    async def look(path: str) -> str:
        """Look."""
        return f"contents of {path}"

    sid = (await store.create(title="demo")).id
    agent = al.Agent(
        model=MODEL,
        stream_fn=ScriptedStream(
            [reply_tool_calls(("look", {"path": "/a"})), reply_text("seen"), reply_text("again")]
        ),
        tools=[look],
        session=al.sessions.SessionRecorder(store, sid),
    )
    await agent.prompt("look at /a")
    assert await store.load(sid) == agent.messages
    async with agent.stream("once more") as events:
        async for _ in events:
            pass
    assert await store.load(sid) == agent.messages
    assert len(agent.messages) == 6


async def test_killed_mid_run_then_resumed_continues_well_paired(
    store: al.sessions.SessionStore,
) -> None:
    started = anyio.Event()

    @al.tool
    async def slow(path: str) -> str:
        """Never finishes in the first process."""
        started.set()
        await anyio.sleep_forever()
        return ""

    sid = (await store.create()).id
    agent = al.Agent(
        model=MODEL,
        stream_fn=ScriptedStream([reply_tool_calls(("slow", {"path": "/x"}))]),
        tools=[slow],
        session=al.sessions.SessionRecorder(store, sid),
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "scan /x")
        await started.wait()
        tg.cancel_scope.cancel()  # the task running the agent is killed

    @al.tool
    async def fast(path: str) -> str:
        """Finishes."""
        return "ok"

    model = ScriptedStream([reply_text("picking up where we left off")])
    resumed = await al.Agent.from_session(store, sid, model=MODEL, stream_fn=model, tools=[fast])
    assert paired(resumed.messages)
    assert isinstance(resumed.messages[0], al.UserMessage)
    result = await resumed.prompt("go on")
    assert result.text == "picking up where we left off"
    sent = model.calls[0].context.messages
    assert paired(sent)
    assert paired(await al.sessions.load_session(store, sid))
    assert (await al.sessions.load_session(store, sid))[-1] == resumed.messages[-1]


async def test_compact_keeps_the_anchor_and_pairs() -> None:
    history: list[al.AgentMessage] = [al.UserMessage.from_text("the goal")]
    for i in range(30):
        history.append(al.UserMessage.from_text(f"question {i} " + "x" * 200))
        history.append(
            al.AssistantMessage(
                content=[al.ToolCall(id=f"c{i}", name="t", arguments={"i": i})],
                stop_reason=al.StopReason.TOOL_USE,
            )
        )
        history.append(
            al.ToolResultMessage(tool_call_id=f"c{i}", content=[al.Text(text="y" * 200)])
        )
    agent = al.Agent(model=MODEL, stream_fn=ScriptedStream([]), messages=history)
    seen: list[al.AgentEvent] = []
    agent.subscribe(seen.append)
    done = agent.compact(max_tokens=1000)
    assert done.dropped > 0
    assert agent.messages == list(done.messages)
    assert agent.messages[0] == history[0]
    assert paired(agent.messages)
    assert done.tokens_after <= 1000 < done.tokens_before
    compacted = [e for e in seen if isinstance(e, al.ContextCompacted)]
    assert [e.dropped for e in compacted] == [done.dropped]


async def test_compact_refuses_while_running() -> None:
    started = anyio.Event()

    @al.tool
    async def wait() -> str:
        """Wait."""
        started.set()
        await anyio.sleep_forever()
        return ""

    agent = al.Agent(
        model=MODEL, stream_fn=ScriptedStream([reply_tool_calls(("wait", {}))]), tools=[wait]
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(agent.prompt, "go", raise_on_error=False))
        await started.wait()
        with pytest.raises(al.AlreadyRunning):
            agent.compact(max_tokens=10)
        agent.abort()
