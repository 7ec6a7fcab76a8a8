"""Over ACP, the editor's MCP servers (issue 35 §8): given in ``session/new``, connected
through ``agentloop_mcp``, their tools offered to the model and called, their prompts offered
as commands, a server that fails reported, and every server stopped with its session.

The model is an OpenAI-compatible server on 127.0.0.1 playing scripted answers, so each
request shows what the model was offered. The protocol package runs on asyncio only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from acp import text_block
from acp.schema import (
    AgentMessageChunk,
    AvailableCommandsUpdate,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    SseMcpServer,
)

from ._acp_client import Editor, connect, final_text, script, tool_updates
from ._cli_helpers import Cli
from ._fake_openai import running_fake_openai
from ._helpers import wait_gone

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.anyio

FEATURES = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "features_server.py"
PROMPTS = Path(__file__).resolve().parent / "servers" / "prompts_server.py"
WEATHER = McpServerStdio(
    name="weather", command=sys.executable, args=["-m", "agentloop_mcp.demo_server"], env=[]
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A scripted reply calling one tool."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def prompt(conn: Any, session_id: str, text: str) -> str:
    response = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
    return str(response.stop_reason)


def children(pid: int) -> list[tuple[int, str]]:
    """The processes whose parent is ``pid``, with their command lines."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                parent = int(file.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                command = file.read().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid:
            found.append((int(entry), command))
    return found


def commands_of(updates: list[Any]) -> list[str]:
    (last, *_) = [u for u in reversed(updates) if isinstance(u, AvailableCommandsUpdate)]
    return [c.name for c in last.available_commands]


async def test_the_editors_stdio_server_is_connected_and_its_tool_called(cli: Cli) -> None:
    answers: list[dict[str, Any]] = [
        {"tool_calls": [("mcp__weather__forecast", {"city": "Lisbon"})]},
        {"text": "Sunny in Lisbon."},
        {"text": "1. Sunglasses"},
    ]
    with running_fake_openai(answers) as model:
        env = {"OPENAI_API_KEY": "sk-loopback", "OPENAI_BASE_URL": model.base_url}
        async with anyio.create_task_group() as tg:
            editor = Editor(tg)
            editor.watch = lambda u: isinstance(u, AvailableCommandsUpdate)
            with anyio.fail_after(90):
                async with connect(cli, editor, model="openai:gpt-4.1", env=env) as (
                    conn,
                    process,
                    init,
                ):
                    mcp = init.agent_capabilities.mcp_capabilities
                    assert (mcp.http, mcp.sse) == (True, False)
                    new = await conn.new_session(cwd=str(cli.workspace), mcp_servers=[WEATHER])
                    assert new.field_meta is None  # nothing failed
                    await editor.seen.wait()
                    commands = commands_of(editor.updates)
                    assert commands[:4] == ["plan", "execute", "model", "approval"]
                    assert "mcp__weather__packing" in commands
                    (server,) = [p for p, c in children(process.pid) if "demo_server" in c]

                    assert await prompt(conn, new.session_id, "Weather in Lisbon?") == "end_turn"
                    forecast = tool_updates(editor.updates, "call_0")[-1]
                    assert forecast.status == "completed" and "sunny" in final_text(forecast)
                    assert not editor.permissions  # read-only by the server's annotations

                    # A server's prompt as a slash command: its text goes to the model.
                    command = "/mcp__weather__packing Lisbon 2"
                    assert await prompt(conn, new.session_id, command) == "end_turn"

                    # Loaded again (with its servers), the session's former servers stop.
                    await conn.load_session(
                        cwd=str(cli.workspace), session_id=new.session_id, mcp_servers=[WEATHER]
                    )
                    await wait_gone(server)
                    (server,) = [p for p, c in children(process.pid) if "demo_server" in c]
        tg.cancel_scope.cancel()
        await wait_gone(server)  # the session's server stopped with the agent
    offered = {t["function"]["name"] for t in model.requests[0]["tools"]}
    assert {"mcp__weather__forecast", "mcp__weather__report", "read_file"} <= offered
    last_user = model.requests[2]["messages"][-1]["content"]
    assert "packing list for 2 days in Lisbon" in json.dumps(last_user)


