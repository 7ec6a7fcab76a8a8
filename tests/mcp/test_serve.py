"""``agentloop_mcp.serve``: agentloop tools served over MCP, over stdio and streamable HTTP,
called back through this package's own client (which the other tests check against the SDK's
server)."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from mcp import types

import agentloop as al
import agentloop_mcp as mcp
from agentloop_mcp._serve import to_mcp_result

from ._helpers import HERE, PNG_B64, SDK_TRIO_SSE_WARNINGS, call, text

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [pytest.mark.anyio, *SDK_TRIO_SSE_WARNINGS]

SERVER = HERE / "servers" / "agentloop_server.py"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    try:
        url = process.stdout.readline().strip()  # printed once the socket listens
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        process.kill()
        process.wait()
        process.stdout.close()


@pytest.fixture(params=["stdio", "http"])
def spec(request: pytest.FixtureRequest) -> mcp.ServerSpec:
    if request.param == "stdio":
        return mcp.StdioServer(name="al", command=sys.executable, args=[str(SERVER)])
    return mcp.HttpServer(name="al", url=request.getfixturevalue("http_url"))


async def test_served_tools_keep_their_definitions_results_progress_errors_and_approval(
    spec: mcp.ServerSpec,
) -> None:
    async with mcp.open_toolset(spec) as toolset:
        # The tools keep their definitions.
        tools = {t.name: t for t in toolset.get_tools()}
        assert list(tools) == ["add", "steps", "threaded_steps", "broken", "delete", "picture"]
        assert tools["add"].read_only and not tools["steps"].read_only
        assert tools["add"].description == "Add two integers."
        assert tools["add"].parameters["properties"]["a"] == {
            "type": "integer",
            "description": "the first.",
        }
        assert tools["picture"].label == "Picture"

        added = await call(toolset, "add", a=2, b=3)
        assert (text(added), added.details["structured_content"]) == ("5", {"result": 5})

        picture = await call(toolset, "picture")
        assert picture.content == [
            al.Text(text="a picture"),
            al.Image(media_type="image/png", data=PNG_B64),
        ]
        assert picture.details["structured_content"] == {"width": 1, "height": 1}

        broken = await call(toolset, "broken")
        assert broken.is_error
        assert text(broken) == "tool 'broken' failed: ValueError: broken tool"

        refused = await call(toolset, "delete", path="/etc/passwd")
        assert refused.is_error
        assert text(refused) == "tool call rejected: only files under /tmp/ may be deleted"
        assert text(await call(toolset, "delete", path="/tmp/x")) == "deleted /tmp/x"

        # Arguments the client did not check are checked by the server.
        tool = [t for t in toolset.get_tools() if t.name == "add"][0]
        invalid = await tool.execute("raw", {"a": "two", "b": 3}, lambda update: None)
        assert invalid.is_error
        assert text(invalid).startswith("invalid arguments for tool 'add'")

        for name, prefix in (("steps", "step"), ("threaded_steps", "thread step")):
            updates: list[Any] = []
            tool = [t for t in toolset.get_tools() if t.name == name][0]
            result = await tool.execute("p", {"n": 3}, updates.append)
            assert not result.is_error
            # The server sends every update before the result, and the client delivers them
            # before the call returns.
            assert [text(u) for u in updates] == [f"{prefix} {i}" for i in (1, 2, 3)]


async def test_build_server_refuses_two_tools_with_one_name() -> None:
    @al.tool(name="same")
    def one() -> str:
        """One."""
        return "1"

    @al.tool(name="same")
    def two() -> str:
        """Two."""
        return "2"

    with pytest.raises(ValueError, match="two tools are named 'same'"):
        mcp.build_server([one, two])
    await anyio.lowlevel.checkpoint()


def test_results_translate_to_mcp_blocks() -> None:
    result = to_mcp_result(
        al.AgentToolResult(
            content=[
                al.Text(text="t"),
                al.Image(media_type="image/jpeg", data="AAAA"),
                al.Image(url="https://example.com/x.png"),
            ],
            details=[1, 2],
            is_error=True,
        )
    )
    assert result.content == [
        types.TextContent(type="text", text="t"),
        types.ImageContent(type="image", data="AAAA", mime_type="image/jpeg"),
        types.TextContent(type="text", text="[image: https://example.com/x.png]"),
    ]
    assert result.structured_content == {"result": [1, 2]}
    assert result.is_error
    assert to_mcp_result(al.AgentToolResult.text("x")).structured_content is None
