"""One live session with an MCP server, and the calls made over it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import anyio
from mcp import Client, types
from mcp.shared.exceptions import MCPError
from mcp_types import LOG_LEVEL_META_KEY

from agentloop import AgentToolResult, Text

if TYPE_CHECKING:
    from agentloop.abc import OnUpdate

    from ._tool import McpTool

__all__ = [
    "Connection",
    "Lost",
    "describe",
    "list_all_tools",
    "single_exception",
    "uses_listen",
]

_MAX_PAGES = 100  # a paginating server that never ends cannot hang a listing


class Lost:
    """The connection a call was using went away; ``reason`` says how."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class Connection:
    """One live session with the server.

    ``calls`` holds the cancel scopes of the calls in flight, so that when the session ends
    (crash or close) the owner task ends them at once instead of leaving them to the SDK's
    shutdown of the transport.
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        self.ended = anyio.Event()
        self.reason: str | None = None
        self.calls: set[anyio.CancelScope] = set()
        self.started = anyio.current_time()

    @property
    def lost(self) -> bool:
        return self.reason is not None

    def end(self, reason: str) -> None:
        """Mark the connection finished (idempotent: the first reason is kept)."""
        if self.reason is None:
            self.reason = reason
        self.ended.set()

    def cancel_calls(self) -> None:
        for scope in self.calls:
            scope.cancel()

    async def call(
        self,
        tool: McpTool,
        arguments: Any,
        on_update: OnUpdate,
        time_limit: float | None,
        log_level: str | None = None,
    ) -> types.CallToolResult | AgentToolResult | Lost:
        """Run one call; a failure is an error result, the connection's loss a ``Lost``.

        ``log_level`` is asked of the call itself on 2026-era connections (their logging is
        opted into request by request).
        """
        meta: Any = None
        if log_level is not None and self.client.protocol_version >= "2026":
            meta = {LOG_LEVEL_META_KEY: log_level}

        async def report(progress: float, total: float | None, message: str | None) -> None:
            text = message or (f"{progress:g}/{total:g}" if total else f"{progress:g}")
            details = {"progress": progress, "total": total, "message": message}
            on_update(AgentToolResult(content=[Text(text=text)], details=details))

        result: types.CallToolResult | None = None
        with anyio.CancelScope() as scope:
            self.calls.add(scope)
            try:
                with anyio.move_on_after(math.inf if time_limit is None else time_limit):
                    result = await self.client.call_tool(
                        tool.mcp_name, arguments, progress_callback=report, meta=meta
                    )
            except MCPError as exc:
                if exc.code == types.CONNECTION_CLOSED:
                    self.end("the connection closed")
                    return Lost(self.reason or "the connection closed")
                details = {"server": tool.server, "tool": tool.mcp_name, "code": exc.code}
                if exc.data is not None:
                    details["error_data"] = exc.data
                return AgentToolResult.error(
                    f"MCP server {tool.server!r} refused the call to {tool.mcp_name!r}: "
                    f"{exc.message} (code {exc.code})",
                    details=details,
                )
            except Exception as exc:
                if self.lost:
                    return Lost(self.reason or "the connection was lost")
                return AgentToolResult.error(
                    f"MCP call to {tool.mcp_name!r} of server {tool.server!r} failed: "
                    f"{type(exc).__name__}: {exc}",
                    details={"server": tool.server, "tool": tool.mcp_name},
                )
            finally:
                self.calls.discard(scope)
        if scope.cancelled_caught:
            return Lost(self.reason or "the connection was lost")
        if result is None:
            return AgentToolResult.error(
                f"MCP tool {tool.mcp_name!r} of server {tool.server!r} timed out after "
                f"{time_limit:g} s",
                details={"server": tool.server, "tool": tool.mcp_name, "timeout": time_limit},
            )
        return result


async def list_all_tools(client: Client) -> list[types.Tool]:
    """Every tool of the server, page after page (at most a hundred pages)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def uses_listen(client: Client) -> bool:
    """Whether tool list changes come over a ``subscriptions/listen`` stream (2026-era)."""
    tools = client.server_capabilities.tools
    return bool(tools is not None and tools.list_changed and client.protocol_version >= "2026")


def describe(exc: BaseException) -> str:
    """A one-line account of a failure, looking inside exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(e) for e in exc.exceptions)
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def single_exception(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one real exception of the group (else its first cancellation), or the group."""
    cancelled = anyio.get_cancelled_exc_class()
    errors = [e for e in group.exceptions if not isinstance(e, cancelled)]
    if not errors:
        return group.exceptions[0]
    if len(errors) == 1:
        error = errors[0]
        return single_exception(error) if isinstance(error, BaseExceptionGroup) else error
    return group
