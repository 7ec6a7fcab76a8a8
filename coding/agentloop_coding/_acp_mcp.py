"""The editor's MCP servers, for one ACP session, through ``agentloop_mcp``.

``session/new`` and ``session/load`` carry the MCP servers the editor wants the agent to use.
``McpServers`` connects them all at once in one ``agentloop_mcp`` group, owned by the
task that hosts the session, and the session's agent gets the group as a toolset:

* **stdio** servers (``command``, ``args``, ``env``) are started in the session's directory,
  **HTTP** ones (``url``, ``headers``) reached over streamable HTTP. SSE and ACP-transported
  servers are not supported (``mcpCapabilities`` says so); one sent anyway is reported.
* Each server's tools are offered as ``mcp__<server>__<tool>``; calls to tools the server does
  not mark read-only need approval like the built-in tools that change things.
* A server that fails to start (a missing command, an unreachable URL) is **reported**: to
  the client, as a message in the session once the client knows the session, and in the
  answer's ``_meta`` (``agentloop/mcpServers``); the session goes on with the others.
* The servers' **roots** are the session's workspace. **Prompts** become slash commands
  (``available_commands_update``, sent again when a server's prompts change).
* **Elicitation** (a server asking the user) goes to the client's ``elicitation/create`` when
  the client offers it (form or URL mode); otherwise it is declined with a reason.
* **Sampling** (a server asking the model) is asked about first with
  ``session/request_permission``; the session's model answers.

The servers stop when the session closes (another ``session/load`` of it, or the server's end).
"""

from __future__ import annotations

import itertools
import logging
import re
import uuid
from typing import TYPE_CHECKING, Any, Self

import anyio
from acp import RequestError, text_block, tool_content
from acp.schema import (
    AllowedOutcome,
    ElicitationFormSessionMode,
    ElicitationSchema,
    ElicitationUrlSessionMode,
    HttpMcpServer,
    McpServerStdio,
    PermissionOption,
    ToolCallUpdate,
)

from agentloop import extract_text
from agentloop.policy import APPROVED, Rejected

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import TracebackType

    from agentloop.abc import Toolset
    from agentloop.policy import ApprovalDecision

__all__ = ["McpServers"]

log = logging.getLogger("agentloop.coding.acp")

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_SAMPLING_OPTIONS = [
    PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]
_PREVIEW = 2000  # characters of a sampling request shown to the user


def _name(server: Any) -> str:
    return _UNSAFE.sub("_", str(getattr(server, "name", "") or "mcp")) or "mcp"


def to_specs(servers: Sequence[Any], cwd: str) -> tuple[list[Any], list[tuple[str, str]]]:
    """``agentloop_mcp`` specs for the ACP server descriptions, and the ones refused (with
    why)."""
    from agentloop_mcp import HttpServer, StdioServer

    specs: list[Any] = []
    refused: list[tuple[str, str]] = []
    for server in servers:
        name = _name(server)
        named: dict[str, Any] = {
            "name": name,
            "prefix": f"mcp__{name}__",
            "requires_approval": "unless_read_only",
            "connect_timeout": 20.0,
        }
        if isinstance(server, McpServerStdio):
            env = {variable.name: variable.value for variable in server.env or []}
            specs.append(
                StdioServer(
                    command=server.command, args=list(server.args), env=env, cwd=cwd, **named
                )
            )
        elif isinstance(server, HttpMcpServer):
            headers = {header.name: header.value for header in server.headers or []}
            specs.append(HttpServer(url=server.url, headers=headers, **named))
        else:
            kind = getattr(server, "type", None) or type(server).__name__
            refused.append((name, f"the {kind} transport is not supported (stdio and http are)"))
    return specs, refused


