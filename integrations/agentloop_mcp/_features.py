"""What a toolset asks of its server besides tool calls: resources, prompts, completions, ping,
log levels. ``McpToolset`` inherits these methods.

Each request waits for a live connection (at most ``connect_timeout``), is bounded by the spec's
``request_timeout``, and raises a typed error: ``ServerUnavailable`` when there is no
connection, ``RequestFailed`` when the server answers with an error (or not in time). Listings
follow pages up to a hundred.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from mcp import types
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from agentloop import AgentToolResult, ContentBlock, Text, UserMessage

from ._errors import PromptArgumentError, RequestFailed, ServerUnavailable
from ._prompts import Prompt, PromptCommand, RenderedPrompt, from_prompt, render, validate
from ._resources import (
    Resource,
    ResourceContents,
    ResourceTemplate,
    from_contents,
    from_resource,
    from_template,
    resource_blocks,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    from anyio.streams.memory import MemoryObjectSendStream

    from ._config import LogLevel, ServerSpec
    from ._connection import Connection
    from ._events import ResourceUpdated

__all__ = ["ServerFeatures"]

T = TypeVar("T")
_MAX_PAGES = 100
_UPDATES_BUFFER = 16


class ServerFeatures:
    """Resources, prompts, completions, ping and logging of one server (``McpToolset``'s)."""

    name: str
    spec: ServerSpec
    _log_level: LogLevel | None
    _watchers: dict[str, set[MemoryObjectSendStream[ResourceUpdated]]]
    _prompts: dict[str, Prompt] | None

    _conn: Connection | None

    if TYPE_CHECKING:  # McpToolset's

        async def _wait_connected(self) -> Connection | None: ...

        def _down_reason(self) -> str: ...

    async def _request(self, method: str, send: Callable[[Connection], Awaitable[T]]) -> T:
        """Send one request over the live connection, with this module's error mapping."""
        conn = await self._wait_connected()
        if conn is None:
            raise ServerUnavailable(self.name, self._down_reason())
        result: T
        try:
            with anyio.fail_after(self.spec.request_timeout):
                result = await send(conn)
        except TimeoutError:
            raise RequestFailed(
                self.name, method, None, f"no answer within {self.spec.request_timeout:g} s"
            ) from None
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                raise ServerUnavailable(self.name, "the connection closed") from None
            raise RequestFailed(self.name, method, exc.code, exc.message) from None
        except ValidationError as exc:
            raise RequestFailed(self.name, method, None, f"malformed answer: {exc}") from None
        return result

    # ------------------------------------------------------------------ resources

    async def list_resources(self) -> list[Resource]:
        """Every resource the server lists.

        Raises:
            ServerUnavailable: no live connection.
            RequestFailed: the server answered with an error or not in time.
        """
        found: list[Resource] = []

        async def walk(conn: Connection) -> None:
            cursor: str | None = None
            for _ in range(_MAX_PAGES):
                page = await conn.client.list_resources(cursor=cursor, cache_mode="bypass")
                found.extend(from_resource(r, self.name) for r in page.resources)
                if (cursor := page.next_cursor) is None:
                    break

        if self._capability("resources"):
            await self._request("resources/list", walk)
        return found

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """Every resource template the server lists.

        Raises:
            ServerUnavailable: no live connection.
            RequestFailed: the server answered with an error or not in time.
        """
        found: list[ResourceTemplate] = []

        async def walk(conn: Connection) -> None:
            cursor: str | None = None
            for _ in range(_MAX_PAGES):
                page = await conn.client.list_resource_templates(cursor=cursor, cache_mode="bypass")
                found.extend(from_template(t, self.name) for t in page.resource_templates)
                if (cursor := page.next_cursor) is None:
                    break

        if self._capability("resources"):
            await self._request("resources/templates/list", walk)
        return found

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        """The contents of the resource at ``uri``, as the server sent them.

        Raises:
            ServerUnavailable: no live connection.
            RequestFailed: the server answered with an error (an unknown URI, say) or not in
                time.
        """

        async def read(conn: Connection) -> types.ReadResourceResult:
            return await conn.client.read_resource(uri, cache_mode="bypass")

        result = await self._request("resources/read", read)
        return [from_contents(c) for c in result.contents]

    async def resource_blocks(self, uri: str) -> list[ContentBlock]:
        """The resource at ``uri`` as content blocks (bounded by the spec's ``limits``).

        Raises:
            ServerUnavailable: no live connection.
            RequestFailed: the server could not read it.
        """
        blocks, _ = resource_blocks(await self.read_resource(uri), self.spec.limits)
        return blocks

    async def attach_resource(self, uri: str, text: str = "") -> UserMessage:
        """A user message of ``text`` followed by the resource at ``uri``, for ``Agent.prompt``.

        Raises:
            ServerUnavailable: no live connection.
            RequestFailed: the server could not read it.
        """
        blocks = await self.resource_blocks(uri)
        return UserMessage(content=[Text(text=text), *blocks] if text else blocks)

    async def resolve_links(self, result: AgentToolResult) -> AgentToolResult:
        """``result`` with the resources it links to read and appended (a line names each).

        A link that cannot be read is named with the reason. A result without links is
        returned as it is.
        """
        links = (
            (result.details or {}).get("resource_links")
            if isinstance(result.details, dict)
            else None
        )
        if not links:
            return result
        content = list(result.content)
        for link in links:
            uri = str(link.get("uri"))
            try:
                blocks = await self.resource_blocks(uri)
            except (ServerUnavailable, RequestFailed) as exc:
                content.append(Text(text=f"[resource {uri} could not be read: {exc}]"))
                continue
            content.append(Text(text=f"[resource {uri}:]"))
            content.extend(blocks)
        return AgentToolResult(content=content, details=result.details, is_error=result.is_error)

    # ------------------------------------------------------------------ prompts

    async def list_prompts(self) -> list[Prompt]:
        """Every prompt the server lists.

        Raises:
            ServerUnavailable: no live connection.
            RequestFailed: the server answered with an error or not in time.
        """
        found: list[Prompt] = []

        async def walk(conn: Connection) -> None:
            cursor: str | None = None
            for _ in range(_MAX_PAGES):
                page = await conn.client.list_prompts(cursor=cursor, cache_mode="bypass")
                found.extend(from_prompt(p, self.name) for p in page.prompts)
                if (cursor := page.next_cursor) is None:
                    break

        if self._capability("prompts"):
            await self._request("prompts/list", walk)
        self._prompts = {p.name: p for p in found}
        return found

    async def prompt_commands(self) -> list[PromptCommand]:
        """The server's prompts as user-interface commands (see ``PromptCommand``).

        Raises:
            ServerUnavailable: no live connection.
            RequestFailed: the server answered with an error or not in time.
        """
        return [PromptCommand.of(p) for p in await self.list_prompts()]

    async def get_prompt(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> RenderedPrompt:
        """The prompt ``name`` rendered with ``arguments`` into agentloop messages.

        The arguments are checked against the prompt's declaration first (listing the
        prompts once if needed).

        Raises:
            PromptArgumentError: the server has no such prompt, or the arguments do not fit it.
            ServerUnavailable: no live connection.
            RequestFailed: the server answered with an error or not in time.
        """
        if self._prompts is None or name not in self._prompts:
            await self.list_prompts()
        assert self._prompts is not None
        prompt = self._prompts.get(name)
        if prompt is None:
            raise PromptArgumentError(name, f"server {self.name!r} has no such prompt")
        checked = validate(prompt, arguments)

        async def get(conn: Connection) -> types.GetPromptResult:
            return await conn.client.get_prompt(name, checked or None)

        return render(await self._request("prompts/get", get), self.spec.limits)

    # ------------------------------------------------------------------ completion, ping, logs

    async def complete(
        self,
        ref: Prompt | ResourceTemplate,
        argument: str,
        value: str,
        context: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Suggestions for ``argument`` of a prompt or resource template, given its ``value``
        so far (and the other arguments in ``context``); empty when the server offers none.

        Raises:
            ServerUnavailable: no live connection.
            RequestFailed: the server answered with an error or not in time.
        """
        if not self._capability("completions"):
            return []
        mcp_ref: Any = (
            types.PromptReference(type="ref/prompt", name=ref.name)
            if isinstance(ref, Prompt)
            else types.ResourceTemplateReference(type="ref/resource", uri=ref.uri_template)
        )

        async def ask(conn: Connection) -> types.CompleteResult:
            return await conn.client.complete(
                mcp_ref, {"name": argument, "value": value}, dict(context) if context else None
            )

        result = await self._request("completion/complete", ask)
        return list(result.completion.values)

    async def ping(self) -> float:
        """Seconds for a round trip to the server (a ``ping``; on 2026-era connections, which
        have none, a ``server/discover``).

        Raises:
            ServerUnavailable: no live connection.
            RequestFailed: the server answered with an error or not in time.
        """

        async def ping(conn: Connection) -> None:
            session = conn.client.session
            if conn.client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                await session.discover()
            else:
                await session.send_request(types.PingRequest(), types.EmptyResult)

        start = anyio.current_time()
        await self._request("ping", ping)
        return anyio.current_time() - start

    async def set_log_level(self, level: LogLevel) -> None:
        """Ask the server for log messages of ``level`` and above (``ServerLog`` events).

        Kept across reconnections. On 2026-era connections the level is asked of each request.

        Raises:
            ServerUnavailable: no live connection.
            RequestFailed: the server refused the level.
        """
        self._log_level = level

        async def send(conn: Connection) -> None:
            await self._send_log_level(conn, level)

        await self._request("logging/setLevel", send)

    async def _send_log_level(self, conn: Connection, level: LogLevel) -> None:
        client = conn.client
        if (
            client.protocol_version in MODERN_PROTOCOL_VERSIONS
            or client.server_capabilities.logging is None
        ):
            return
        request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=level))
        await client.session.send_request(request, types.EmptyResult)

    # ------------------------------------------------------------------ capabilities

    def _capabilities(self) -> types.ServerCapabilities | None:
        conn = self._conn
        return None if conn is None else conn.client.server_capabilities

    def _capability(self, name: str) -> bool:
        caps = self._capabilities()
        # Unknown (no connection yet): let the request say.
        return caps is None or getattr(caps, name, None) is not None
