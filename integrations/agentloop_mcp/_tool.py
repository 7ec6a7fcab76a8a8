"""One MCP tool as an ``agentloop.AgentTool``, and the translation of its results.

The tool's JSON Schema is passed through unchanged and checked by the loop like any tool's
before the call leaves this process (the server checks again). Names are what providers accept
(``[A-Za-z0-9_-]``, at most 64 characters): the prefix is put in front and any other character
becomes ``_``; the server still receives its own name.

A result maps block by block (``_content.Bounded``, which also bounds it): text to ``Text``,
images to ``Image`` (once checked), embedded text resources to ``Text``, resource links to a line
of text naming the link (and to ``details["resource_links"]``, for the application or the
``read_resource`` tool to resolve), audio and binary resources to ``Extension`` blocks.
``structuredContent`` goes to ``details["structured_content"]`` (and, when the server sent no
block at all, to a text block as JSON so the model sees it); ``isError`` makes an error result.

A tool the server says needs task augmentation (``execution.taskSupport: "required"``,
2025-11-25) is not offered: a plain call to it can only fail.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import AgentToolResult, Tool, ToolArgumentError

from ._content import Bounded, ResultLimits

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mcp import types

    from agentloop.abc import OnUpdate

    from ._config import ServerSpec
    from ._toolset import McpToolset

__all__ = ["McpTool", "build_tools", "to_agent_result"]

log = logging.getLogger("agentloop.mcp")

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64


def agent_name(prefix: str, mcp_name: str) -> str:
    """The name the model sees for the server's tool ``mcp_name``."""
    return _NOT_ALLOWED.sub("_", prefix + mcp_name)[:_MAX_NAME] or "_"


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(name == p or fnmatch.fnmatchcase(name, p) for p in patterns)


class McpTool(Tool):
    """A tool of an MCP server, called through its toolset's current connection.

    Attributes:
        mcp_name: the tool's name on the server.
        server: the name of the server.
        idempotent: whether a call may be repeated (read-only or annotated idempotent); such
            a call is retried once when the server crashes during it.
        info: the tool as the server listed it.
    """

    def __init__(self, toolset: McpToolset, info: types.Tool, name: str, spec: ServerSpec) -> None:
        self._toolset = toolset
        self.info = info
        self.mcp_name = info.name
        self.server = toolset.name
        self.name = name
        annotations = info.annotations
        self.label = info.title or (annotations.title if annotations else None) or info.name
        self.description = info.description or ""
        self.parameters = info.input_schema
        trusted = annotations if annotations is not None and spec.trust_read_only_hints else None
        self.read_only = trusted is not None and trusted.read_only_hint is True
        self.idempotent = self.read_only or (
            trusted is not None and trusted.idempotent_hint is True
        )
        approval = spec.requires_approval
        self.requires_approval = approval is True or (
            approval == "unless_read_only" and not self.read_only
        )
        self._schema_usable = True

    def validate_arguments(self, arguments: Any) -> Any:
        """Check ``arguments`` against the server's schema.

        A schema the validator cannot compile is left to the server to enforce (logged once).

        Raises:
            ToolArgumentError: the arguments do not match the schema.
        """
        if self._schema_usable:
            try:
                return super().validate_arguments(arguments)
            except ToolArgumentError:
                raise
            except Exception:
                self._schema_usable = False
                log.warning(
                    "MCP tool %s of server %s: its input schema cannot be compiled; the server "
                    "alone checks its arguments",
                    self.mcp_name,
                    self.server,
                    exc_info=True,
                )
        return arguments

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        """Call the tool on its server, through the toolset's connection."""
        return await self._toolset.call(self, arguments, on_update)

    def same_as(self, info: types.Tool) -> bool:
        """Whether ``info`` describes this tool exactly as before."""
        return info == self.info

    def __repr__(self) -> str:
        return f"<McpTool {self.name} ({self.server}:{self.mcp_name})>"


def needs_task(info: types.Tool) -> bool:
    """Whether the tool can only be called as a task (2025-11-25 ``taskSupport: required``)."""
    return info.execution is not None and info.execution.task_support == "required"


def build_tools(
    toolset: McpToolset,
    spec: ServerSpec,
    listed: Sequence[types.Tool],
    previous: Sequence[McpTool],
) -> tuple[McpTool, ...]:
    """The tools to offer from a listing, reusing ``previous`` objects that did not change."""
    old = {tool.mcp_name: tool for tool in previous}
    tools: list[McpTool] = []
    seen: set[str] = set()
    for info in listed:
        if needs_task(info):
            log.info(
                "MCP server %s: tool %r needs task-augmented calls; it is not offered",
                toolset.name,
                info.name,
            )
            continue
        if spec.include is not None and not _matches(info.name, spec.include):
            continue
        if _matches(info.name, spec.exclude):
            continue
        name = agent_name(spec.prefix, info.name)
        if name in seen:
            log.warning(
                "MCP server %s: tool %r is named %r like another one; it is left out",
                toolset.name,
                info.name,
                name,
            )
            continue
        seen.add(name)
        kept = old.get(info.name)
        tools.append(
            kept
            if kept is not None and kept.name == name and kept.same_as(info)
            else McpTool(toolset, info, name, spec)
        )
    return tuple(tools)


def to_agent_result(
    result: types.CallToolResult, *, server: str, tool: str, limits: ResultLimits
) -> AgentToolResult:
    """Translate a ``CallToolResult`` into an ``AgentToolResult``, within ``limits``."""
    bounded = Bounded(limits)
    for block in result.content:
        bounded.add_mcp(block)
    details: dict[str, Any] = {"server": server, "tool": tool}
    structured = result.structured_content
    if structured is not None:
        encoded = msgspec.json.encode(structured)
        if len(encoded) > limits.max_structured_bytes:
            details["structured_content_left_out"] = len(encoded)
        else:
            details["structured_content"] = structured
        if not result.content:
            bounded.add_text(encoded.decode())
    content = bounded.finish()
    if bounded.links:
        details["resource_links"] = bounded.links
    cut = bounded.report()
    if cut is not None:
        details["truncated"] = cut
    return AgentToolResult(content=content, details=details, is_error=result.is_error)
