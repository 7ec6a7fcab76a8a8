"""``agentloop acp``: the coding agent as an Agent Client Protocol server on stdio.

Editors (Zed, and terminal clients such as toad) start ``agentloop acp`` and speak JSON-RPC to
it over standard input and output, through the ``agent-client-protocol`` package (the
``[coding]`` extra). That package runs on asyncio only, so this server runs on anyio's
**asyncio backend**, chosen here explicitly; the agent and its tools stay backend-neutral.

============================  =============================================================
ACP                           agentloop
============================  =============================================================
``initialize``                capabilities: ``loadSession``; prompts with images (when the
                              model takes them) and embedded context, no audio
                              (``_acp_content``); MCP servers over stdio and HTTP;
                              ``agentInfo`` with ``agentloop.__version__``
``session/new``               a session in the client's ``cwd`` (``_acp_session``), with the
                              client's MCP servers (``_acp_mcp``), its file access and
                              terminals (``_acp_editor``); stored from its first real
                              exchange on; its modes and its model option in the answer,
                              its commands right after
``session/load``              the stored session continued, its history replayed
``session/set_mode``          ``execute`` or ``plan`` (read-only tools, a plan)
``session/set_config_option`` ``model``: switch the session's model
``session/prompt``            a run, its events as updates (``_acp_updates``); a
                              ``/command`` runs the agent's command or an MCP prompt
``session/request_perm..``    asked for each call the approval mode does not let through:
                              allow once, always allow (session trust), reject; and for
                              an MCP server's sampling request
``session/cancel``            ``Agent.abort()``: the run ends, its commands are killed, and
                              the prompt answers ``cancelled``
============================  =============================================================

Bad input never ends the server (``_acp_transport`` answers it per JSON-RPC). ``SIGTERM``,
``SIGINT`` or the end of standard input abort every running prompt and close every session
(its MCP servers stopped) before the server exits, so nothing it started outlives it.
"""

from __future__ import annotations

import functools
import logging
import signal
import uuid
from typing import TYPE_CHECKING, Any

import acp
import anyio
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    ToolCallUpdate,
)

import agentloop
from agentloop import AlreadyRunning, ErrorKind, SessionNotFound, StopReason, UnknownModel
from agentloop.policy import Rejected
from agentloop_policies import ALWAYS_ALLOW

from ._acp_content import COMMANDS, parse_command, prompt_capabilities, takes_images, to_message
from ._acp_session import Hosted, host
from ._acp_transport import StdioTransport
from ._acp_updates import UpdateMapper, call_content, history_updates
from ._config import ConfigError
from ._errors import ToolInputError
from ._keys import default_model

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from anyio.abc import TaskGroup

    from agentloop import AgentTool, ToolCall
    from agentloop_policies import ApprovalAnswer

    from ._config import Config
    from ._session import CodingSession

__all__ = ["MODES", "AcpServer", "serve_stdio"]

log = logging.getLogger("agentloop.coding.acp")

MODES = [
    SessionMode(id="execute", name="Execute", description="Read, change files and run commands."),
    SessionMode(
        id="plan",
        name="Plan",
        description="Read-only tools; the agent answers with a plan and changes nothing.",
    ),
]

