"""What a server announces: list changes, resource updates, finished elicitations, roots.

``McpToolset`` inherits these. The SDK hands every notification to ``_on_message`` (a task of
its own per notification); a tool list change is acted on in the owner's ``_refresh_on_change``
task, so a listing never runs inside the SDK's receive loop. 2026-era servers announce changes
over a ``subscriptions/listen`` stream instead, held open by ``_listen``; losing it is losing
the connection.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.lowlevel
from mcp import types
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ._connection import Connection, describe, list_all_tools, single_exception
from ._errors import RequestFailed, ServerUnavailable
from ._events import ElicitationCompleted, ListChanged, McpEvent, ResourceUpdated, ToolsChanged
from ._features import ServerFeatures
from ._tool import McpTool, build_tools

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from anyio.abc import ObjectReceiveStream, TaskStatus

    from agentloop import AgentTool

    from ._roots import Roots
    from ._toolset import McpToolset

__all__ = ["ChangeWatcher"]

log = logging.getLogger("agentloop.mcp")

_UPDATES_BUFFER = 16  # an update only says "read again": a few waiting are as good as many


class ChangeWatcher(ServerFeatures):
    """The notification side of ``McpToolset``."""

    _stale: bool
    _refresh_wanted: anyio.Event
    _refreshed: anyio.Event
    _roots: Roots | None
    _tools: tuple[AgentTool, ...]
    _resource_tool: AgentTool | None
    _connections: int

    if TYPE_CHECKING:  # McpToolset's

        def _emit(self, event: McpEvent) -> None: ...

    def _set_tools(self, listed: Sequence[types.Tool]) -> None:
        old = tuple(t for t in self._tools if isinstance(t, McpTool))
        new: tuple[AgentTool, ...] = build_tools(cast("McpToolset", self), self.spec, listed, old)
        if self._resource_tool is not None:
            new = (*new, self._resource_tool)
        if new == self._tools:
            return
        before = {t.name for t in self._tools}
        after = {t.name for t in new}
        self._tools = new
        if self._connections:
            self._emit(
                ToolsChanged(
                    server=self.name, added=sorted(after - before), removed=sorted(before - after)
                )
            )

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

    # ------------------------------------------------------------------ resource subscriptions

    @asynccontextmanager
    async def watch_resource(self, uri: str) -> AsyncIterator[ObjectReceiveStream[ResourceUpdated]]:
        """Subscribe to changes of the resource at ``uri`` for the length of the block.

        ::

            async with toolset.watch_resource("file:///notes.md") as updates:
                async for update in updates:
                    print(await toolset.read_resource(update.uri))

        Handshake-era servers get ``resources/subscribe`` (and ``unsubscribe`` at the end);
        2026-era servers a ``subscriptions/listen`` stream held open by the block. Either is
        renewed after a reconnection. Updates are also told as ``ResourceUpdated`` events.

        Raises:
            RequestFailed: the server does not offer subscriptions, or refused this one.
            ServerUnavailable: no live connection.
        """
        conn = await self._wait_connected()
        if conn is None:
            raise ServerUnavailable(self.name, self._down_reason())
        modern = conn.client.protocol_version in MODERN_PROTOCOL_VERSIONS
        caps = conn.client.server_capabilities.resources
        if caps is None or not caps.subscribe:
            raise RequestFailed(
                self.name, "resources/subscribe", None, "the server offers no subscriptions"
            )
        send, receive = anyio.create_memory_object_stream[ResourceUpdated](_UPDATES_BUFFER)
        watchers = self._watchers.setdefault(uri, set())
        first = not watchers
        watchers.add(send)
        try:
            try:
                async with anyio.create_task_group() as tg:
                    if modern:
                        await tg.start(self._hold_listen, uri)
                    elif first:
                        await self._subscribe(uri, subscribe=True)
                    with receive:
                        yield receive
                    tg.cancel_scope.cancel()
            except BaseExceptionGroup as group:
                # The task group is ours: what escapes is the one real failure, as itself.
                error = single_exception(group)
                if error is group:
                    raise
                raise error from error.__cause__
        finally:
            watchers.discard(send)
            send.close()
            receive.close()
            if not watchers:
                self._watchers.pop(uri, None)
                if not modern:
                    with anyio.move_on_after(self.spec.request_timeout, shield=True):
                        try:
                            await self._subscribe(uri, subscribe=False)
                        except (ServerUnavailable, RequestFailed):
                            pass  # the server is gone or forgot it: nothing left to undo

    async def _hold_listen(
        self, uri: str, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Keep a ``subscriptions/listen`` stream for ``uri`` open, renewed on each new
        connection (its events reach ``_on_message``, the SDK tees them)."""
        started = False
        while True:
            conn = await self._wait_connected()
            if conn is None:
                if not started:
                    raise ServerUnavailable(self.name, self._down_reason())
                return
            try:
                async with conn.client.listen(resource_subscriptions=[uri]) as subscription:
                    honored = subscription.honored.resource_subscriptions or []
                    if uri not in honored:
                        raise RequestFailed(
                            self.name, "subscriptions/listen", None, f"the server refused {uri}"
                        )
                    if not started:
                        started = True
                        task_status.started()
                    async for _ in subscription:
                        pass
            except (MCPError, SubscriptionLost, TimeoutError) as exc:
                if not started:
                    raise RequestFailed(
                        self.name, "subscriptions/listen", getattr(exc, "code", None), str(exc)
                    ) from None
            await conn.ended.wait()

    async def _subscribe(self, uri: str, *, subscribe: bool) -> None:
        caps = self._capabilities()
        if caps is None or caps.resources is None or not caps.resources.subscribe:
            raise RequestFailed(
                self.name, "resources/subscribe", None, "the server offers no subscriptions"
            )
        request: Any = (
            types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
            if subscribe
            else types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
        )

        async def send(conn: Connection) -> None:
            # Sent as the request itself: the SDK's helpers warn (they are handshake-era only).
            await conn.client.session.send_request(request, types.EmptyResult)

        await self._request(request.method, send)

    def _resource_updated(self, uri: str) -> None:
        event = ResourceUpdated(server=self.name, uri=uri)
        for send in list(self._watchers.get(uri, ())):
            try:
                send.send_nowait(event)
            except anyio.WouldBlock:
                pass  # an update is a signal to read again: one waiting is enough
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._watchers.get(uri, set()).discard(send)

    # ------------------------------------------------------------------ tool list changes

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
