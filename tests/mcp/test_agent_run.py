"""A whole Agent run with a scripted model calling the tools of real MCP servers.

Each transport is tested: the server as a subprocess over stdio, and over streamable HTTP on
127.0.0.1 (a subprocess of its own, shared by the module's tests).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import agentloop as al
import agentloop_mcp as mcp
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import (
    MODEL,
    PNG_B64,
    SDK_TRIO_SSE_WARNINGS,
    HttpServerProcess,
    http_spec,
    stdio_spec,
    text,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [pytest.mark.anyio, *SDK_TRIO_SSE_WARNINGS]


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServerProcess]:
    with HttpServerProcess() as server:
        yield server


@pytest.fixture(params=["stdio", "http"])
def spec(request: pytest.FixtureRequest) -> Any:
    if request.param == "stdio":
        return stdio_spec
    server = request.getfixturevalue("http_server")
    return lambda **options: http_spec(server.url, **options)


def results_by_call(messages: list[al.AgentMessage]) -> dict[str, al.ToolResultMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, al.ToolResultMessage)}


async def test_an_agent_calls_text_image_structured_error_and_progress_tools(spec: Any) -> None:
    model = ScriptedStream(
        [
            reply_tool_calls(
                ("t_echo", {"text": "hello"}),
                ("t_add", {"a": 2, "b": 3}),
                ("t_picture", {}),
                ("t_fail", {"message": "no such file"}),
                ("t_count", {"steps": 3}),
            ),
            reply_text("done"),
        ]
    )
    async with mcp.open_toolset(spec(prefix="t_")) as toolset:
        agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[toolset])
        events: list[al.AgentEvent] = []
        agent.subscribe(events.append)
        result = await agent.prompt("use the tools")
    assert result.stop_reason is al.StopReason.STOP
    assert result.text == "done"
    calls = [c for c in model.calls[1].context.messages if isinstance(c, al.AssistantMessage)]
    ids = {call.name: call.id for call in calls[0].content if isinstance(call, al.ToolCall)}
    results = results_by_call(result.messages)

    echo = results[ids["t_echo"]]
    assert (echo.is_error, echo.content) == (False, [al.Text(text="hello")])
    assert echo.details == {
        "server": "tools",
        "tool": "echo",
        "structured_content": {"result": "hello"},
    }

    added = results[ids["t_add"]]
    assert added.content == [al.Text(text="5")]
    assert added.details["structured_content"] == {"result": 5}

    picture = results[ids["t_picture"]]
    assert picture.content == [al.Image(media_type="image/png", data=PNG_B64)]

    failed = results[ids["t_fail"]]
    assert failed.is_error
    assert "no such file" in al.extract_text(failed.content)

    counted = results[ids["t_count"]]
    assert counted.content == [al.Text(text="counted to 3")]
    updates = [
        e for e in events if isinstance(e, al.ToolExecutionUpdate) and e.call_id == ids["t_count"]
    ]
    assert [text(u.update) for u in updates] == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    assert [u.update.details["progress"] for u in updates] == [1, 2, 3]
    assert {u.update.details["total"] for u in updates} == {3}


async def test_tool_definitions_reach_the_model_as_the_server_wrote_them(spec: Any) -> None:
    model = ScriptedStream([reply_text("ok")])
    async with mcp.open_toolset(spec()) as toolset:
        agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[toolset])
        await agent.prompt("hi")
    offered = {t.name: t for t in model.calls[0].context.tools}
    assert offered["add"].parameters == {
        "type": "object",
        "properties": {
            "a": {"title": "A", "type": "integer"},
            "b": {"title": "B", "type": "integer"},
        },
        "required": ["a", "b"],
        "title": "addArguments",
    }
    assert offered["add"].description == "Add two integers."


async def test_invalid_arguments_are_caught_before_the_server_sees_them() -> None:
    model = ScriptedStream([reply_tool_calls(("add", {"a": "two", "b": 3})), reply_text("ok")])
    async with mcp.open_toolset(stdio_spec()) as toolset:
        agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[toolset])
        result = await agent.prompt("add")
    (only,) = [m for m in result.messages if isinstance(m, al.ToolResultMessage)]
    assert only.is_error
    assert al.extract_text(only.content).startswith("invalid arguments for tool 'add'")
    assert "must be integer" in al.extract_text(only.content)
