"""MCP servers in the terminal UI, against the MCP tests' features server (stdio, a real
subprocess): prompts are slash commands, completed as you type; a form elicitation is a dialog
prefilled with the schema's defaults; a URL elicitation offers to open the page; sampling goes
through the approval dialog and is answered by the agent's own model."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

import agentloop as al
from agentloop.testing import reply_text, reply_tool_calls
from tests.mcp._helpers import features_spec

from ._helpers import PausingModel, make_app, screen_text, settle, text_of, wait_until

if TYPE_CHECKING:
    from pathlib import Path

    from textual.pilot import Pilot

    from agentloop_tui import AgentApp

pytestmark = pytest.mark.anyio


def _app(tmp_path: Path, model: PausingModel, **options: Any) -> AgentApp:
    return make_app(tmp_path, model, mcp_servers=[features_spec("legacy")], **options)


async def _connected(pilot: Pilot[Any]) -> None:
    app: AgentApp = pilot.app  # type: ignore[assignment]
    await app.ready.wait()
    await wait_until(pilot, lambda: app.mcp is not None and bool(app.mcp.commands), "MCP")
    assert app.session is not None
    app.session.approval_mode = "bypassed"


async def _screen(pilot: Pilot[Any], name: str) -> Any:
    await wait_until(pilot, lambda: type(pilot.app.screen).__name__ == name, name)
    return pilot.app.screen


async def _idle(app: AgentApp) -> None:
    """Wait for the app's work (the MCP servers' worker runs until the app ends)."""
    while busy := [w for w in app.workers if w.group != "mcp" and not w.is_finished]:
        await app.workers.wait_for_complete(busy)  # an empty list would mean all of them


def _tool_result(model: PausingModel) -> str:
    result = model.contexts[-1].messages[-1]
    assert isinstance(result, al.ToolResultMessage)
    return al.extract_text(result.content)


async def test_prompts_are_slash_commands_with_completion(tmp_path: Path) -> None:
    model = PausingModel([reply_text("hello to you"), reply_text("reviewed")])
    app = _app(tmp_path, model)
    async with app.run_test(size=(120, 30)) as pilot:
        await _connected(pilot)
        await pilot.press(*"/mcp__features__r")
        await settle(pilot)
        offered = text_of(app.suggestions)
        assert "/mcp__features__review" in offered and "<path> [focus]" in offered
        await pilot.press("ctrl+u", *"/mcp__features__greet", "enter")
        await _idle(app)
        assert al.extract_text(model.contexts[0].messages[-1].content) == "Hello!"
        await pilot.press(*"/mcp__features__review a.py style", "enter")
        await _idle(app)
    sent = [al.extract_text(m.content) for m in model.contexts[1].messages]
    assert any(text.startswith("Review a.py, looking for style.") for text in sent)


async def test_a_form_elicitation_is_a_dialog_with_the_defaults(tmp_path: Path) -> None:
    model = PausingModel([reply_tool_calls(("ask_user", {})), reply_text("thanks")])
    app = _app(tmp_path, model)
    async with app.run_test(size=(110, 36)) as pilot:
        await _connected(pilot)
        await pilot.press(*"who am I", "enter")
        form = await _screen(pilot, "ElicitationScreen")
        await settle(pilot)
        shown = screen_text(app)
        assert "features asks: Who are you?" in shown and "colour *" in shown
        assert form.inputs["name"].value == "Ada" and form.inputs["age"].value == "36"
        await pilot.press("ctrl+s")  # colour is required and has no default
        await pilot.pause()
        assert type(app.screen).__name__ == "ElicitationScreen"
        form.inputs["colour"].value = "blue"
        form.inputs["age"].value = "37"
        await pilot.press("ctrl+s")
        await _idle(app)
    answer = json.loads(_tool_result(model))
    assert answer["action"] == "accept"
    assert answer["content"] == {"name": "Ada", "age": 37, "colour": "blue"}


async def test_a_url_elicitation_offers_to_open_the_page(tmp_path: Path) -> None:
    opened: list[str] = []
    model = PausingModel([reply_tool_calls(("ask_url", {})), reply_text("signed in")])
    app = _app(tmp_path, model, open_page=opened.append)
    async with app.run_test(size=(110, 30)) as pilot:
        await _connected(pilot)
        await pilot.press(*"sign in", "enter")
        await _screen(pilot, "ElicitationScreen")
        await settle(pilot)
        assert "https://example.com/login" in screen_text(app)
        await pilot.click("#accept")
        await _idle(app)
    assert opened == ["https://example.com/login"]
    assert _tool_result(model) == "accept"


@pytest.mark.parametrize(("key", "answered"), [("y", True), ("n", False)])
async def test_sampling_is_approved_in_the_approval_dialog(
    tmp_path: Path, key: str, answered: bool
) -> None:
    replies = [reply_tool_calls(("ask_model", {"question": "2+2?"}))]
    if answered:
        replies.append(reply_text("four"))  # the server's question, to the agent's own model
    replies.append(reply_text("done"))
    model = PausingModel(replies)
    app = _app(tmp_path, model)
    async with app.run_test(size=(110, 30)) as pilot:
        await _connected(pilot)
        await pilot.press(*"ask it", "enter")
        dialog = await _screen(pilot, "ApprovalScreen")
        await settle(pilot)
        shown = screen_text(app)
        assert "Allow the MCP server features to ask the model" in shown and "2+2?" in shown
        assert dialog.tool == "sampling"
        await pilot.press(key)
        await _idle(app)
    result = _tool_result(model)
    if answered:
        assert result.endswith(": four")
        assert al.extract_text(model.contexts[1].messages[-1].content) == "2+2?"
    else:
        assert "four" not in result and len(model.contexts) == 2


def test_servers_are_read_from_a_file_in_either_shape(tmp_path: Path) -> None:
    import agentloop_mcp
    from agentloop_tui._mcp import McpConfigError, load_servers

    common = tmp_path / "mcp.json"
    common.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
                    "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
                }
            }
        )
    )
    time_server, web = load_servers(common)
    assert isinstance(time_server, agentloop_mcp.StdioServer) and time_server.name == "time"
    assert time_server.args == ["mcp-server-time"] and time_server.env == {"TZ": "UTC"}
    assert isinstance(web, agentloop_mcp.HttpServer) and web.headers == {"X-Key": "k"}
    native = tmp_path / "mcp.toml"
    native.write_text('[[servers]]\ntransport = "stdio"\nname = "files"\ncommand = "files-mcp"\n')
    (files,) = load_servers(native)
    assert isinstance(files, agentloop_mcp.StdioServer) and files.command == "files-mcp"
    for bad in ("[1, 2]", "{", '{"mcpServers": {"x": {}}}'):
        common.write_text(bad)
        with pytest.raises(McpConfigError, match="mcp.json"):
            load_servers(common)
