"""``ToolsetGroup``: the task group that owns the connections; ``open_toolset`` for just one.

::

    async with agentloop_mcp.open_group() as group:
        files = await group.connect(StdioServer(command="files-server"))
        web = await group.connect(HttpServer(url="https://example.com/mcp"))
        agent = Agent(..., toolsets=[group])     # or [files, web]
        ...
        await web.aclose()                        # any task, any order

Leaving the block closes what is still open and waits for every server to stop; cancelling the
block's task does the same, promptly, on the way out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Self

import anyio

from ._connection import single_exception
from ._errors import McpError, PromptArgumentError, ToolsetClosed
from ._events import McpEvent
from ._prompts import Prompt, PromptCommand, RenderedPrompt
from ._toolset import McpToolset

if TYPE_CHECKING:
    from types import TracebackType

    from agentloop import AgentTool

    from ._config import ServerSpec
    from ._elicitation import ElicitationCallback
    from ._roots import Roots
    from ._sampling import Sampler

__all__ = ["ToolsetGroup", "open_group", "open_toolset"]

log = logging.getLogger("agentloop.mcp")

OnEvent = Callable[[McpEvent], None]


class ToolsetGroup:
    """Owns one task per connected server; also a ``Toolset`` offering all their tools.

    Enter it with ``async with`` (the task that enters it must leave it, as with any task
    group); ``connect`` and each toolset's ``aclose`` may then be called from any task.

    Args:
        on_event: called with every ``McpEvent`` of the group's servers (unless ``connect``
            is given its own).
        sampling: answers the servers' sampling requests (see ``Sampler``); without one,
            servers are told the client does not sample.
        elicitation: asks the user what a server wants to know; without one (headless),
            every request is declined with a reason.
        roots: the roots offered to the servers, kept current (``Roots.set``).

    ``connect`` may override each of these for one server.
    """

    name = "mcp"

    def __init__(
        self,
        *,
        on_event: OnEvent | None = None,
        sampling: Sampler | None = None,
        elicitation: ElicitationCallback | None = None,
        roots: Roots | None = None,
    ) -> None:
        self._on_event = on_event
        self._sampling = sampling
        self._elicitation = elicitation
        self._roots = roots
        self._toolsets: list[McpToolset] = []
        self._tg: anyio.abc.TaskGroup | None = None
        self._open = False
        self._cache: tuple[tuple[Sequence[AgentTool], ...], list[AgentTool]] = ((), [])

    @property
    def toolsets(self) -> list[McpToolset]:
        """The toolsets connected and not yet closed."""
        self._toolsets = [t for t in self._toolsets if t.state != "closed"]
        return list(self._toolsets)

    async def connect(
        self,
        spec: ServerSpec,
        *,
        on_event: OnEvent | None = None,
        sampling: Sampler | None = None,
        elicitation: ElicitationCallback | None = None,
        roots: Roots | None = None,
    ) -> McpToolset:
        """Start a server (or reach it), list its tools and return its toolset.

        Returns once the first connection is up. Callable from any task while the group is
        open; cancelling the caller while it connects stops the server. ``on_event``,
        ``sampling``, ``elicitation`` and ``roots`` default to the group's.

        Raises:
            ConnectFailed: the server could not be started or reached within
                ``spec.connect_timeout``; nothing of it is left running.
            ToolsetClosed: the group is not open.
        """
        if not self._open or self._tg is None:
            raise ToolsetClosed("this ToolsetGroup is not open")
        toolset = McpToolset(
            spec,
            on_event=on_event or self._on_event,
            sampling=sampling or self._sampling,
            elicitation=elicitation or self._elicitation,
            roots=roots or self._roots,
        )
        # Listed before it connects, so that closing the group stops a connection under way.
        self._toolsets.append(toolset)
        try:
            await self._tg.start(toolset.run, name=f"agentloop_mcp owner of {toolset.name}")
        except BaseException:
            self._toolsets.remove(toolset)
            raise
        return toolset

    def get_tools(self) -> Sequence[AgentTool]:
        """Every tool of every open toolset, in the order they were connected."""
        parts = tuple(t.get_tools() for t in self._toolsets)
        cached_parts, tools = self._cache
        if len(parts) != len(cached_parts) or any(
            a is not b for a, b in zip(parts, cached_parts, strict=True)
        ):
            tools = [tool for part in parts for tool in part]
            self._cache = (parts, tools)
        return tools

    async def prompt_commands(self) -> list[PromptCommand]:
        """Every open server's prompts as user-interface commands, in connection order.

        A server that cannot list its prompts now is left out (and logged), so one broken
        server does not take the others' commands away.
        """
        commands: list[PromptCommand] = []
        for toolset in self.toolsets:
            try:
                commands.extend(await toolset.prompt_commands())
            except McpError as exc:
                log.warning("MCP server %s: its prompts are left out: %s", toolset.name, exc)
        return commands

    async def run_command(self, command: str, text: str = "") -> RenderedPrompt:
        """Render the prompt behind ``command`` (a ``PromptCommand.name``) with the arguments
        a user typed after it (see ``PromptCommand.parse``).

        Raises:
            PromptArgumentError: no open server has this command, or the arguments do not
                fit the prompt.
            ServerUnavailable: the server has no live connection.
            RequestFailed: the server answered with an error or not in time.
        """
        for toolset in self.toolsets:
            prefix = PromptCommand.of(Prompt(name="", server=toolset.name)).name
            if not command.startswith(prefix):
                continue
            for found in await toolset.prompt_commands():
                if found.name == command:
                    return await toolset.get_prompt(found.prompt, found.parse(text))
        raise PromptArgumentError(command, "no open MCP server offers this command")

    async def aclose(self) -> None:
        """Close every toolset of the group (the group itself stays open)."""
        for toolset in list(self._toolsets):
            toolset.request_close()
        for toolset in list(self._toolsets):
            await toolset.aclose()

    async def __aenter__(self) -> Self:
        if self._tg is not None:
            raise RuntimeError("a ToolsetGroup can be entered only once")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        self._open = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        self._open = False
        for toolset in self._toolsets:
            toolset.request_close()
        assert self._tg is not None
        try:
            return await self._tg.__aexit__(exc_type, exc_val, exc_tb)
        except BaseExceptionGroup as group:
            # The owners keep their failures; what escapes is the body's, as itself.
            error = single_exception(group)
            if error is group:
                raise
            raise error from error.__cause__


def open_group(
    *,
    on_event: OnEvent | None = None,
    sampling: Sampler | None = None,
    elicitation: ElicitationCallback | None = None,
    roots: Roots | None = None,
) -> ToolsetGroup:
    """A ``ToolsetGroup``, to use with ``async with``; see ``ToolsetGroup``."""
    return ToolsetGroup(on_event=on_event, sampling=sampling, elicitation=elicitation, roots=roots)


class open_toolset:  # named as a function: used as ``async with open_toolset(spec)``
    """Connect one server for the length of an ``async with`` block.

    ::

        async with open_toolset(StdioServer(command="python", args=["server.py"])) as files:
            agent = Agent(model=..., toolsets=[files])

    A one-server ``ToolsetGroup``: the server stops when the block ends.

    Args:
        spec: the server.
        on_event: called with the server's ``McpEvent``s.
        sampling: answers the server's sampling requests (see ``Sampler``).
        elicitation: asks the user what the server wants to know (headless: declined).
        roots: the roots offered to the server.

    Raises:
        ConnectFailed: on entering, when the server cannot be started or reached.
    """

    def __init__(
        self,
        spec: ServerSpec,
        *,
        on_event: OnEvent | None = None,
        sampling: Sampler | None = None,
        elicitation: ElicitationCallback | None = None,
        roots: Roots | None = None,
    ) -> None:
        self._group = ToolsetGroup(
            on_event=on_event, sampling=sampling, elicitation=elicitation, roots=roots
        )
        self._spec = spec

    async def __aenter__(self) -> McpToolset:
        await self._group.__aenter__()
        try:
            return await self._group.connect(self._spec)
        except BaseException as exc:
            await self._group.__aexit__(type(exc), exc, exc.__traceback__)
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        return await self._group.__aexit__(exc_type, exc_val, exc_tb)