class McpServers:
    """One session's MCP servers: the group, what failed, and the bridges to the client.

    Use it as ``async with McpServers(...) as servers`` in the task that hosts the session:
    entering connects every server at once (a server that fails is in ``failures``, not
    raised); leaving stops them all.

    Args:
        servers: the ACP descriptions of the servers.
        cwd: the session's workspace (the servers' root, and stdio servers' directory).
        conn: the agent side's connection to the client.
        session_id: the ACP session.
        elicitation: the client's elicitation capabilities (``None``: it offers none).
        on_prompts_changed: called when a server's prompts change.

    Attributes:
        toolsets: what the session's agent gets (the group, once connected).
        failures: the servers that could not be used, with why.
        sampler: answers the servers' sampling requests; ``use`` it with the agent.
    """

    def __init__(
        self,
        servers: Sequence[Any],
        cwd: str,
        conn: Any,
        session_id: str,
        *,
        elicitation: Any,
        on_prompts_changed: Callable[[], None],
    ) -> None:
        self.servers = list(servers)
        self.cwd = cwd
        self.conn = conn
        self.session_id = session_id
        self.elicitation = elicitation
        self.on_prompts_changed = on_prompts_changed
        self.group: Any = None
        self.sampler: Any = None
        self.roots: Any = None
        self.failures: list[tuple[str, str]] = []
        self._asked = itertools.count(1)

    @property
    def toolsets(self) -> list[Toolset]:
        return [] if self.group is None else [self.group]

    async def __aenter__(self) -> Self:
        if not self.servers:
            return self
        try:
            import agentloop_mcp
        except ImportError:
            extra = 'MCP servers need the [mcp] extra: pip install "anyio-agentloop[mcp]"'
            self.failures = [(_name(s), extra) for s in self.servers]
            return self
        specs, self.failures = to_specs(self.servers, self.cwd)
        self.roots = agentloop_mcp.Roots([self.cwd])
        self.sampler = agentloop_mcp.Sampler(approve=self._approve_sampling)
        group = agentloop_mcp.open_group(
            on_event=self._on_event,
            sampling=self.sampler,
            elicitation=self._elicit if self.elicitation is not None else None,
            roots=self.roots,
        )
        await group.__aenter__()
        self.group = group

        async def connect(spec: Any) -> None:
            try:
                await group.connect(spec)
            except agentloop_mcp.ConnectFailed as exc:
                self.failures.append((spec.name, exc.reason))
                log.warning("%s", exc)

        try:
            async with anyio.create_task_group() as tg:
                for spec in specs:
                    tg.start_soon(connect, spec)
        except BaseException as exc:
            await group.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group, self.group = self.group, None
        if group is None:
            return None
        try:
            result: bool | None = await group.__aexit__(exc_type, exc, tb)
        except Exception:
            if exc is not None:
                raise
            # Stopping the servers failed: logged; the ACP server itself goes on.
            log.exception("stopping the MCP servers of session %s failed", self.session_id)
            return None
        return result

    def _on_event(self, event: Any) -> None:
        from agentloop_mcp import ListChanged  # imported already: the group sends events

        if isinstance(event, ListChanged) and event.kind == "prompts":
            self.on_prompts_changed()

    async def prompt_commands(self) -> list[Any]:
        """The servers' prompts as ``agentloop_mcp.PromptCommand``s."""
        if self.group is None:
            return []
        commands: list[Any] = await self.group.prompt_commands()
        return commands

    async def run_command(self, name: str, text: str) -> Any:
        """The messages of the prompt behind command ``name``.

        Raises:
            McpError: no server has it, the arguments do not fit, or the server failed.
        """
        return await self.group.run_command(name, text)

    # ---------------------------------------------------------------- the client's part

    async def _approve_sampling(self, request: Any) -> ApprovalDecision:
        texts = [extract_text(m.content) for m in request.messages if hasattr(m, "content")]
        preview = "\n\n".join(t for t in texts if t)[-_PREVIEW:]
        call = ToolCallUpdate(
            tool_call_id=f"mcp-sampling-{next(self._asked)}",
            title=f"MCP server {request.server} asks the model to answer",
            kind="other",
            status="pending",
            raw_input={
                "server": request.server,
                "max_tokens": request.max_tokens,
                "system_prompt": request.system_prompt,
            },
            content=[tool_content(text_block(preview))] if preview else None,
        )
        try:
            response = await self.conn.request_permission(
                session_id=self.session_id, tool_call=call, options=_SAMPLING_OPTIONS
            )
        except (RequestError, ConnectionError) as exc:
            return Rejected(reason=f"the user could not be asked: {exc}")
        outcome = response.outcome
        if isinstance(outcome, AllowedOutcome) and outcome.option_id == "allow":
            return APPROVED
        return Rejected(reason="the user did not allow the model to answer this server")

    async def _elicit(self, request: Any) -> Any:
        from agentloop_mcp import ElicitationResponse

        caps = self.elicitation
        mode: Any
        if request.mode == "form" and getattr(caps, "form", None) is not None:
            try:
                schema = ElicitationSchema.model_validate(request.schema or {})
            except ValueError as exc:
                return ElicitationResponse.decline(f"the editor cannot show this form: {exc}")
            mode = ElicitationFormSessionMode(session_id=self.session_id, requested_schema=schema)
        elif request.mode == "url" and getattr(caps, "url", None) is not None and request.url:
            mode = ElicitationUrlSessionMode(
                session_id=self.session_id,
                elicitation_id=request.elicitation_id or uuid.uuid4().hex,
                url=request.url,
            )
        else:
            return ElicitationResponse.decline(
                f"the editor does not show {request.mode} requests, so no user can answer"
            )
        try:
            answer = await self.conn.create_elicitation(
                message=f"{request.server}: {request.message}", mode=mode
            )
        except (RequestError, ConnectionError) as exc:
            return ElicitationResponse.decline(f"the editor could not ask the user: {exc}")
        action = getattr(answer, "action", "cancel")
        if action == "accept":
            return ElicitationResponse.accept(getattr(answer, "content", None))
        if action == "decline":
            return ElicitationResponse.decline("the user declined in the editor")
        return ElicitationResponse.cancel()