async def test_servers_that_fail_are_reported_and_the_session_goes_on(cli: Cli) -> None:
    servers = [
        McpServerStdio(name="missing", command="/nonexistent/mcp-server", args=[], env=[]),
        HttpMcpServer(type="http", name="away", url="http://127.0.0.1:9/mcp", headers=[]),
        SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[]),
        WEATHER,
    ]
    async with anyio.create_task_group() as tg:
        editor = Editor(tg)
        said = "".join

        def told_all(update: Any) -> bool:
            text = said(x.content.text for x in editor.updates if isinstance(x, AgentMessageChunk))
            return all(f"{name!r} could not" in text for name in ("missing", "away", "old"))

        editor.watch = told_all
        with anyio.fail_after(90):
            async with connect(cli, editor, model=script(cli, [{"text": "Still here."}])) as (
                conn,
                _,
                _,
            ):
                new = await conn.new_session(cwd=str(cli.workspace), mcp_servers=servers)
                failed = new.field_meta["agentloop/mcpServers"]
                assert set(failed) == {"missing", "away", "old"}
                assert "sse transport is not supported" in failed["old"]["reason"]
                await editor.seen.wait()
                told = said(
                    u.content.text for u in editor.updates if isinstance(u, AgentMessageChunk)
                )
                for name in ("missing", "away", "old"):
                    assert f"MCP server {name!r} could not be used" in told
                assert "mcp__weather__packing" in commands_of(editor.updates)
                assert await prompt(conn, new.session_id, "hello") == "end_turn"
        tg.cancel_scope.cancel()


