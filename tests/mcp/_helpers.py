"""Servers, specs and process checks shared by the MCP tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

import anyio
import pytest

import agentloop as al
import agentloop_mcp as mcp

if TYPE_CHECKING:
    from collections.abc import Iterator

HERE = Path(__file__).resolve().parent
TOOLS_SERVER = HERE / "servers" / "tools_server.py"
FEATURES_SERVER = HERE / "servers" / "features_server.py"
MODEL = al.ModelSpec(provider="test", model_id="scripted")
# Fast restarts for tests; the defaults (0.25 s, doubling to 30 s) are for real servers.
QUICK = mcp.RestartPolicy(initial_delay=0.05, max_delay=0.2, factor=2.0)


def stdio_spec(**options: Any) -> mcp.StdioServer:
    """The test tools server, started as a subprocess of this interpreter."""
    options.setdefault("name", "tools")
    options.setdefault("connect_timeout", 20.0)
    options.setdefault("restart", QUICK)
    return mcp.StdioServer(command=sys.executable, args=[str(TOOLS_SERVER)], **options)


def features_spec(mode: Mode = "legacy", **options: Any) -> mcp.StdioServer:
    """The features server (resources, prompts, sampling, ...) over stdio, in ``mode``:
    ``"legacy"`` speaks the 2025-11-25 handshake, ``"auto"`` the 2026-07-28 protocol."""
    options.setdefault("name", "features")
    options.setdefault("connect_timeout", 20.0)
    options.setdefault("restart", QUICK)
    return mcp.StdioServer(
        command=sys.executable, args=[str(FEATURES_SERVER)], mode=mode, **options
    )


Mode = Literal["legacy", "auto"]

# The two protocol eras every feature test runs in (each on both backends).
ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"], ids=["2025", "2026"])


def http_spec(url: str, **options: Any) -> mcp.HttpServer:
    options.setdefault("name", "tools")
    options.setdefault("connect_timeout", 20.0)
    options.setdefault("restart", QUICK)
    return mcp.HttpServer(url=url, **options)


class HttpServerProcess:
    """The test tools server over streamable HTTP, in a subprocess of its own."""

    def __init__(self, port: int = 0, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(TOOLS_SERVER), "http", str(port)],
            stdout=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            text=True,
        )
        assert self.process.stdout is not None
        # The server prints its port once its socket listens: no polling, no race.
        line = self.process.stdout.readline()
        if not line.strip():
            self.process.kill()
            self.process.wait()
            raise RuntimeError("the HTTP test server did not start")
        self.port = int(line)
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """kill -9, then reap."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        assert self.process.stdout is not None
        self.process.stdout.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def is_running(pid: int) -> bool:
    """Whether a process with this id exists (a zombie not yet reaped counts as existing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kill9(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


async def server_pid(toolset: mcp.McpToolset) -> int:
    """Ask the server for its process id through its ``pid`` tool."""
    (tool,) = [t for t in toolset.get_tools() if getattr(t, "mcp_name", "") == "pid"]
    result = await tool.execute("pid-call", {}, lambda update: None)
    assert not result.is_error, result
    return int(result.details["structured_content"]["result"])


def tool_named(toolset: mcp.McpToolset | mcp.ToolsetGroup, name: str) -> mcp.McpTool:
    for tool in toolset.get_tools():
        if tool.name == name:
            assert isinstance(tool, mcp.McpTool)
            return tool
    raise LookupError(name)


async def call(
    toolset: mcp.McpToolset | mcp.ToolsetGroup, tool_name: str, /, **arguments: Any
) -> al.AgentToolResult:
    tool = tool_named(toolset, tool_name)
    return await tool.execute(
        f"call-{tool_name}", tool.validate_arguments(arguments), lambda u: None
    )


class Events:
    """Collects ``McpEvent``s; ``wait_for`` waits (without sleeping) for one of a type."""

    def __init__(self) -> None:
        self.events: list[mcp.McpEvent] = []
        self._arrived = anyio.Event()

    def __call__(self, event: mcp.McpEvent) -> None:
        self.events.append(event)
        self._arrived.set()
        self._arrived = anyio.Event()

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    async def wait_for(self, kind: type[Any], count: int = 1) -> Any:
        with anyio.fail_after(20):
            while len(self.of(kind)) < count:
                await self._arrived.wait()
        return self.of(kind)[count - 1]


def iter_text(result: al.AgentToolResult) -> Iterator[str]:
    for block in result.content:
        if isinstance(block, al.Text):
            yield block.text


def text(result: al.AgentToolResult) -> str:
    return "".join(iter_text(result))


PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

# On trio, the MCP SDK's streamable HTTP client leaves the SSE async generators of httpx2 and
# httpcore2 unexhausted when a response with progress notifications ends (it returns from
# inside ``async for`` without ``aclosing``); trio's finalizer then warns. The SDK alone, with no
# code of ours, does the same. Only these warnings are ignored, only in the HTTP tests.
SDK_TRIO_SSE_WARNINGS = [
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2[.]:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2[.]:ResourceWarning"),
]


class Pending:
    """A call run in a task of its own: ``hanging`` is set once the server reports it is stuck."""

    def __init__(self, toolset: mcp.McpToolset, tool_name: str, /, **arguments: Any) -> None:
        self.tool = tool_named(toolset, tool_name)
        self.arguments = arguments
        self.hanging = anyio.Event()
        self.done = anyio.Event()
        self.result: al.AgentToolResult | None = None
        self.updates: list[al.AgentToolResult] = []

    def _on_update(self, update: al.AgentToolResult | str) -> None:
        assert isinstance(update, al.AgentToolResult)
        self.updates.append(update)
        if text(update) == "hanging":
            self.hanging.set()

    async def run(self) -> None:
        self.result = await self.tool.execute("pending", self.arguments, self._on_update)
        self.done.set()
