# ruff: noqa: E402 - a refused start must exit before the slow imports
"""A real MCP server for the tests, written with the SDK's own ``MCPServer``.

    python tools_server.py            serve over stdio
    python tools_server.py http PORT  serve streamable HTTP on 127.0.0.1:PORT (0: any free port);
                                      prints the port on stdout once it listens

``MARKER_DIR`` in the environment, if set, is where ``read_twice`` keeps its state and where
the server refuses to start again when a file ``refuse_start`` is there (to make restarts fail).
``HEADERS_LOG``, if set, names a file where the HTTP server appends each request's method and
headers as a line of JSON, before the request is handled.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

MARKERS = Path(os.environ["MARKER_DIR"]) if os.environ.get("MARKER_DIR") else None
if MARKERS is not None and (MARKERS / "refuse_start").exists():
    sys.exit(3)  # before the imports: a refused restart costs no more than starting Python

import base64
import json
import socket

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Image
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
mcp = MCPServer("test-tools", log_level="WARNING")
READ_ONLY = ToolAnnotations(read_only_hint=True)


@mcp.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool(title="Echo")
def echo(text: str) -> str:
    """Say the text back."""
    return text


@mcp.tool(annotations=READ_ONLY)
def picture() -> Image:
    """A tiny PNG image."""
    return Image(data=PNG, format="png")


@mcp.tool()
def fail(message: str) -> str:
    """Always fails with the message."""
    raise ToolError(message)


@mcp.tool(annotations=READ_ONLY)
async def count(steps: int, ctx: Context) -> str:
    """Count to steps, reporting progress at each step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, total=steps, message=f"step {step} of {steps}")
    return f"counted to {steps}"


@mcp.tool()
async def hang(ctx: Context) -> str:
    """Reports progress once ("hanging"), then never returns."""
    await ctx.report_progress(1, message="hanging")
    await anyio.sleep_forever()
    return "unreachable"


@mcp.tool(annotations=READ_ONLY)
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@mcp.tool(annotations=READ_ONLY)
def env(name: str) -> str:
    """The value of an environment variable in the server, or <unset>."""
    return os.environ.get(name, "<unset>")


@mcp.tool()
def write_note(text: str) -> str:
    """Pretends to write a note (no annotations: may change things)."""
    return f"noted: {text}"


@mcp.tool(annotations=READ_ONLY)
async def read_twice(ctx: Context) -> str:
    """Hangs on its first call ever (state kept in MARKER_DIR), answers on later ones."""
    assert MARKERS is not None
    first = MARKERS / "read_twice"
    if not first.exists():
        first.write_text(str(os.getpid()))
        await ctx.report_progress(1, message="hanging")
        await anyio.sleep_forever()
    return f"read by {os.getpid()}"


@mcp.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool called name and announces the change."""

    def extra() -> str:
        """A tool that appeared later."""
        return f"{name} here"

    mcp.add_tool(extra, name=name)
    await ctx.notify_tools_changed()  # 2026-era clients: the listen stream
    await ctx.session.send_tool_list_changed()  # handshake-era clients: the notification
    return "grown"


class HangOnDelete:
    """ASGI middleware: a DELETE (the end of a session) is never answered."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "DELETE":
            await anyio.sleep_forever()
        await self.app(scope, receive, send)


class RecordHeaders:
    """ASGI middleware: appends each HTTP request's method and headers to a JSON-lines file."""

    def __init__(self, app: Any, path: str) -> None:
        self.app = app
        self.path = anyio.Path(path)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            line = json.dumps({"method": scope["method"], "headers": headers})
            async with await self.path.open("a") as log:
                await log.write(line + "\n")
        await self.app(scope, receive, send)


def serve_http(port: int) -> None:
    import uvicorn

    app: Any = mcp.streamable_http_app(host="127.0.0.1")
    if os.environ.get("HANG_ON_DELETE"):
        app = HangOnDelete(app)
    if os.environ.get("HEADERS_LOG"):
        app = RecordHeaders(app, os.environ["HEADERS_LOG"])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    print(listener.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [listener])


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        serve_http(int(sys.argv[2]))
    else:
        mcp.run()
