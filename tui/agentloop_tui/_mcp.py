"""MCP servers in the terminal UI: their tools for the agent, their prompts as slash commands,
their questions to the user as dialogs.

``McpBridge`` holds an ``agentloop_mcp`` group open for the app's life, in a worker of its own
(the task that enters a group must leave it), and puts it in the agent's toolsets; a new
session (``/reset``, a resumed one) gets it too. What the servers ask goes through the same
dialogs as everything else:

- **prompts** are slash commands (``/mcp__server__prompt args``), completed as you type, with
  their argument hint; the rendered messages are sent as the prompt. The list is read again
  when a server says its prompts changed.
- **elicitation**: a form dialog from the request's schema, prefilled with its defaults; in URL
  mode, a dialog offering to open the page (``_elicit``).
- **sampling**: the approval dialog (yes, always for this server, no, or no with what to do
  instead); the answer comes from the agent's own model.
- **roots**: the session's workspace.

``load_servers`` reads ``--mcp FILE``: a list of ``agentloop_mcp`` server specs, or the
``{"mcpServers": {...}}`` object other tools write (stdio ``command``/``args``/``env``, or
``url``/``headers``), in JSON or TOML.
"""

from __future__ import annotations

import tomllib
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from rich.text import Text

from agentloop import AgentError, extract_text
from agentloop.policy import APPROVED, Rejected

from ._approval import ApprovalChoice, ApprovalScreen

if TYPE_CHECKING:
    from pathlib import Path

    from agentloop.policy import ApprovalDecision
    from agentloop_coding import CodingSession
    from agentloop_mcp import (
        ElicitationRequest,
        ElicitationResponse,
        McpEvent,
        PromptCommand,
        SamplingRequest,
        ServerSpec,
        ToolsetGroup,
    )

    from ._app import AgentApp

__all__ = ["McpBridge", "McpConfigError", "load_servers"]


class McpConfigError(AgentError, ValueError):
    """An ``--mcp`` file cannot be read as MCP servers; the message says where and why."""


class _Entry(msgspec.Struct, kw_only=True):
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    url: str | None = None
    headers: dict[str, str] = {}


def load_servers(path: Path) -> list[ServerSpec]:
    """The servers an ``--mcp`` file describes.

    Raises:
        McpConfigError: the file cannot be read, or is not a list of servers.
        MissingExtra: ``agentloop_mcp`` (the ``[mcp]`` extra) is not installed.
    """
    import agentloop_mcp

    try:
        raw = path.read_bytes()
        data: Any = (
            tomllib.loads(raw.decode()) if path.suffix == ".toml" else msgspec.json.decode(raw)
        )
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, msgspec.DecodeError) as exc:
        raise McpConfigError(f"{path}: {exc}") from None
    try:
        if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
            return [_spec(agentloop_mcp, name, e) for name, e in data["mcpServers"].items()]
        if isinstance(data, dict) and isinstance(data.get("servers"), list):
            data = data["servers"]  # TOML: [[servers]] tables
        return msgspec.convert(data, list[agentloop_mcp.ServerSpec])
    except (msgspec.ValidationError, TypeError, ValueError) as exc:
        raise McpConfigError(f"{path}: {exc}") from None


def _spec(mcp: Any, name: str, entry: Any) -> ServerSpec:
    found = msgspec.convert(entry, _Entry)
    spec: ServerSpec
    if found.command:
        spec = mcp.StdioServer(name=name, command=found.command, args=found.args, env=found.env)
        return spec
    if found.url:
        spec = mcp.HttpServer(name=name, url=found.url, headers=found.headers)
        return spec
    raise ValueError(f"server {name!r} has neither a command nor a url")


