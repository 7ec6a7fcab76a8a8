"""What happens to a server connection, told to the ``on_event`` callback.

A toolset reports its connection's life here because much of it happens outside any tool call
(a server dies between turns, or while no agent runs at all), where no agent event stream could
carry it. A crash during a call is told twice: here, and in that call's error result, whose
``details`` hold the reason, so the agent's own events show it too.

The callback is called on the event loop's thread; it must not block. An exception it raises is
logged and ignored. Every event is also logged on the ``agentloop.mcp`` logger.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec

from agentloop import Usage

__all__ = [
    "ElicitationAnswered",
    "ElicitationCompleted",
    "ListChanged",
    "McpEvent",
    "ResourceUpdated",
    "SamplingAnswered",
    "ServerClosed",
    "ServerConnected",
    "ServerCrashed",
    "ServerLog",
    "ServerRestartFailed",
    "ToolsChanged",
]


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    server: str


class ServerConnected(_Event, frozen=True, kw_only=True, tag="server_connected"):
    """A connection is up and its tools are listed; ``restarts`` is 0 for the first one."""

    restarts: int
    protocol_version: str
    tools: int


class ServerCrashed(_Event, frozen=True, kw_only=True, tag="server_crashed"):
    """The connection was lost (the process exited, the HTTP connection broke).

    ``restart_in`` is the wait before the restart, ``None`` when there will be none.
    """

    reason: str
    restart_in: float | None


class ServerRestartFailed(_Event, frozen=True, kw_only=True, tag="server_restart_failed"):
    """Restart number ``attempt`` (from 1) failed; ``retry_in`` is ``None`` after the last."""

    reason: str
    attempt: int
    retry_in: float | None


class ToolsChanged(_Event, frozen=True, kw_only=True, tag="tools_changed"):
    """The server's tool list changed; names are those the model sees."""

    added: list[str]
    removed: list[str]


class ServerClosed(_Event, frozen=True, kw_only=True, tag="server_closed"):
    """The toolset was closed and its server stopped."""


class ServerLog(_Event, frozen=True, kw_only=True, tag="server_log"):
    """A log message of the server (``notifications/message``); also logged on
    ``agentloop.mcp.server.<server>`` at the matching level."""

    level: str
    logger: str | None
    data: Any


class ListChanged(_Event, frozen=True, kw_only=True, tag="list_changed"):
    """The server's resources or prompts changed (list them again to see how)."""

    kind: Literal["resources", "prompts"]


class ResourceUpdated(_Event, frozen=True, kw_only=True, tag="resource_updated"):
    """A resource this client subscribed to changed (read it again to see how)."""

    uri: str


class SamplingAnswered(_Event, frozen=True, kw_only=True, tag="sampling_answered"):
    """The server asked this client's model for a message (``sampling/createMessage``).

    ``model`` is the model that answered (empty when none did), ``refused`` why the request
    was not answered (``None`` when it was), ``usage`` what the answer spent.
    """

    model: str
    refused: str | None
    usage: Usage | None


class ElicitationAnswered(_Event, frozen=True, kw_only=True, tag="elicitation_answered"):
    """The server asked the user something (``elicitation/create``); ``action`` is the
    answer (``accept``, ``decline`` or ``cancel``), ``reason`` why it was declined."""

    mode: Literal["form", "url"]
    action: str
    reason: str | None


class ElicitationCompleted(_Event, frozen=True, kw_only=True, tag="elicitation_completed"):
    """The server says a URL-mode elicitation finished (the user completed it out of band)."""

    elicitation_id: str


McpEvent: TypeAlias = (
    ServerConnected
    | ServerCrashed
    | ServerRestartFailed
    | ToolsChanged
    | ServerClosed
    | ServerLog
    | ListChanged
    | ResourceUpdated
    | SamplingAnswered
    | ElicitationAnswered
    | ElicitationCompleted
)
"""Any event a toolset reports about its servers (``on_event``)."""
