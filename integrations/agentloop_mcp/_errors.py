"""The errors this package raises. Tool calls never raise them: a failed call is an error result.

::

    agentloop.AgentError
    └── McpError               base of this package's errors
        ├── ConnectFailed      the first connection to a server failed or timed out
        ├── ToolsetClosed      connect() on a group that is closed (or closing)
        ├── ServerUnavailable  a request found no live connection (closed, given up, timed out)
        ├── RequestFailed      the server answered a request (read, get prompt, ...) with an error
        └── PromptArgumentError  a prompt's arguments do not match what the prompt declares
"""

from __future__ import annotations

from agentloop import AgentError

__all__ = [
    "ConnectFailed",
    "McpError",
    "PromptArgumentError",
    "RequestFailed",
    "ServerUnavailable",
    "ToolsetClosed",
]


class McpError(AgentError):
    """Base class of the MCP integration's errors."""


class ConnectFailed(McpError):
    """The first connection to a server failed or timed out; nothing of it is left running.

    Attributes:
        server: the server's name.
        reason: what went wrong, in words.
    """

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"could not connect to MCP server {server!r}: {reason}")
        self.server = server
        self.reason = reason


class ToolsetClosed(McpError):
    """A group was asked to connect a server after it was closed."""


class ServerUnavailable(McpError):
    """A request (not a tool call) found no live connection to the server.

    Attributes:
        server: the server's name.
        reason: why, in words.
    """

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"MCP server {server!r} is unavailable: {reason}")
        self.server = server
        self.reason = reason


class RequestFailed(McpError):
    """The server answered a request with an error, or the request timed out.

    Attributes:
        server: the server's name.
        method: the MCP method (``resources/read``, ``prompts/get``, ...).
        code: the JSON-RPC error code (``None`` for a timeout or a malformed answer).
        message: the server's message.
    """

    def __init__(self, server: str, method: str, code: int | None, message: str) -> None:
        where = f" (code {code})" if code is not None else ""
        super().__init__(f"MCP server {server!r} failed {method}: {message}{where}")
        self.server = server
        self.method = method
        self.code = code
        self.message = message


class PromptArgumentError(McpError, ValueError):
    """A prompt's arguments do not match what the prompt declares (nothing was sent).

    Attributes:
        prompt: the prompt's name.
    """

    def __init__(self, prompt: str, reason: str) -> None:
        super().__init__(f"invalid arguments for prompt {prompt!r}: {reason}")
        self.prompt = prompt
