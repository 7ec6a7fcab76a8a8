"""agentloop_mcp: tools from Model Context Protocol servers, supervised like every other child task.

=================  ==================================================================
name               what it is
=================  ==================================================================
``StdioServer``    a server run as a subprocess (environment allow-listed)
``HttpServer``     a server reached over streamable HTTP (headers, auth)
``ServerSpec``     either; a list of them decodes from JSON/TOML configuration
``open_toolset``   ``async with open_toolset(spec) as toolset``: one server
``open_group``     ``async with open_group() as group``: ``await group.connect``
``McpToolset``     one server's tools; pass it to ``Agent(toolsets=[...])``
``McpTool``        one of them, an ``agentloop.AgentTool``
``RestartPolicy``  how a crashed server is restarted (capped back-off)
``McpEvent``       what ``on_event`` is told: connected, crashed, restart failed, ...
``serve``          agentloop tools offered to other MCP clients (``build_server``)
``demo_server``    a tiny server to try: ``python -m agentloop_mcp.demo_server``
=================  ==================================================================

Built on the official ``mcp`` SDK; imports ``agentloop`` and nothing else of this project.
Runs on asyncio and trio (``serve`` over HTTP needs asyncio, for uvicorn).
"""

from agentloop import MissingExtra as _MissingExtra

_MissingExtra.check("agentloop_mcp", "mcp", "mcp")  # one clear line, not a deep ImportError

from ._config import (
    HttpServer as HttpServer,
    RestartPolicy as RestartPolicy,
    ServerSpec as ServerSpec,
    StdioServer as StdioServer,
)
from ._errors import (
    ConnectFailed as ConnectFailed,
    McpError as McpError,
    ToolsetClosed as ToolsetClosed,
)
from ._events import (
    McpEvent as McpEvent,
    ServerClosed as ServerClosed,
    ServerConnected as ServerConnected,
    ServerCrashed as ServerCrashed,
    ServerRestartFailed as ServerRestartFailed,
    ToolsChanged as ToolsChanged,
)
from ._group import (
    ToolsetGroup as ToolsetGroup,
    open_group as open_group,
    open_toolset as open_toolset,
)
from ._serve import build_server as build_server, serve as serve
from ._tool import McpTool as McpTool
from ._toolset import McpToolset as McpToolset

__all__ = [
    "ConnectFailed",
    "HttpServer",
    "McpError",
    "McpEvent",
    "McpTool",
    "McpToolset",
    "RestartPolicy",
    "ServerClosed",
    "ServerConnected",
    "ServerCrashed",
    "ServerRestartFailed",
    "ServerSpec",
    "StdioServer",
    "ToolsChanged",
    "ToolsetClosed",
    "ToolsetGroup",
    "build_server",
    "open_group",
    "open_toolset",
    "serve",
]
