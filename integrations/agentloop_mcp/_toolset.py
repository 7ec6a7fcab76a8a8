"""A connection to one MCP server, kept by an owner task, offered to agents as a ``Toolset``.

The SDK's client holds task groups and cancel scopes that must be entered and left by the same
task. So one task owns each connection: it connects, lists the tools, watches for changes and
for the end of the connection, reconnects after a crash, and disconnects, all inside a task
group of ours (``ToolsetGroup``). Other tasks never enter or leave anything of the SDK's: a tool
call sends its request through the owner's live client and waits for the answer, and closing
only asks the owner to stop and waits until it has. So a toolset can be opened in one task and
closed in another, several can be closed in any order, and cancelling from outside cancels the
owners, whose exits stop their servers (shielded and bounded in the SDK).

Crashes. When the server's messages end (its process exited, its HTTP stream broke) the owner
marks the connection lost at once; calls in flight on it end as error results straight away,
and the owner reconnects after the ``RestartPolicy``'s wait. A call made while the server is
down waits for it at most ``connect_timeout`` seconds. A call in flight when the server crashed
is not sent again, since the server may have done part of it, unless the tool is annotated
read-only or idempotent: then it is retried once on the new connection.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any, Literal

import anyio
from mcp import Client, types

from agentloop import AgentTool, AgentToolResult, Text, current_tool_context

from ._changes import ChangeWatcher
from ._config import ServerSpec, server_name
from ._connection import Connection, Lost, describe, list_all_tools, uses_listen
from ._errors import ConnectFailed
from ._events import (
    McpEvent,
    ServerClosed,
    ServerConnected,
    ServerCrashed,
    ServerRestartFailed,
)
from ._handlers import ClientHandlers
from ._resources import ReadResourceTool
from ._tool import McpTool, agent_name, to_agent_result
from ._transport import open_transport

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from anyio.abc import TaskStatus

    from agentloop.abc import OnUpdate

    from ._elicitation import ElicitationCallback
    from ._roots import Roots
    from ._sampling import Sampler

__all__ = ["McpToolset", "State"]

log = logging.getLogger("agentloop.mcp")

State = Literal["connecting", "connected", "restarting", "failed", "closed"]

_CLIENT_INFO = types.Implementation(name="agentloop", version="0.1")
_REFRESH_WAIT = 5.0  # how long a call waits for a tool list change it announced
_CLOSE_GRACE = 5.0  # how long a server may take to acknowledge the end of a session
_LEVELS = {ServerCrashed: logging.WARNING, ServerRestartFailed: logging.WARNING}


class McpToolset(ChangeWatcher):
    """One MCP server: its tools (pass it to ``Agent(toolsets=[...])``), resources, prompts.

    Made by ``ToolsetGroup.connect`` or ``open_toolset``, never directly. ``get_tools()``
    returns the current tools without waiting (the same tuple while nothing changed); the owner
    task refreshes them when the server announces a change, so an agent sees the new set at its
    next turn. Resources, prompts, completions, ``ping`` and ``set_log_level`` are methods
    (see ``ServerFeatures``); what the server asks of the client (sampling, elicitation, roots)
    goes to what ``connect`` was given.

    Attributes:
        spec: how the server is reached.
        name: the server's name (in events, errors and results).
    """

    def __init__(
        self,
        spec: ServerSpec,
        *,
        on_event: Callable[[McpEvent], None] | None,
        sampling: Sampler | None = None,
        elicitation: ElicitationCallback | None = None,
        roots: Roots | None = None,
    ) -> None:
        self.spec = spec
        self.name = server_name(spec)
        self._handlers = ClientHandlers(
            self.name,
            spec,
            self._emit,
            sampling=sampling,
            elicitation=elicitation,
            roots=roots,
            log_level=lambda: self._log_level,
        )
        self._roots = roots
        self._log_level = spec.log_level
        self._watchers = {}
        self._prompts = None
        self._resource_tool = (
            ReadResourceTool(self, agent_name(spec.prefix, "read_resource"), self.name)
            if spec.resource_tool
            else None
        )
        self._connections = 0
        self._connected_at = 0.0
        self._on_event = on_event
        self._tools: tuple[AgentTool, ...] = ()
        self._state: State = "connecting"
        self._conn: Connection | None = None
        self._reason: str | None = None
        self._changed = anyio.Event()
        self._closing = False
        self._finished = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._refresh_wanted = anyio.Event()
        self._stale = False
        self._refreshed = anyio.Event()
        self._protocol_version = ""

    # ------------------------------------------------------------------ public surface

    @property
    def state(self) -> State:
        """``connecting``, ``connected``, ``restarting``, ``failed`` (gave up) or ``closed``."""
        return self._state

    @property
    def protocol_version(self) -> str:
        """The MCP protocol version of the current (or last) connection."""
        return self._protocol_version

    def get_tools(self) -> Sequence[AgentTool]:
        """The tools offered now (empty once closed)."""
        return self._tools

    async def aclose(self) -> None:
        """Stop the server and wait until it has stopped; callable from any task.

        Calls in flight end as error results. Closing twice is harmless.
        """
        self.request_close()
        with anyio.CancelScope(shield=True):
            await self._finished.wait()

    def request_close(self) -> None:
        """Ask the owner task to stop the server, without waiting."""
        if self._closing:
            return
        self._closing = True
        if self._conn is not None:
            self._conn.end(f"the toolset {self.name!r} was closed")
        elif self._scope is not None:
            self._scope.cancel()
        self._notify_state()

    def __repr__(self) -> str:
        return f"<McpToolset {self.name} {self._state}, {len(self._tools)} tools>"

    # ------------------------------------------------------------------ calls

    async def call(self, tool: McpTool, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        """Run ``tool`` on the server; every failure comes back as an error result."""
        # While the call runs, what the server asks of the client (sampling) is counted into
        # the run that made it.
        context = current_tool_context()
        calls = self._handlers.calls
        if context is not None:
            calls.append(context)
        try:
            return await self._call(tool, arguments, on_update)
        finally:
            if context is not None:
                calls.remove(context)

    async def _call(self, tool: McpTool, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        retries = 1 if tool.idempotent else 0
        sent_to_urls = False
        while True:
            conn = await self._wait_connected()
            if conn is None:
                return self._unavailable(tool)
            outcome = await conn.call(
                tool, arguments, on_update, self.spec.call_timeout, self._log_level
            )
            if isinstance(outcome, types.CallToolResult):
                # A change notification the server sent before this result has its handler
                # task scheduled already (the SDK spawns one per notification): let it run.
                await anyio.lowlevel.checkpoint()
                if self._stale:
                    # The tool list changed during the call: let the next turn see the new one.
                    refreshed = self._refreshed
                    with anyio.move_on_after(_REFRESH_WAIT):
                        await refreshed.wait()
                return to_agent_result(
                    outcome, server=self.name, tool=tool.mcp_name, limits=self.spec.limits
                )
            if not isinstance(outcome, Lost):
                if not sent_to_urls and await self._handlers.visit_urls(outcome):
                    # The user agreed to complete what the server asked for first: once more.
                    sent_to_urls = True
                    continue
                return outcome
            if retries == 0 or self._closing:
                return AgentToolResult.error(
                    f"MCP server {self.name!r} failed during the call to {tool.mcp_name!r} "
                    f"({outcome.reason}); the call was not repeated",
                    details={"server": self.name, "tool": tool.mcp_name, "crash": outcome.reason},
                )
            retries -= 1
            on_update(
                AgentToolResult(
                    content=[
                        Text(
                            text=f"MCP server {self.name!r} failed ({outcome.reason}); the "
                            f"{'read-only' if tool.read_only else 'idempotent'} call is "
                            "repeated once the server is back"
                        )
                    ],
                    details={"server": self.name, "crash": outcome.reason, "retrying": True},
                )
            )

    async def _wait_connected(self) -> Connection | None:
        """The live connection, waiting up to ``connect_timeout`` for one; ``None`` if none."""
        with anyio.move_on_after(self.spec.connect_timeout):
            while True:
                conn = self._conn
                if conn is not None and not conn.lost:
                    return conn
                if self._state in ("failed", "closed") or self._closing:
                    return None
                await self._changed.wait()
        return None

    def _down_reason(self) -> str:
        if self._closing or self._state == "closed":
            return "the toolset is closed"
        if self._state == "failed":
            return f"it stopped restarting after: {self._reason}"
        return f"it did not come back within {self.spec.connect_timeout:g} s ({self._reason})"

    def _unavailable(self, tool: McpTool) -> AgentToolResult:
        why = self._down_reason()
        return AgentToolResult.error(
            f"MCP server {self.name!r} is unavailable for {tool.mcp_name!r}: {why}",
            details={"server": self.name, "tool": tool.mcp_name, "unavailable": why},
        )

    # ------------------------------------------------------------------ the owner task

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The owner task: connect, serve, reconnect after losses, disconnect on close.

        Reports started once the first connection is up.

        Raises:
            ConnectFailed: the first connection failed (raised before reporting started).
        """
        try:
            connected, reason = await self._connection(task_status)
            if not connected:
                raise ConnectFailed(self.name, reason or "closed while connecting")
            await self._supervise(reason)
        finally:
            self._conn = None
            self._tools = ()
            self._state = "closed"
            self._notify_state()
            self._finished.set()
            if self._connections:
                self._emit(ServerClosed(server=self.name))

    async def _supervise(self, reason: str | None) -> None:
        """After the first connection ended: restart as the policy says, until closed."""
        policy = self.spec.restart
        connected = True
        attempt = 0  # restarts since the last connection that lasted
        while not self._closing:
            lived = anyio.current_time() - self._connected_at
            if connected and policy is not None and lived >= policy.reset_after:
                attempt = 0
            give_up = policy is None or (
                policy.max_attempts is not None and attempt >= policy.max_attempts
            )
            delay = None if policy is None or give_up else policy.delay(attempt)
            why = reason or "unknown"
            if connected:
                self._emit(ServerCrashed(server=self.name, reason=why, restart_in=delay))
            else:
                self._emit(
                    ServerRestartFailed(
                        server=self.name, reason=why, attempt=attempt, retry_in=delay
                    )
                )
            self._reason = why
            if delay is None:
                self._fail(why)
                with anyio.CancelScope() as self._scope:
                    await anyio.sleep_forever()
                return
            self._state = "restarting"
            self._notify_state()
            with anyio.CancelScope() as self._scope, anyio.move_on_after(delay):
                await anyio.sleep_forever()
            if self._closing:
                return
            attempt += 1
            connected, reason = await self._connection(None)

    def _fail(self, reason: str) -> None:
        self._state = "failed"
        self._tools = ()
        self._notify_state()

    async def _connection(self, task_status: TaskStatus[None] | None) -> tuple[bool, str | None]:
        """Connect, serve until the connection ends, disconnect.

        Returns whether it connected, and why it ended (or failed). Reports ``task_status``
        started once connected. Raises nothing but cancellation.
        """
        conn: Connection | None = None
        connected = False
        timeout = self.spec.connect_timeout

        def on_end() -> None:
            if conn is not None:
                conn.end("the server's message stream ended (the server exited)")

        try:
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
                self._scope = scope
                if self._closing:
                    scope.cancel()
                client = Client(
                    open_transport(self.spec, on_end),
                    mode=self.spec.mode,
                    cache=None,
                    message_handler=self._on_message,
                    client_info=_CLIENT_INFO,
                    **self._handlers.client_options(),
                )
                async with client, anyio.create_task_group() as tg:
                    conn = Connection(client)
                    if uses_listen(client):
                        # Subscribed before listing: no change can fall between the two.
                        await tg.start(self._listen, conn)
                    listed = await list_all_tools(client)
                    # Before it is in use, within the connect timeout (and cancelled by a close).
                    await self._restore(conn)
                    scope.deadline = math.inf
                    self._install(conn, client, listed)
                    connected = True
                    if task_status is not None:
                        task_status.started()
                    tg.start_soon(self._refresh_on_change, conn)
                    tg.start_soon(self._announce_roots, conn)
                    await conn.ended.wait()
                    # Calls in flight end now, not after the SDK's shutdown of the server.
                    self._retire(conn)
                    tg.cancel_scope.cancel()
                    # Saying goodbye (an HTTP session's DELETE) may take this long, no longer;
                    # a stdio server's stop is bounded by the SDK itself, shielded.
                    scope.deadline = anyio.current_time() + _CLOSE_GRACE
            if not connected:
                if self._closing:
                    return False, "closed while connecting"
                return False, f"timed out after {timeout:g} s"
        except Exception as exc:
            if not connected:
                return False, describe(exc)
            assert conn is not None
            conn.end(describe(exc))
        finally:
            self._scope = None
            if conn is not None:
                self._retire(conn)
        assert conn is not None
        return True, conn.reason

    def _retire(self, conn: Connection) -> None:
        """Take a finished connection out of use and end the calls still waiting on it."""
        conn.end("the connection was closed")
        if self._conn is conn:
            self._conn = None
            self._notify_state()
        conn.cancel_calls()
        self._stale = False
        self._refreshed.set()
        self._refreshed = anyio.Event()

    def _install(self, conn: Connection, client: Client, listed: Sequence[types.Tool]) -> None:
        self._protocol_version = client.protocol_version
        self._set_tools(listed)
        self._conn = conn
        self._connected_at = conn.started
        self._connections += 1
        self._state = "connected"
        self._reason = None
        self._notify_state()
        self._emit(
            ServerConnected(
                server=self.name,
                restarts=self.restarts,
                protocol_version=client.protocol_version,
                tools=len(self._tools),
            )
        )

    @property
    def restarts(self) -> int:
        """How many times the connection was re-established after a loss."""
        return max(0, self._connections - 1)

    # ------------------------------------------------------------------ events

    def _notify_state(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def _emit(self, event: McpEvent) -> None:
        log.log(_LEVELS.get(type(event), logging.INFO), "MCP %s", event)
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:
            log.exception("the on_event callback raised for %r", event)
