"""Message timestamps come from the clock in use (``agentloop.loop.use_clock``).

A durable runtime that replays a run (Temporal) needs the timestamps the loop gives the
messages it builds (answers, tool results) to be the same on every replay; so does a test that
compares whole histories.
"""

from __future__ import annotations

import pytest

from agentloop import AssistantMessage, ToolResultMessage, UserMessage, tool
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop, use_clock
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import MODEL

pytestmark = pytest.mark.anyio


@tool(inline=True)
def echo(text: str) -> str:
    """Echo the text."""
    return text


def test_a_message_built_inside_takes_the_clocks_time_and_outside_the_wall_clock() -> None:
    with use_clock(lambda: 42):
        assert UserMessage.from_text("in").timestamp == 42
        with use_clock(lambda: 7):
            assert UserMessage.from_text("nested").timestamp == 7
        assert UserMessage.from_text("back").timestamp == 42
    assert UserMessage.from_text("out").timestamp > 1_600_000_000_000


async def test_every_message_a_run_builds_takes_the_clocks_time() -> None:
    ticks = iter(range(1000, 2000))
    stream = ScriptedStream([reply_tool_calls(("echo", {"text": "a"})), reply_text("done")])
    config = AgentLoopConfig(model=MODEL, stream_fn=stream, tools=[echo])
    prompt = UserMessage.from_text("go")
    with use_clock(lambda: next(ticks)):
        result = await run_loop([prompt], AgentContext(), config)
    built = [m for m in result.messages if isinstance(m, AssistantMessage | ToolResultMessage)]
    assert len(built) == 3
    assert all(1000 <= m.timestamp < 2000 for m in built)
    assert [m.timestamp for m in built] == sorted(m.timestamp for m in built)