class McpBridge:
    """The app's MCP servers (see the module docs)."""

    def __init__(self, app: AgentApp, specs: list[ServerSpec]) -> None:
        import agentloop_mcp

        self.app = app
        self.specs = specs
        self.group: ToolsetGroup | None = None
        self.commands: list[PromptCommand] = []
        self.trusted: set[str] = set()  # servers allowed to sample for this session
        self.roots = agentloop_mcp.Roots([])
        self.sampler = agentloop_mcp.Sampler(approve=self.approve_sampling)
        self._closed: anyio.Event | None = None
        self._done: anyio.Event | None = None
        self._session: CodingSession | None = None

    # ---------------------------------------------------------------- life

    async def run(self) -> None:
        """Connect the servers and hold them open until ``aclose`` (a worker of the app)."""
        import agentloop_mcp

        self._closed, self._done = anyio.Event(), anyio.Event()
        try:
            async with agentloop_mcp.open_group(
                on_event=self.on_event,
                sampling=self.sampler,
                elicitation=self.elicit,
                roots=self.roots,
            ) as group:
                for spec in self.specs:
                    try:
                        await group.connect(spec)
                    except agentloop_mcp.McpError as exc:
                        self._say(f"MCP server {spec.name or ''} did not start: {exc}", "error")
                self.group = group
                if self._session is not None:
                    self.attach(self._session)
                await self.refresh_commands()
                await self._closed.wait()
        finally:
            self.group = None
            self._done.set()

    async def aclose(self) -> None:
        """Stop the servers and wait until they have."""
        if self._closed is not None and self._done is not None:
            self._closed.set()
            await self._done.wait()

    def attach(self, session: CodingSession) -> None:
        """Offer the servers' tools to ``session``'s agent, its model for sampling, its
        workspace as the root."""
        self._session = session
        self.trusted.clear()
        group = self.group
        if group is None:
            return  # attached once connected
        agent = session.agent
        if group not in agent.toolsets:
            agent.toolsets.append(group)
        self.sampler.use(agent)
        self.roots.set([str(session.workspace.root)])

    def _say(self, text: str, level: str = "info") -> None:
        self.app.view.notice(text, level=level)  # type: ignore[arg-type]
        self.app._changed()

    def on_event(self, event: McpEvent) -> None:
        import agentloop_mcp

        if isinstance(event, agentloop_mcp.ListChanged) and event.kind == "prompts":
            self.app.run_worker(self.refresh_commands(), group="mcp-commands")
        elif isinstance(event, agentloop_mcp.ServerCrashed | agentloop_mcp.ServerRestartFailed):
            self._say(f"MCP server {event.server}: {type(event).__name__}", "warning")

    # ---------------------------------------------------------------- prompts

    async def refresh_commands(self) -> None:
        group = self.group
        self.commands = await group.prompt_commands() if group is not None else []

    def has_command(self, name: str) -> bool:
        return any(command.name == name for command in self.commands)

    async def run_command(self, name: str, text: str) -> None:
        """Render the prompt behind ``/name text`` and send it."""
        import agentloop_mcp

        group = self.group
        if group is None:
            self._say("the MCP servers are not connected", "error")
            return
        try:
            rendered = await group.run_command(name, text)
        except agentloop_mcp.McpError as exc:
            self._say(f"error: /{name}: {exc}", "error")
            return
        self.app.start_run(list(rendered.messages))

    # ---------------------------------------------------------------- questions

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        """A server asks the user: the form (or the link) in a dialog."""
        import agentloop_mcp

        from ._elicit import ElicitationScreen

        answer = await self.app.choose(ElicitationScreen(request, open_url=self.app.open_page))
        return answer if answer is not None else agentloop_mcp.ElicitationResponse.cancel()

    async def approve_sampling(self, request: SamplingRequest) -> ApprovalDecision:
        """A server wants the model: the approval dialog, unless trusted for the session."""
        if request.server in self.trusted:
            return APPROVED
        said = "\n\n".join(
            f"{getattr(m, 'role', 'user')}: {extract_text(getattr(m, 'content', []))}"
            for m in request.messages
        )
        if request.system_prompt:
            said = f"system: {request.system_prompt}\n\n{said}"
        question = Text.assemble(
            "Allow the MCP server ",
            (request.server, "bold"),
            f" to ask the model (up to {request.max_tokens:,} tokens)?",
        )
        screen = ApprovalScreen(
            question,
            always=f"always allow {request.server} (this session)",
            body=said,
            tool="sampling",
        )
        choice = await self.app.choose(screen) or ApprovalChoice(answer="no")
        if choice.answer == "always":
            self.trusted.add(request.server)
        if choice.answer in ("yes", "always"):
            return APPROVED
        return Rejected(reason=choice.instead or "the user refused to let the server sample")
