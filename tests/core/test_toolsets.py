"""Toolsets: tools whose set changes while an agent runs are re-read at every turn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import MODEL, results_of

if TYPE_CHECKING:
    from collections.abc import Sequence

pytestmark = pytest.mark.anyio


def make_tool(name: str, *, read_only: bool = False) -> al.AgentTool:
    async def fn() -> str:
        return f"ran {name}"

    fn.__doc__ = f"The {name} tool."
    return al.tool(name=name, read_only=read_only)(fn)


class Changing:
    """A toolset whose tools change when ``swap`` is called (e.g. from a tool)."""

    name = "changing"

    def __init__(self) -> None:
        self.tools: list[al.AgentTool] = [make_tool("first", read_only=True)]
        self.reads = 0

    def get_tools(self) -> Sequence[al.AgentTool]:
        self.reads += 1
        return self.tools

    def swap(self) -> None:
        self.tools = [make_tool("second")]


async def test_a_toolset_change_is_seen_at_the_next_turn() -> None:
    toolset = Changing()

    @al.tool
    async def swap() -> str:
        """Change the toolset's tools."""
        toolset.swap()
        return "swapped"

    model = ScriptedStream(
        [
            reply_tool_calls(("first", {}), ("swap", {})),
            reply_tool_calls(("second", {}), ("first", {})),
            reply_text("done"),
        ]
    )
    agent = al.Agent(model=MODEL, stream_fn=model, tools=[swap], toolsets=[toolset])
    result = await agent.prompt("go")
    texts = [r.text for r in results_of(result.messages)]
    assert texts[:3] == ["ran first", "swapped", "ran second"]
    assert texts[3].startswith("unknown tool 'first'")
    offered = [[t.name for t in call.context.tools] for call in model.calls]
    assert offered == [["swap", "first"], ["swap", "second"], ["swap", "second"]]
    assert toolset.reads == 3


async def test_plan_mode_offers_only_a_toolsets_read_only_tools() -> None:
    toolset = Changing()
    toolset.tools.append(make_tool("writer"))
    model = ScriptedStream([reply_text("plan")])
    agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[toolset])
    agent.set_plan_mode(True)
    await agent.prompt("plan it")
    assert [t.name for t in model.calls[0].context.tools] == ["first"]


async def test_a_failing_toolset_ends_the_run_naming_it() -> None:
    class Broken:
        name = "mcp:files"

        def get_tools(self) -> Any:
            raise ConnectionError("server gone")

    result = await al.loop.run_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        al.loop.AgentLoopConfig(
            model=MODEL, stream_fn=ScriptedStream([reply_text("x")]), toolsets=[Broken()]
        ),
    )
    assert result.error_kind is al.ErrorKind.HOOK
    assert result.error == "toolset 'mcp:files' raised ConnectionError: server gone"