@pytest.fixture
def features_over_http() -> Iterator[str]:
    """The features server (sampling, elicitation, roots, prompts) over streamable HTTP."""
    server = subprocess.Popen(
        [sys.executable, str(FEATURES), "http"], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    with server.stdout:
        try:
            port = int(server.stdout.readline())  # printed once it listens
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.kill()
            server.wait()


async def test_an_http_server_asks_the_user_and_the_model_through_the_editor(
    cli: Cli, features_over_http: str
) -> None:
    features = HttpMcpServer(
        type="http",
        name="features",
        url=features_over_http,
        headers=[HttpHeader(name="X-Test", value="1")],
    )
    replies = [
        call("mcp__features__ask_user", {}),
        call("mcp__features__ask_model", {"question": "2 + 2?"}),
        {"text": "4"},  # the sampling request's answer, from the session's model
        call("mcp__features__roots", {}),
        {"text": "Done."},
    ]
    async with anyio.create_task_group() as tg:
        editor = Editor(tg, elicitation=True)
        with anyio.fail_after(90):
            async with connect(cli, editor, model=script(cli, replies)) as (conn, _, _):
                new = await conn.new_session(cwd=str(cli.workspace), mcp_servers=[features])
                assert new.field_meta is None
                assert await prompt(conn, new.session_id, "go") == "end_turn"
        tg.cancel_scope.cancel()
    updates = editor.updates
    # Elicitation: the form went to the editor, its answer to the server (defaults filled).
    ((message, mode),) = editor.elicitations
    assert "Who are you?" in message and mode.session_id == new.session_id
    assert set(mode.requested_schema.properties) == {"name", "age", "colour"}
    asked = json.loads(final_text(tool_updates(updates, "call_1_1")[-1]))
    assert asked["action"] == "accept"
    assert asked["content"] == {"name": "Ada", "age": 36, "colour": "red"}
    # Sampling: asked about with a permission request, then answered by the session's model.
    asked_about = [p.tool_call_id for p in editor.permissions]
    assert asked_about == ["call_1_1", "call_2_1", "mcp-sampling-1", "call_4_1"]
    assert "features" in editor.permissions[2].title
    assert final_text(tool_updates(updates, "call_2_1")[-1]).endswith(": 4")
    # Roots: the session's workspace.
    roots = json.loads(final_text(tool_updates(updates, "call_4_1")[-1]))
    assert roots == [{"uri": cli.workspace.as_uri(), "name": "work"}]


async def test_without_the_editors_elicitation_a_server_is_declined_with_a_reason(
    cli: Cli,
) -> None:
    features = McpServerStdio(name="features", command=sys.executable, args=[str(FEATURES)], env=[])
    replies = [call("mcp__features__ask_user", {}), {"text": "Declined."}]
    async with anyio.create_task_group() as tg:
        editor = Editor(tg)  # offers no elicitation
        with anyio.fail_after(90):
            async with connect(cli, editor, model=script(cli, replies)) as (conn, _, _):
                new = await conn.new_session(cwd=str(cli.workspace), mcp_servers=[features])
                assert await prompt(conn, new.session_id, "go") == "end_turn"
        tg.cancel_scope.cancel()
    asked = json.loads(final_text(tool_updates(editor.updates, "call_1_1")[-1]))
    assert asked["action"] == "decline"
    assert "no user" in asked["meta"]["io.agentloop/reason"]
    assert not editor.elicitations


async def test_commands_are_sent_again_when_a_servers_prompts_change(cli: Cli) -> None:
    prompts = McpServerStdio(name="prompts", command=sys.executable, args=[str(PROMPTS)], env=[])
    replies = [call("mcp__prompts__add_prompt", {"name": "farewell"}), {"text": "Added."}]
    async with anyio.create_task_group() as tg:
        editor = Editor(tg)
        editor.watch = lambda u: (
            isinstance(u, AvailableCommandsUpdate)
            and "mcp__prompts__farewell" in [c.name for c in u.available_commands]
        )
        editor.answer = lambda call: "allow"
        with anyio.fail_after(90):
            async with connect(cli, editor, model=script(cli, replies)) as (conn, _, _):
                new = await conn.new_session(cwd=str(cli.workspace), mcp_servers=[prompts])
                assert await prompt(conn, new.session_id, "add one") == "end_turn"
                await editor.seen.wait()
                assert "mcp__prompts__hello" in commands_of(editor.updates)
        tg.cancel_scope.cancel()


async def test_url_and_form_requests_are_put_to_the_editor_as_acp_elicitations() -> None:
    # The bridge on its own: a URL request cannot come from the test servers over the
    # 2026-era protocol (no server-to-client requests), which ``auto`` connections speak.
    from acp.schema import (
        AcceptElicitationResponse,
        ElicitationCapabilities,
        ElicitationUrlCapabilities,
    )

    from agentloop_coding._acp_mcp import McpServers
    from agentloop_mcp import ElicitationRequest

    asked: list[tuple[str, Any]] = []

    class Conn:
        async def create_elicitation(self, message: str, mode: Any) -> Any:
            asked.append((message, mode))
            return AcceptElicitationResponse(action="accept")

    url_only = ElicitationCapabilities(url=ElicitationUrlCapabilities())
    servers = McpServers(
        [], "/", Conn(), "s1", elicitation=url_only, on_prompts_changed=lambda: None
    )
    request = ElicitationRequest(
        server="auth",
        mode="url",
        message="Sign in",
        url="https://example.com/login",
        elicitation_id="login-1",
    )
    answer = await servers._elicit(request)
    assert answer.action == "accept"
    ((message, mode),) = asked
    assert message == "auth: Sign in" and mode.session_id == "s1"
    assert (str(mode.url), mode.elicitation_id) == ("https://example.com/login", "login-1")
    form = ElicitationRequest(server="auth", mode="form", message="Who?", schema={})
    refused = await servers._elicit(form)  # this editor shows URLs only
    assert refused.action == "decline" and "does not show form requests" in (refused.reason or "")
