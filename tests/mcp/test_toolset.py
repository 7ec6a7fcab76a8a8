"""What a toolset offers: names, filters, approval and read-only hints, the environment of a
stdio server, and tool lists that change while an agent runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import agentloop as al
import agentloop_mcp as mcp
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import (
    MODEL,
    SDK_TRIO_SSE_WARNINGS,
    Events,
    call,
    http_spec,
    stdio_spec,
    text,
)

if TYPE_CHECKING:
    from ._helpers import HttpServerProcess

pytestmark = [pytest.mark.anyio, *SDK_TRIO_SSE_WARNINGS]


async def test_prefix_filters_read_only_hints_and_approval_through_an_agent() -> None:
    spec = stdio_spec(
        prefix="fs.",
        include=["a*", "e*", "p*", "write_*"],
        exclude=["env"],
        requires_approval="unless_read_only",
    )
    asked: list[tuple[str, bool]] = []

    async def approval(call: al.ToolCall, tool: al.AgentTool | None) -> al.policy.ApprovalDecision:
        assert tool is not None
        asked.append((call.name, tool.requires_approval))
        return (
            al.policy.Rejected(reason="not now") if tool.requires_approval else al.policy.APPROVED
        )

    model = ScriptedStream(
        [
            reply_tool_calls(("fs_add", {"a": 1, "b": 1}), ("fs_write_note", {"text": "x"})),
            reply_text("done"),
            reply_text("planned"),
        ]
    )
    async with mcp.open_toolset(spec) as toolset:
        tools = {t.name: t for t in toolset.get_tools()}
        assert sorted(tools) == ["fs_add", "fs_echo", "fs_picture", "fs_pid", "fs_write_note"]
        assert isinstance(tools["fs_add"], mcp.McpTool)
        assert tools["fs_add"].mcp_name == "add"
        assert {n for n, t in tools.items() if t.read_only} == {"fs_add", "fs_picture", "fs_pid"}
        assert {n for n, t in tools.items() if t.requires_approval} == {
            "fs_echo",
            "fs_write_note",
        }
        assert (tools["fs_echo"].label, tools["fs_add"].label) == ("Echo", "add")

        agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[toolset], approval=approval)
        result = await agent.prompt("go")
        outcomes = [
            (m.is_error, al.extract_text(m.content))
            for m in result.messages
            if isinstance(m, al.ToolResultMessage)
        ]
        assert outcomes == [(False, "2"), (True, "tool call rejected: not now")]
        assert asked == [("fs_add", False), ("fs_write_note", True)]

        agent.set_plan_mode(True)
        await agent.prompt("plan")
        offered = sorted(t.name for t in model.calls[2].context.tools)
        assert offered == ["fs_add", "fs_picture", "fs_pid"]


async def test_a_stdio_server_gets_only_the_allowed_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTLOOP_TEST_SECRET", "s3cret")
    monkeypatch.setenv("AGENTLOOP_TEST_SHARED", "shared")
    spec = stdio_spec(inherit_env=["AGENTLOOP_TEST_SHARED"], env={"AGENTLOOP_TEST_SET": "given"})
    async with mcp.open_toolset(spec) as toolset:
        seen = {
            name: text(await call(toolset, "env", name=name))
            for name in ("AGENTLOOP_TEST_SECRET", "AGENTLOOP_TEST_SHARED", "AGENTLOOP_TEST_SET")
        }
        path = text(await call(toolset, "env", name="PATH"))
    assert seen == {
        "AGENTLOOP_TEST_SECRET": "<unset>",
        "AGENTLOOP_TEST_SHARED": "shared",
        "AGENTLOOP_TEST_SET": "given",
    }
    assert path != "<unset>"  # the SDK's minimal set (PATH, HOME, ...) is always there


async def test_a_tool_list_change_is_offered_from_the_next_turn_after_it_is_seen() -> None:
    # A 2026-era connection: the change comes over the subscriptions/listen stream.
    events = Events()
    model = ScriptedStream(
        [
            reply_tool_calls(("grow", {"name": "extra"})),
            reply_text("grown"),
            reply_tool_calls(("extra", {})),
            reply_text("done"),
        ]
    )
    async with mcp.open_toolset(stdio_spec(), on_event=events) as toolset:
        assert toolset.protocol_version == "2026-07-28"
        before = toolset.get_tools()
        assert before is toolset.get_tools()  # the same tuple while nothing changes
        agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[toolset])
        await agent.prompt("grow")
        changed = await events.wait_for(mcp.ToolsChanged)
        assert (changed.server, changed.added, changed.removed) == ("tools", ["extra"], [])
        result = await agent.prompt("use it")
        assert "extra" not in {t.name for t in model.calls[0].context.tools}
        assert "extra" in {t.name for t in model.calls[2].context.tools}
        (used,) = [m for m in result.messages if isinstance(m, al.ToolResultMessage)]
        assert al.extract_text(used.content) == "extra here"
        # The tools that did not change are the same objects.
        kept = {t.name: t for t in toolset.get_tools()}
        assert all(kept[t.name] is t for t in before)


async def test_over_a_handshake_era_stdio_connection_the_very_next_turn_sees_the_change() -> None:
    # The notification precedes the call's result on the pipe; the call returns only once the
    # tools are listed again.
    model = ScriptedStream(
        [
            reply_tool_calls(("grow", {"name": "extra"})),
            reply_tool_calls(("extra", {})),
            reply_text("done"),
        ]
    )
    async with mcp.open_toolset(stdio_spec(mode="legacy")) as toolset:
        assert toolset.protocol_version == "2025-11-25"
        agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[toolset])
        result = await agent.prompt("grow")
    assert "extra" in {t.name for t in model.calls[1].context.tools}
    results = [m for m in result.messages if isinstance(m, al.ToolResultMessage)]
    assert [al.extract_text(m.content) for m in results] == ["grown", "extra here"]


async def test_a_tool_list_change_over_http_is_picked_up(
    http_server: HttpServerProcess, anyio_backend: str
) -> None:
    events = Events()
    name = f"late_{anyio_backend}"  # the server is shared: a new name for each test
    async with mcp.open_toolset(http_spec(http_server.url), on_event=events) as toolset:
        assert text(await call(toolset, "grow", name=name)) == "grown"
        changed = await events.wait_for(mcp.ToolsChanged)
        assert changed.added == [name]
        assert text(await call(toolset, name)) == f"{name} here"


async def test_the_group_is_a_toolset_of_all_its_servers(http_server: HttpServerProcess) -> None:
    async with mcp.open_group() as group:
        web = await group.connect(http_spec(http_server.url, name="web", prefix="web_"))
        local = await group.connect(stdio_spec(name="local", prefix="local_", include=["echo"]))
        assert [t.name for t in group.get_tools()] == [
            *(t.name for t in web.get_tools()),
            *(t.name for t in local.get_tools()),
        ]
        assert [t.name for t in local.get_tools()] == ["local_echo"]
        assert group.get_tools() is group.get_tools()
        model = ScriptedStream(
            [
                reply_tool_calls(("web_echo", {"text": "w"}), ("local_echo", {"text": "l"})),
                reply_text("ok"),
            ]
        )
        agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[group])
        result = await agent.prompt("both")
        results = [m for m in result.messages if isinstance(m, al.ToolResultMessage)]
        assert [(m.details["server"], al.extract_text(m.content)) for m in results] == [
            ("web", "w"),
            ("local", "l"),
        ]
