"""``agentloop_mcp.serve``: agentloop tools served over MCP, over stdio and streamable HTTP,
called back through this package's own client (which the other tests check against the SDK's
server)."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest
from mcp import types

import agentloop as al
import agentloop_mcp as mcp
from agentloop.policy import APPROVED
from agentloop.testing import ScriptedStream, reply_text
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
        assert list(tools) == [
            "add",
            "steps",
            "threaded_steps",
            "broken",
            "delete",
            "picture",
            "interview",
            "edit_memo",
            "nap",
            "woken",
        ]
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


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_served_resources_prompts_and_completions(spec: mcp.ServerSpec, mode: str) -> None:
    async with mcp.open_toolset(msgspec.structs.replace(spec, mode=mode)) as server:
        assert [(r.uri, r.description) for r in await server.list_resources()] == [
            ("memo://today", "Today's memo."),
            ("memo://broken", "Always fails."),
        ]
        (template,) = await server.list_resource_templates()
        assert template.uri_template == "memo://{day}/summary"
        await call(server, "edit_memo", text="call mum")  # the HTTP server is shared
        assert await server.resource_blocks("memo://today") == [al.Text(text="call mum")]
        assert await server.resource_blocks("memo://friday/summary") == [
            al.Text(text="summary of friday")
        ]
        assert await server.complete(template, "day", "tu") == ["tuesday"]
        # An unknown URI and a failing function are errors to the client; the server goes on.
        with pytest.raises(mcp.RequestFailed) as unknown:
            await server.read_resource("memo://nowhere")
        # SEP-2164: "invalid params" since 2026; the protocol's own code before.
        assert unknown.value.code == (-32602 if server.protocol_version >= "2026" else -32002)
        with pytest.raises(mcp.RequestFailed, match="disk on fire"):
            await server.read_resource("memo://broken")

        (plan,) = await server.list_prompts()
        assert (plan.name, plan.title, plan.description) == ("plan", "Plan a day", "Plan a day.")
        assert [(a.name, a.required) for a in plan.arguments] == [("day", True), ("mood", False)]
        rendered = await server.get_prompt("plan", {"day": "monday"})
        assert [al.extract_text(m.content) for m in rendered.messages] == [  # type: ignore[union-attr]
            "Plan monday, calm.",
            "What matters most?",
        ]

        if server.protocol_version >= "2026":
            # serve() has no subscriptions/listen yet: 2026-era clients are told so.
            with pytest.raises(mcp.RequestFailed, match="no subscriptions"):
                async with server.watch_resource("memo://today"):
                    pass
            return
        # Subscribers hear of changes the application announces.
        async with server.watch_resource("memo://today") as updates:
            await call(server, "edit_memo", text="call dad")
            with anyio.fail_after(20):
                update = await updates.receive()
        assert update.uri == "memo://today"
        assert await server.resource_blocks("memo://today") == [al.Text(text="call dad")]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_served_tool_logs_and_asks_the_clients_user_and_model(
    transport: str, mode: Any, request: pytest.FixtureRequest
) -> None:
    """Over the 2025 handshake the served tool's questions are requests to the client; on
    2026-07-28 each unanswered one ends a round (InputRequiredResult) and the tool runs again
    with the answers."""
    spec: mcp.ServerSpec
    if transport == "stdio":
        spec = mcp.StdioServer(
            name="al", command=sys.executable, args=[str(SERVER)], mode=mode, log_level="info"
        )
    else:
        url = request.getfixturevalue("http_url")
        spec = mcp.HttpServer(name="al", url=url, mode=mode, log_level="info")

    async def answer(question: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
        return mcp.ElicitationResponse.accept({})  # the schema's default fills the name in

    async def approve(request: mcp.SamplingRequest) -> Any:
        return APPROVED

    model = ScriptedStream([reply_text("hi there")])
    sampler = mcp.Sampler(
        al.ModelSpec(provider="t", model_id="small-1"), stream_fn=model, approve=approve
    )
    logs: list[mcp.McpEvent] = []
    async with mcp.open_toolset(
        spec, elicitation=answer, sampling=sampler, on_event=logs.append
    ) as server:
        result = await call(server, "interview")
    assert text(result) == "accept {'name': '?'} / small-1: hi there"
    logged = [e.data for e in logs if isinstance(e, mcp.ServerLog)]
    if mode == "legacy":
        assert logged == ["interviewing agentloop"]
    else:  # the tool ran once per round: its log message is sent each time, debug never
        assert logged and set(logged) <= {"interviewing agentloop", "interviewing "}
    assert model.calls and len(model.calls) == 1  # the model was asked once, not per round


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_call_the_client_cancels_is_cancelled_in_the_served_tool(
    spec: mcp.ServerSpec, mode: str
) -> None:
    name = f"nap-{mode}-{type(spec).__name__}-{anyio.get_current_task().id}"
    async with mcp.open_toolset(msgspec.structs.replace(spec, mode=mode)) as server:
        napping = [t for t in server.get_tools() if t.name == "nap"][0]
        with anyio.CancelScope() as scope:

            def on_update(update: Any) -> None:
                scope.cancel()  # once the served tool runs

            await napping.execute("n", {"name": name}, on_update)
        assert scope.cancelled_caught
        woken = await call(server, "woken", name=name)
        assert woken.details["structured_content"] == {"result": True}