_OPTIONS = [
    PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    PermissionOption(option_id="always", name="Always allow this tool", kind="allow_always"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]
_INTRODUCE_TIMEOUT = 30.0


class AcpServer:
    """The ACP agent side: one hosted ``CodingSession`` per ACP session (module docs).

    Args:
        config: the settings every session starts from.
        task_group: where the sessions are hosted (``serve_stdio`` gives its own).
        transport: the connection's transport; new sessions are introduced to the client
            once the transport has sent their id.
    """

    def __init__(
        self,
        config: Config,
        *,
        task_group: TaskGroup | None = None,
        transport: StdioTransport | None = None,
    ) -> None:
        self.config = config
        self.task_group = task_group
        self.transport = transport
        self.hosted: dict[str, Hosted] = {}
        self._client: Any = None
        self._capabilities: Any = None

    def on_connect(self, conn: Any) -> None:
        self._client = conn

    def _soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn`` in the background; its failure is logged, never the server's end."""

        async def guarded() -> None:
            try:
                await fn(*args)
            except Exception:
                log.exception("a background task of the ACP server failed")

        assert self.task_group is not None
        self.task_group.start_soon(guarded)

    # ---------------------------------------------------------------- lifecycle

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._capabilities = client_capabilities
        model = self.config.model or default_model()
        return InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=prompt_capabilities(model, self.config),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
            ),
            agent_info=Implementation(
                name="agentloop", title="agentloop", version=agentloop.__version__
            ),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None

    def _modes(self, session: CodingSession) -> SessionModeState:
        return SessionModeState(current_mode_id=session.mode, available_modes=MODES)

    async def _host(self, cwd: str, session_id: str, resume: bool, servers: Any) -> Hosted:
        assert self.task_group is not None
        start = functools.partial(
            host,
            self.config,
            self._client,
            cwd=cwd,
            session_id=session_id,
            resume=resume,
            servers=list(servers or []),
            capabilities=self._capabilities,
            ask=self._asker,
            soon=self._soon,
        )
        try:
            hosted: Hosted = await self.task_group.start(start)
        except (ConfigError, UnknownModel, ValueError) as exc:
            # The client can act on these (another directory, a configured model).
            raise acp.RequestError.invalid_params({"details": str(exc)}) from None
        except SessionNotFound:
            raise acp.RequestError.resource_not_found(session_id) from None
        self.hosted[session_id] = hosted
        return hosted

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        hosted = await self._host(cwd, uuid.uuid4().hex, False, mcp_servers)
        # Its commands, and what failed, go out once the client has the session's id.
        self._soon(self._introduce, hosted)
        return NewSessionResponse(
            session_id=hosted.session_id,
            modes=self._modes(hosted.session),
            config_options=hosted.config_options(),
            field_meta=_failures_meta(hosted),
        )

    async def _introduce(self, hosted: Hosted) -> None:
        if self.transport is not None:
            with anyio.move_on_after(_INTRODUCE_TIMEOUT):
                await self.transport.announced(hosted.session_id)
        await hosted.introduce()

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        await self._close(session_id)
        hosted = await self._host(cwd, session_id, True, mcp_servers)
        session = hosted.session
        for update in history_updates(session, session.agent.messages):
            await hosted.notify(update)
        await hosted.introduce()
        return LoadSessionResponse(
            modes=self._modes(session),
            config_options=hosted.config_options(),
            field_meta=_failures_meta(hosted),
        )

    async def _close(self, session_id: str) -> None:
        hosted = self.hosted.pop(session_id, None)
        if hosted is not None:
            hosted.closed.set()
            with anyio.CancelScope(shield=True):
                await hosted.done.wait()

    def _hosted(self, session_id: str) -> Hosted:
        hosted = self.hosted.get(session_id)
        if hosted is None:
            raise acp.RequestError.invalid_params({"sessionId": f"no session {session_id!r}"})
        return hosted

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        if mode_id not in ("execute", "plan"):
            raise acp.RequestError.invalid_params({"modeId": f"no mode {mode_id!r}"})
        self._hosted(session_id).session.mode = mode_id  # type: ignore[assignment]
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        hosted = self._hosted(session_id)
        if config_id != "model" or not isinstance(value, str):
            raise acp.RequestError.invalid_params({"configId": f"no option {config_id!r}"})
        await hosted.set_model(value)
        return SetSessionConfigOptionResponse(config_options=hosted.config_options())

    # ---------------------------------------------------------------- a prompt turn

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        hosted = self._hosted(session_id)
        session = hosted.session
        command = parse_command(prompt)
        request: Any = None
        if command is not None and command[0] in COMMANDS:
            text = await hosted.command(*command)
            if text is None:
                return PromptResponse(stop_reason="end_turn")
            request = text
        elif command is not None and command[0].startswith("mcp__"):
            try:
                rendered = await hosted.mcp.run_command(*command)
            except Exception as exc:  # the server's error, or arguments that do not fit
                raise acp.RequestError.invalid_params({"details": str(exc)}) from None
            request = rendered.messages
        else:
            images = takes_images(session.model, self.config)
            request = to_message(prompt, images=images, model=session.model)
        return await self._run(hosted, request)

    async def _run(self, hosted: Hosted, request: Any) -> PromptResponse:
        session = hosted.session
        mapper = UpdateMapper(session)
        try:
            async with session.agent.stream(request) as events:
                async for event in events:
                    for update in mapper.updates(event):
                        await hosted.notify(update)
        except AlreadyRunning:
            raise acp.RequestError.invalid_request(
                {"details": "a prompt is already running in this session"}
            ) from None
        result = events.result
        if result.stop_reason is StopReason.ABORTED:
            return PromptResponse(stop_reason="cancelled")
        if result.stop_reason is StopReason.ERROR:
            if result.error_kind is ErrorKind.CONTENT_FILTERED:
                return PromptResponse(stop_reason="refusal")
            raise acp.RequestError.internal_error({"details": result.error or "the run failed"})
        if result.stopped_by:
            return PromptResponse(stop_reason="max_turn_requests")
        if result.stop_reason is StopReason.LENGTH:
            return PromptResponse(stop_reason="max_tokens")
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        hosted = self.hosted.get(session_id)
        if hosted is not None:
            hosted.session.agent.abort()

    def _asker(self, session: CodingSession) -> Any:
        async def ask(call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
            details: Any = None
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            if call.name == "edit_file":
                details = {
                    "path": _shown_path(session, arguments.get("path")),
                    "old_text": arguments.get("old"),
                    "new_text": arguments.get("new"),
                }
            elif call.name == "write_file":
                details = {
                    "path": str(arguments.get("path", "")),
                    "new_text": arguments.get("content"),
                }
            found = session.tool(call.name)
            request = ToolCallUpdate(
                tool_call_id=call.id,
                title=found.title(call.arguments) if found is not None else call.name,
                kind=found.kind if found is not None else "other",
                status="pending",
                raw_input=call.arguments,
                content=call_content(session, details, "") or None,
            )
            response = await self._client.request_permission(
                session_id=session.session_id, tool_call=request, options=_OPTIONS
            )
            outcome = response.outcome
            if isinstance(outcome, AllowedOutcome):
                if outcome.option_id == "always":
                    return ALWAYS_ALLOW
                if outcome.option_id == "allow":
                    return True
                return Rejected(reason="The user rejected this tool call.")
            return Rejected(reason="The permission request was cancelled.")

        return ask

    # ---------------------------------------------------------------- shutting down

    async def aclose(self) -> None:
        """Abort every running prompt, then close every session (its MCP servers stop)."""
        for hosted in self.hosted.values():
            hosted.session.agent.abort()
        with anyio.CancelScope(shield=True), anyio.move_on_after(15):
            for session_id in list(self.hosted):
                await self._close(session_id)


def _shown_path(session: CodingSession, path: Any) -> str:
    """A call's path as the workspace shows it (as given, when it cannot be resolved)."""
    try:
        return session.workspace.display(session.workspace.resolve(str(path or ".")))
    except ToolInputError:
        return str(path)


def _failures_meta(hosted: Hosted) -> dict[str, Any] | None:
    if not hosted.mcp.failures:
        return None
    return {
        "agentloop/mcpServers": {
            name: {"status": "failed", "reason": reason} for name, reason in hosted.mcp.failures
        }
    }


async def _serve(config: Config) -> None:
    transport = StdioTransport()
    server = AcpServer(config, transport=transport)
    conn = acp.AgentSideConnection(server, transport, listening=False)
    try:
        async with anyio.create_task_group() as tg:
            server.task_group = tg
            with anyio.CancelScope() as listening:

                async def watch_signals() -> None:
                    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                        async for _ in signals:
                            listening.cancel()
                            return

                tg.start_soon(watch_signals)
                # The protocol package's router answers "method not found" for the optional
                # methods not implemented here.
                await conn.listen()
            await server.aclose()
            tg.cancel_scope.cancel()  # the signal watcher, and any introduction still waiting
    finally:
        with anyio.CancelScope(shield=True):
            await server.aclose()
            await conn.close()
            await transport.close()


def serve_stdio(config: Config, *, workspace: str = ".") -> None:
    """Serve ACP on standard input and output until the client goes away.

    ``workspace`` is only a default: each ACP session names its own ``cwd``.
    """
    del workspace
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    anyio.run(_serve, config, backend="asyncio")
