"""A whole Agent run with a scripted model calling the tools of real MCP servers.

Each transport is tested: the server as a subprocess over stdio, and over streamable HTTP on
127.0.0.1 (a subprocess of its own, shared by the module's tests).
"""

from __future__ import annotations

from typing import Any

import pytest

import agentloop as al
import agentloop_mcp as mcp
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import (
    MODEL,
    PNG_B64,
    SDK_TRIO_SSE_WARNINGS,
    http_spec,
    stdio_spec,
    text,
)

pytestmark = [pytest.mark.anyio, *SDK_TRIO_SSE_WARNINGS]


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
                ("t_add", {"a": "two", "b": 3}),
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

    # The definitions reach the model as the server wrote them.
    offered = {t.name: t for t in model.calls[0].context.tools}
    assert offered["t_add"].parameters == {
        "type": "object",
        "properties": {
            "a": {"title": "A", "type": "integer"},
            "b": {"title": "B", "type": "integer"},
        },
        "required": ["a", "b"],
        "title": "addArguments",
    }
    assert offered["t_add"].description == "Add two integers."

    (asked,) = [m for m in model.calls[1].context.messages if isinstance(m, al.AssistantMessage)]
    ids = [call.id for call in asked.content if isinstance(call, al.ToolCall)]
    results = results_by_call(result.messages)
    echo, added, picture, failed, counted, invalid = (results[i] for i in ids)

    assert (echo.is_error, echo.content) == (False, [al.Text(text="hello")])
    assert echo.details == {
        "server": "tools",
        "tool": "echo",
        "structured_content": {"result": "hello"},
    }

    assert added.content == [al.Text(text="5")]
    assert added.details["structured_content"] == {"result": 5}

    assert picture.content == [al.Image(media_type="image/png", data=PNG_B64)]

    assert failed.is_error
    assert "no such file" in al.extract_text(failed.content)

    assert counted.content == [al.Text(text="counted to 3")]
    updates = [e for e in events if isinstance(e, al.ToolExecutionUpdate) and e.call_id == ids[4]]
    assert [text(u.update) for u in updates] == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    assert [u.update.details["progress"] for u in updates] == [1, 2, 3]
    assert {u.update.details["total"] for u in updates} == {3}

    # Checked against the server's schema before anything was sent.
    assert invalid.is_error
    assert al.extract_text(invalid.content).startswith("invalid arguments for tool 't_add'")
    assert "must be integer" in al.extract_text(invalid.content)
