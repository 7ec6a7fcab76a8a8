"""Resources: what a server offers to read, as plain values; and the opt-in tool that reads them.

``Resource`` and ``ResourceTemplate`` describe what ``McpToolset.list_resources`` and
``list_resource_templates`` found; ``ResourceContents`` is one part of what ``read_resource``
returned. ``resource_blocks`` turns contents into content blocks (bounded like a tool result),
which is how a resource is attached to a prompt and what the ``read_resource`` tool gives the
model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from mcp import types

from agentloop import AgentToolResult, ContentBlock, Tool

from ._content import Bounded, ResultLimits

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentloop.abc import OnUpdate

    from ._features import ServerFeatures

__all__ = [
    "ReadResourceTool",
    "Resource",
    "ResourceContents",
    "ResourceTemplate",
    "resource_blocks",
]


class Resource(msgspec.Struct, frozen=True, kw_only=True):
    """A resource a server lists.

    Attributes:
        uri: what to pass to ``read_resource``.
        name: the server's name for it.
        title: a name for people.
        description: what it is.
        mime_type: its media type, when known.
        size: its size in bytes, when known.
        server: the server's name.
    """

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    server: str = ""


class ResourceTemplate(msgspec.Struct, frozen=True, kw_only=True):
    """A family of resources, named by an RFC 6570 URI template (``file:///{path}``).

    Attributes:
        uri_template: the template; fill it in and pass the URI to ``read_resource``.
        name: the server's name for it.
        title: a name for people.
        description: what it is.
        mime_type: the media type of its resources, when known.
        server: the server's name.
    """

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    server: str = ""


class ResourceContents(msgspec.Struct, frozen=True, kw_only=True):
    """One part of a resource as read: ``text``, or ``blob`` (base64).

    Attributes:
        uri: the part's URI.
        mime_type: its media type, when known.
        text: its text (text resources).
        blob: its bytes as base64 (binary resources).
    """

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None


def from_resource(resource: types.Resource, server: str) -> Resource:
    return Resource(
        uri=str(resource.uri),
        name=resource.name,
        title=resource.title,
        description=resource.description,
        mime_type=resource.mime_type,
        size=resource.size,
        server=server,
    )


def from_template(template: types.ResourceTemplate, server: str) -> ResourceTemplate:
    return ResourceTemplate(
        uri_template=template.uri_template,
        name=template.name,
        title=template.title,
        description=template.description,
        mime_type=template.mime_type,
        server=server,
    )


def from_contents(contents: Any) -> ResourceContents:
    if isinstance(contents, types.TextResourceContents):
        return ResourceContents(
            uri=str(contents.uri), mime_type=contents.mime_type, text=contents.text
        )
    return ResourceContents(
        uri=str(contents.uri), mime_type=contents.mime_type, blob=getattr(contents, "blob", "")
    )


def to_mcp_contents(contents: ResourceContents) -> Any:
    """The SDK's value for ours (what a served resource returns)."""
    if contents.text is not None:
        return types.TextResourceContents(
            uri=contents.uri, mime_type=contents.mime_type, text=contents.text
        )
    return types.BlobResourceContents(
        uri=contents.uri, mime_type=contents.mime_type, blob=contents.blob or ""
    )


def resource_blocks(
    contents: Sequence[ResourceContents], limits: ResultLimits
) -> tuple[list[ContentBlock], dict[str, Any] | None]:
    """Content blocks for a read resource (text, checked images, other binaries as
    ``Extension``), within ``limits``; and what was cut, or ``None``."""
    bounded = Bounded(limits)
    for part in contents:
        bounded.add_resource(to_mcp_contents(part))
    return bounded.finish(), bounded.report()


class ReadResourceTool(Tool):
    """The opt-in tool (``resource_tool=True`` on the spec) that reads a server's resources.

    Read-only; its result is the resource's content, bounded by the spec's limits.
    """

    read_only = True
    parameters = {  # noqa: RUF012 - the schema the model sees
        "type": "object",
        "properties": {"uri": {"type": "string", "description": "the resource's URI"}},
        "required": ["uri"],
        "additionalProperties": False,
    }

    def __init__(self, features: ServerFeatures, name: str, server: str) -> None:
        self._features = features
        self.name = name
        self.label = f"Read a resource of {server}"
        self.description = (
            f"Read a resource of the MCP server {server!r} by its URI: a URI one of its tools "
            "returned (shown as [resource: name <uri>]) or one it lists."
        )
        self.server = server
        self.mcp_name = "resources/read"

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        from ._errors import McpError

        uri = str(arguments["uri"])
        try:
            contents = await self._features.read_resource(uri)
        except McpError as exc:
            return AgentToolResult.error(str(exc), details={"server": self.server, "uri": uri})
        blocks, cut = resource_blocks(contents, self._features.spec.limits)
        details: dict[str, Any] = {"server": self.server, "uri": uri}
        if cut is not None:
            details["truncated"] = cut
        return AgentToolResult(content=blocks, details=details)
