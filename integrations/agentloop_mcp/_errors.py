"""The errors this package raises. Tool calls never raise them: a failed call is an error result.

::

    agentloop.AgentError
    └── McpError               base of this package's errors
        ├── ConnectFailed      the first connection to a server failed or timed out
        └── ToolsetClosed      connect() on a group that is closed (or closing)
"""

from __future__ import annotations

from agentloop import AgentError

__all__ = ["ConnectFailed", "McpError", "ToolsetClosed"]


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
