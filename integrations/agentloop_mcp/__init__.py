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
``ResultLimits``   bounds on what one result may bring into history (text, blocks, images)
``McpEvent``       what ``on_event`` is told: connected, crashed, logs, list changes, ...
``Resource``       a server's resource (``list_resources``, ``read_resource``, templates)
``Prompt``         a server's prompt (``get_prompt`` renders it; ``PromptCommand``)
``Sampler``        answers servers' sampling requests with a model, under approval
``Elicitation*``   a server's question to the user, and the answer (callback; headless)
``Roots``          the roots offered to servers, kept current
``serve``          agentloop tools, resources and prompts offered to MCP clients
``demo_server``    a tiny server to try: ``python -m agentloop_mcp.demo_server``
=================  ==================================================================

Built on the official ``mcp`` SDK; imports ``agentloop`` and nothing else of this project.
Runs on asyncio and trio (``serve`` over HTTP needs asyncio, for uvicorn).
"""

from agentloop import MissingExtra as _MissingExtra

_MissingExtra.check("agentloop_mcp", "mcp", "mcp")  # one clear line, not a deep ImportError

from ._config import (
    HttpServer as HttpServer,
    LogLevel as LogLevel,
    RestartPolicy as RestartPolicy,
    ServerSpec as ServerSpec,
    StdioServer as StdioServer,
)
from ._content import ResultLimits as ResultLimits
from ._elicitation import (
    ElicitationCallback as ElicitationCallback,
    ElicitationRequest as ElicitationRequest,
    ElicitationResponse as ElicitationResponse,
)
from ._errors import (
    ConnectFailed as ConnectFailed,
    McpError as McpError,
    PromptArgumentError as PromptArgumentError,
    RequestFailed as RequestFailed,
    ServerUnavailable as ServerUnavailable,
    ToolsetClosed as ToolsetClosed,
)
from ._events import (
    ElicitationAnswered as ElicitationAnswered,
    ElicitationCompleted as ElicitationCompleted,
    ListChanged as ListChanged,
    McpEvent as McpEvent,
    ResourceUpdated as ResourceUpdated,
    SamplingAnswered as SamplingAnswered,
    ServerClosed as ServerClosed,
    ServerConnected as ServerConnected,
    ServerCrashed as ServerCrashed,
    ServerLog as ServerLog,
    ServerRestartFailed as ServerRestartFailed,
    ToolsChanged as ToolsChanged,
)
from ._group import (
    ToolsetGroup as ToolsetGroup,
    open_group as open_group,
    open_toolset as open_toolset,
)
from ._prompts import (
    Prompt as Prompt,
    PromptArgument as PromptArgument,
    PromptCommand as PromptCommand,
    RenderedPrompt as RenderedPrompt,
)
from ._resources import (
    Resource as Resource,
    ResourceContents as ResourceContents,
    ResourceTemplate as ResourceTemplate,
)
from ._roots import Root as Root, Roots as Roots
from ._sampling import (
    ModelPreferences as ModelPreferences,
    Sampler as Sampler,
    SamplingRequest as SamplingRequest,
)
from ._serve import build_server as build_server, serve as serve
from ._serve_client import (
    InputRequired as InputRequired,
    MissingCapability as MissingCapability,
    ServedClient as ServedClient,
    current_client as current_client,
)
from ._served import (
    ServedPrompt as ServedPrompt,
    ServedResource as ServedResource,
    prompt as prompt,
    resource as resource,
)
from ._tool import McpTool as McpTool
from ._toolset import McpToolset as McpToolset

__all__ = [
    "ConnectFailed",
    "ElicitationAnswered",
    "ElicitationCallback",
    "ElicitationCompleted",
    "ElicitationRequest",
    "ElicitationResponse",
    "HttpServer",
    "InputRequired",
    "ListChanged",
    "LogLevel",
    "McpError",
    "McpEvent",
    "McpTool",
    "McpToolset",
    "MissingCapability",
    "ModelPreferences",
    "Prompt",
    "PromptArgument",
    "PromptArgumentError",
    "PromptCommand",
    "RenderedPrompt",
    "RequestFailed",
    "Resource",
    "ResourceContents",
    "ResourceTemplate",
    "ResourceUpdated",
    "RestartPolicy",
    "ResultLimits",
    "Root",
    "Roots",
    "Sampler",
    "SamplingAnswered",
    "SamplingRequest",
    "ServedClient",
    "ServedPrompt",
    "ServedResource",
    "ServerClosed",
    "ServerConnected",
    "ServerCrashed",
    "ServerLog",
    "ServerRestartFailed",
    "ServerSpec",
    "ServerUnavailable",
    "StdioServer",
    "ToolsChanged",
    "ToolsetClosed",
    "ToolsetGroup",
    "build_server",
    "current_client",
    "open_group",
    "open_toolset",
    "prompt",
    "resource",
    "serve",
]
