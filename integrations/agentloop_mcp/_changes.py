"""What a server announces: list changes, resource updates, finished elicitations, roots.

``McpToolset`` inherits these. The SDK hands every notification to ``_on_message`` (a task of
its own per notification); a tool list change is acted on in the owner's ``_refresh_on_change``
task, so a listing never runs inside the SDK's receive loop. 2026-era servers announce changes
over a ``subscriptions/listen`` stream instead, held open by ``_listen``; losing it is losing
the connection.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
from mcp import types
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError

from ._connection import Connection, describe, list_all_tools
from ._events import ElicitationCompleted, ListChanged, McpEvent, ResourceUpdated
from ._features import ServerFeatures

if TYPE_CHECKING:
    from collections.abc import Sequence

    from anyio.abc import TaskStatus

    from ._roots import Roots

__all__ = ["ChangeWatcher"]

log = logging.getLogger("agentloop.mcp")


class ChangeWatcher(ServerFeatures):
    """The notification side of ``McpToolset``."""

    _stale: bool
    _refresh_wanted: anyio.Event
    _refreshed: anyio.Event
    _roots: Roots | None

    if TYPE_CHECKING:  # McpToolset's

        def _set_tools(self, listed: Sequence[types.Tool]) -> None: ...

        def _emit(self, event: McpEvent) -> None: ...

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._stale = True
            self._refresh_wanted.set()
        elif isinstance(message, types.ResourceUpdatedNotification):
            uri = str(message.params.uri)
            self._resource_updated(uri)
            self._emit(ResourceUpdated(server=self.name, uri=uri))
        elif isinstance(message, types.ResourceListChangedNotification):
            self._emit(ListChanged(server=self.name, kind="resources"))
        elif isinstance(message, types.PromptListChangedNotification):
            self._prompts = None
            self._emit(ListChanged(server=self.name, kind="prompts"))
        elif isinstance(message, types.ElicitCompleteNotification):
            self._emit(
                ElicitationCompleted(server=self.name, elicitation_id=message.params.elicitation_id)
            )
        await anyio.lowlevel.checkpoint()

    async def _refresh_on_change(self, conn: Connection) -> None:
        while True:
            await self._refresh_wanted.wait()
            self._refresh_wanted = anyio.Event()
            try:
                listed = await list_all_tools(conn.client)
            except Exception as exc:
                log.warning("MCP server %s: listing the changed tools failed: %r", self.name, exc)
                if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
                    conn.end("the connection closed")
                    return
                listed = None
            if listed is not None:
                self._set_tools(listed)
            if not self._refresh_wanted.is_set():
                self._stale = False
                self._refreshed.set()
                self._refreshed = anyio.Event()

    async def _listen(
        self, conn: Connection, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold a change subscription open (started once acknowledged); losing it is losing
        the connection. A server that refuses it is used without one."""
        caps = conn.client.server_capabilities
        acknowledged = False
        try:
            async with conn.client.listen(
                tools_list_changed=True,
                prompts_list_changed=bool(caps.prompts and caps.prompts.list_changed),
                resources_list_changed=bool(caps.resources and caps.resources.list_changed),
            ) as subscription:
                acknowledged = True
                task_status.started()
                # The events also reach ``_on_message`` (the SDK tees them): only tools here.
                async for _ in subscription:
                    self._stale = True
                    self._refresh_wanted.set()
        except Exception as exc:
            if not acknowledged:
                if not isinstance(exc, ListenNotSupportedError):
                    log.info("MCP server %s refused a change subscription: %r", self.name, exc)
                task_status.started()
                return
            conn.end(f"the change subscription was lost ({describe(exc)})")
            return
        # The server ended the subscription on purpose (shutting down, shedding load).
        conn.end("the server ended the change subscription")

    async def _restore(self, conn: Connection) -> None:
        """Renew on a new connection what the last one had: log level, subscriptions."""
        if self._log_level is not None:
            try:
                await self._send_log_level(conn, self._log_level)
            except Exception as exc:
                log.info("MCP server %s refused the log level: %s", self.name, describe(exc))
        for uri in list(self._watchers):
            try:
                await conn.client.session.send_request(
                    types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)),
                    types.EmptyResult,
                )
            except Exception as exc:
                log.warning(
                    "MCP server %s: renewing the subscription to %s failed: %s",
                    self.name,
                    uri,
                    describe(exc),
                )

    async def _announce_roots(self, conn: Connection) -> None:
        """Tell the server each time the roots change (handshake-era connections)."""
        roots = self._roots
        if roots is None or conn.client.protocol_version >= "2026":
            return
        changed = anyio.Event()

        def wake() -> None:
            nonlocal changed
            changed.set()

        stop = roots.listen(wake)
        try:
            while True:
                await changed.wait()
                changed = anyio.Event()
                try:
                    await conn.client.session.send_notification(
                        types.RootsListChangedNotification()
                    )
                except Exception as exc:
                    log.info("MCP server %s: roots change not sent: %s", self.name, describe(exc))
        finally:
            stop()
