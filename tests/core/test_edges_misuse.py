"""Misuse is told at once, never hangs; objects work across successive event loops.

Regression tests for the core-edges issue, items 7 and 8 (the agent's part; the recorder's is in
``test_sessions_*``).
"""

from __future__ import annotations

import threading

import anyio
import anyio.to_thread
import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import MODEL, config

anyio_mark = pytest.mark.anyio


def prompt() -> list[al.AgentMessage]:
    return [al.UserMessage.from_text("go")]


@anyio_mark
async def test_iterating_agent_loop_without_async_with_raises_at_once() -> None:
    stream = al.loop.agent_loop(prompt(), al.loop.AgentContext(), config([reply_text("x")]))
    with anyio.fail_after(5), pytest.raises(TypeError, match=r"async with agent_loop\("):
        async for _ in stream:
            pass


@anyio_mark
async def test_iterating_agent_stream_without_async_with_raises_at_once() -> None:
    agent = al.Agent(model=MODEL, stream_fn=ScriptedStream([reply_text("x")]))
    with anyio.fail_after(5), pytest.raises(TypeError, match=r"async with agent\.stream\("):
        async for _ in agent.stream("go"):
            pass
    assert not agent.is_running
    # Nothing was consumed: the agent still runs normally.
    assert (await agent.prompt("go")).text == "x"


@anyio_mark
async def test_result_before_the_run_is_a_clear_error() -> None:
    stream = al.loop.agent_loop(prompt(), al.loop.AgentContext(), config([reply_text("x")]))
    with pytest.raises(RuntimeError, match="has not finished"):
        _ = stream.result


@anyio_mark
async def test_abort_threadsafe_from_the_event_loop_thread_aborts() -> None:
    @al.tool
    async def wait() -> str:
        """Wait until aborted."""
        await anyio.sleep_forever()
        return "never"

    agent = al.Agent(
        model=MODEL,
        stream_fn=ScriptedStream([reply_tool_calls(("wait", {})), reply_text("x")]),
        tools=[wait],
    )

    def on_event(event: al.AgentEvent) -> None:
        if isinstance(event, al.ToolExecutionStart):
            agent.abort_threadsafe()  # on the loop's own thread

    agent.subscribe(on_event)
    with anyio.fail_after(5):
        result = await agent.prompt("go", raise_on_error=False)
    assert result.stop_reason is al.StopReason.ABORTED


@anyio_mark
async def test_abort_threadsafe_from_another_thread_and_when_idle() -> None:
    started = threading.Event()

    @al.tool
    async def wait() -> str:
        """Wait until aborted."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    agent = al.Agent(
        model=MODEL,
        stream_fn=ScriptedStream([reply_tool_calls(("wait", {})), reply_text("x")]),
        tools=[wait],
    )
    agent.abort_threadsafe()  # idle: nothing to abort, no error

    def from_thread() -> None:
        started.wait(10)
        agent.abort_threadsafe()

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, from_thread)
        with anyio.fail_after(10):
            result = await agent.prompt("go", raise_on_error=False)
    assert result.stop_reason is al.StopReason.ABORTED


def test_an_agent_runs_on_successive_event_loops_and_backends() -> None:
    @al.tool
    def double(x: int) -> int:
        """Double a number in a worker thread."""
        return 2 * x

    script = [
        reply_tool_calls(("double", {"x": 2})),
        reply_text("four"),
        reply_tool_calls(("double", {"x": 3})),
        reply_text("six"),
        reply_text("again"),
    ]
    agent = al.Agent(model=MODEL, stream_fn=ScriptedStream(script), tools=[double])
    assert agent.prompt_sync("a", backend="asyncio").text == "four"
    assert agent.prompt_sync("b", backend="trio").text == "six"
    assert agent.prompt_sync("c", backend="asyncio").text == "again"
    texts = [m.text for m in agent.messages if isinstance(m, al.ToolResultMessage)]
    assert texts == ["4", "6"]
