"""A matrix against a server nobody here wrote: ``@modelcontextprotocol/server-everything`` from
npm, started by the test over stdio and over streamable HTTP (its process stopped by PID). Every
tool, resource, template and prompt, with sampling, elicitation (form and URL), roots,
completions, log messages and resource subscriptions, on both backends.

``tests/mcp/conformance/run.py`` and ``.ci/run`` install the package into ``.mcp-conformance/``;
without it these tests are skipped, saying so.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

import agentloop as al
import agentloop_mcp as mcp
from agentloop.policy import APPROVED
from agentloop.testing import FunctionStream, reply_text
from tests._programs import missing

from ._helpers import SDK_TRIO_SSE_WARNINGS, Events, call, text, tool_named

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [pytest.mark.anyio, *SDK_TRIO_SSE_WARNINGS]

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / ".mcp-conformance" / "node_modules" / ".bin" / "mcp-server-everything"
PACKAGE = "@modelcontextprotocol/server-everything"


def everything_command() -> str:
    if LOCAL.exists():
        return str(LOCAL)
    found = shutil.which("mcp-server-everything")
    if found is None:
        missing(
            f"{PACKAGE} is not installed: `npm install --prefix .mcp-conformance {PACKAGE}` "
            "(tests/mcp/conformance/run.py and .ci/run install it; npx is not used, to stay "
            "offline)"
        )
    return found


@pytest.fixture(scope="module")
def everything_http() -> Iterator[str]:
    """server-everything over streamable HTTP; its URL, once it listens."""
    command = everything_command()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [command, "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:
        for line in process.stderr:  # it says so once it listens: no polling
            if "listening on port" in line:
                break
        else:
            raise RuntimeError("server-everything did not start over HTTP")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.kill(process.pid, signal.SIGTERM)
        process.wait()
        process.stderr.close()


@pytest.fixture(params=["stdio", "http"])
def everything(request: pytest.FixtureRequest) -> mcp.ServerSpec:
    if request.param == "stdio":
        return mcp.StdioServer(
            name="everything",
            command=everything_command(),
            args=["stdio"],
            stderr=subprocess.DEVNULL,
            log_level="debug",
        )
    url = request.getfixturevalue("everything_http")
    return mcp.HttpServer(name="everything", url=url, log_level="debug")


async def approve(request: mcp.SamplingRequest) -> Any:
    return APPROVED


async def fill_in(request: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
    if request.mode == "url":
        return mcp.ElicitationResponse.accept()
    return mcp.ElicitationResponse.accept({"name": "Ada", "email": "ada@example.com"})


CALLS: dict[str, dict[str, Any]] = {
    "echo": {"message": "hello"},
    "get-annotated-message": {"messageType": "error", "includeImage": True},
    "get-env": {},
    "get-resource-links": {"count": 3},
    "get-resource-reference": {"resourceType": "Text", "resourceId": 1},
    "get-structured-content": {"location": "New York"},
    "get-sum": {"a": 2, "b": 3},
    "get-tiny-image": {},
    "gzip-file-as-resource": {
        "name": "hello.gz",
        "data": "data:text/plain;base64," + base64.b64encode(b"hello").decode(),
        "outputType": "resource",
    },
    "toggle-simulated-logging": {},
    "toggle-subscriber-updates": {},
    "trigger-long-running-operation": {"duration": 0.2, "steps": 2},
    "get-roots-list": {},
    "trigger-elicitation-request": {},
    "trigger-url-elicitation": {
        "url": "https://example.com/sign-in",
        "message": "Sign in",
        "elicitationId": "sign-in-1",
    },
    "trigger-sampling-request": {"prompt": "Say hi", "maxTokens": 20},
}


async def test_every_tool_with_sampling_elicitation_roots_and_logs(
    everything: mcp.ServerSpec, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentloop.mcp")
    events = Events()
    model = FunctionStream(lambda context: reply_text("hi from the client's model"))
    sampler = mcp.Sampler(
        al.ModelSpec(provider="t", model_id="small"), stream_fn=model, approve=approve
    )
    roots = mcp.Roots([tmp_path])
    async with mcp.open_toolset(
        everything, sampling=sampler, elicitation=fill_in, roots=roots, on_event=events
    ) as server:
        offered = {t.name for t in server.get_tools()}
        assert set(CALLS) <= offered, sorted(set(CALLS) - offered)
        updates: list[al.AgentToolResult | str] = []
        results: dict[str, al.AgentToolResult] = {}
        for name, arguments in CALLS.items():
            tool = tool_named(server, name)
            checked = tool.validate_arguments(arguments)
            results[name] = await tool.execute(f"c-{name}", checked, updates.append)
        failed = {n: text(r) for n, r in results.items() if r.is_error}
        assert not failed, failed

        assert "hello" in text(results["echo"])
        assert "5" in text(results["get-sum"])
        assert any(isinstance(b, al.Image) for b in results["get-tiny-image"].content)
        assert any(isinstance(b, al.Image) for b in results["get-annotated-message"].content)
        assert results["get-structured-content"].details["structured_content"]
        links = results["get-resource-links"].details["resource_links"]
        assert len(links) == 3
        resolved = await server.resolve_links(results["get-resource-links"])
        assert len(resolved.content) > len(results["get-resource-links"].content)
        assert tmp_path.as_uri() in text(results["get-roots-list"])
        assert "hi from the client's model" in text(results["trigger-sampling-request"])
        assert "Ada" in text(results["trigger-elicitation-request"])
        assert any(
            isinstance(u, al.AgentToolResult) and "progress" in (u.details or {}) for u in updates
        )

        # Invalid arguments never reach the server.
        with pytest.raises(al.ToolArgumentError):
            tool_named(server, "get-sum").validate_arguments({"a": "two"})

        await events.wait_for(mcp.ServerLog)
        answered = events.of(mcp.SamplingAnswered)
        assert answered and answered[0].refused is None
        asked = {e.mode for e in events.of(mcp.ElicitationAnswered)}
        assert asked == {"form", "url"}

        # The server's task-only tool (simulate-research-query) is listed but never offered.
        assert "simulate-research-query" not in offered
        hidden = [r.getMessage() for r in caplog.records if "task-augmented" in r.getMessage()]
        assert any("'simulate-research-query'" in m for m in hidden), hidden


async def test_every_resource_template_and_prompt(everything: mcp.ServerSpec) -> None:
    async with mcp.open_toolset(everything) as server:
        resources = await server.list_resources()
        assert resources
        for resource in resources:
            blocks = await server.resource_blocks(resource.uri)
            assert blocks, resource.uri
        templates = {t.uri_template: t for t in await server.list_resource_templates()}
        for template in templates.values():
            uri = template.uri_template.replace("{resourceId}", "1")
            assert await server.read_resource(uri)
        text_template = templates["demo://resource/dynamic/text/{resourceId}"]
        assert isinstance(await server.complete(text_template, "resourceId", "1"), list)

        prompts = {p.name: p for p in await server.list_prompts()}
        arguments = {
            "simple-prompt": {},
            "args-prompt": {"city": "Lisbon", "state": "Lisboa"},
            "completable-prompt": {"department": "Engineering", "name": "Ada"},
            "resource-prompt": {"resourceType": "Text", "resourceId": "1"},
        }
        for name, given in arguments.items():
            rendered = await server.get_prompt(name, given)
            assert rendered.messages, name
        with pytest.raises(mcp.PromptArgumentError):
            await server.get_prompt("args-prompt", {})
        suggestions = await server.complete(prompts["completable-prompt"], "department", "E")
        assert "Engineering" in suggestions

        commands = {c.name for c in await server.prompt_commands()}
        assert "mcp__everything__args-prompt" in commands


async def test_subscribed_resources_are_updated(everything: mcp.ServerSpec) -> None:
    async with mcp.open_toolset(everything) as server:
        uri = (await server.list_resources())[0].uri
        async with server.watch_resource(uri) as updates:
            await call(server, "toggle-subscriber-updates")
            with anyio.fail_after(30):
                update = await updates.receive()
        assert update.uri == uri
        assert json.dumps(update.uri)


async def test_a_call_that_needs_a_page_visited_first_is_repeated_once_the_user_agrees(
    everything: mcp.ServerSpec,
) -> None:
    asked: list[mcp.ElicitationRequest] = []

    async def consent(request: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
        asked.append(request)
        return mcp.ElicitationResponse.accept()

    arguments = {
        "url": "https://example.com/connect",
        "message": "Connect your account",
        "elicitationId": f"connect-{anyio.get_current_task().id}",
        "errorPath": True,  # the server answers -32042 "URL elicitation required"
    }
    async with mcp.open_toolset(everything, elicitation=consent) as server:
        result = await call(server, "trigger-url-elicitation", **arguments)
        assert not result.is_error, text(result)
    # Asked twice: first for the page the error named (the server's prerequisite), then by the
    # repeated call itself.
    assert len(asked) == 2
    assert asked[0].mode == "url" and asked[0].url
    assert asked[1].url == "https://example.com/connect"

    async def refuse(request: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
        return mcp.ElicitationResponse.decline("no")

    arguments["elicitationId"] = f"refused-{anyio.get_current_task().id}"
    async with mcp.open_toolset(everything, elicitation=refuse) as server:
        refused = await call(server, "trigger-url-elicitation", **arguments)
    assert refused.is_error
    assert refused.details["code"] == -32042
