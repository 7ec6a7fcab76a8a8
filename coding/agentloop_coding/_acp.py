"""``agentloop acp``: the coding agent as an Agent Client Protocol server on stdio.

Editors (Zed, and terminal clients such as toad) start ``agentloop acp`` and speak JSON-RPC to
it over standard input and output, through the ``agent-client-protocol`` package (the
``[coding]`` extra). That package runs on asyncio only, so this server runs on anyio's
**asyncio backend**, chosen here explicitly; the agent and its tools stay backend-neutral.

=========================  ================================================================
ACP                        agentloop
=========================  ================================================================
``initialize``             capabilities: ``loadSession``, embedded context in prompts
``session/new``            a new ``CodingSession`` in the client's ``cwd``, recorded in the
                           session store; its modes: ``execute`` and ``plan``
``session/load``           the stored session continued, its history replayed as updates
``session/set_mode``       ``CodingSession.mode`` (plan mode: read-only tools, a plan)
``session/prompt``         a run; its events streamed as updates (see ``_acp_updates``)
``session/request_perm..`` asked for each call the approval mode does not let through:
                           allow once, always allow (session trust), reject
``session/cancel``         ``Agent.abort()``: the run ends, its commands are killed, and the
                           prompt answers ``cancelled``
=========================  ================================================================

``SIGTERM``, ``SIGINT`` or the end of standard input abort every running prompt before the
server exits, so no command it started outlives it.
"""

from __future__ import annotations

import logging
import signal
from typing import TYPE_CHECKING, Any, cast

import acp
import anyio
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    ToolCallUpdate,
)

import agentloop
from agentloop import AlreadyRunning, ErrorKind, SessionNotFound, StopReason, UnknownModel
from agentloop.policy import Rejected
from agentloop_policies import ALWAYS_ALLOW

from ._acp_updates import UpdateMapper, call_content, history_updates
from ._config import ConfigError
from ._session import CodingSession

if TYPE_CHECKING:
    from agentloop import AgentTool, ToolCall
    from agentloop_policies import ApprovalAnswer

    from ._config import Config

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


def _prompt_text(blocks: list[Any]) -> str:
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                parts.append(f'<file uri="{resource.uri}">\n{text}\n</file>')
        elif kind == "resource_link":
            parts.append(f"[{block.name}]({block.uri})")
    return "\n\n".join(parts)


class AcpServer:
    """The ACP agent side: one ``CodingSession`` per ACP session (see the module docs).

    Args:
        config: the settings every session starts from.
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        self.sessions: dict[str, CodingSession] = {}
        self._client: Any = None

    def on_connect(self, conn: Any) -> None:
        self._client = conn

    # ---------------------------------------------------------------- lifecycle

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
            ),
            agent_info=Implementation(
                name="agentloop", title="agentloop", version=agentloop.__version__
            ),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None

    def _modes(self, session: CodingSession) -> SessionModeState:
        return SessionModeState(current_mode_id=session.mode, available_modes=MODES)

    async def _start(self, cwd: str, resume: str | None = None) -> CodingSession:
        try:
            session = await CodingSession.start(self.config, workspace=cwd, resume=resume)
        except (ConfigError, UnknownModel) as exc:
            # The client can act on these (another directory, a configured model).
            raise acp.RequestError.invalid_params({"details": str(exc)}) from None
        assert session.session_id is not None
        session.ask = self._asker(session)
        self.sessions[session.session_id] = session
        return session

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        session = await self._start(cwd)
        assert session.session_id is not None
        return NewSessionResponse(session_id=session.session_id, modes=self._modes(session))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        old = self.sessions.pop(session_id, None)
        if old is not None:
            old.agent.abort()
            await old.agent.wait_idle()
        try:
            session = await self._start(cwd, resume=session_id)
        except SessionNotFound:
            raise acp.RequestError.resource_not_found(session_id) from None
        for update in history_updates(session, session.agent.messages):
            await self._client.session_update(session_id=session_id, update=update)
        return LoadSessionResponse(modes=self._modes(session))

    def _session(self, session_id: str) -> CodingSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise acp.RequestError.invalid_params({"sessionId": f"no session {session_id!r}"})
        return session

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        if mode_id not in ("execute", "plan"):
            raise acp.RequestError.invalid_params({"modeId": f"no mode {mode_id!r}"})
        self._session(session_id).mode = mode_id  # type: ignore[assignment]
        return SetSessionModeResponse()

    # ---------------------------------------------------------------- a prompt turn

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        mapper = UpdateMapper(session)
        try:
            async with session.agent.stream(_prompt_text(prompt)) as events:
                async for event in events:
                    for update in mapper.updates(event):
                        await self._client.session_update(session_id=session_id, update=update)
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
        session = self.sessions.get(session_id)
        if session is not None:
            session.agent.abort()

    def _asker(self, session: CodingSession) -> Any:
        async def ask(call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
            details: Any = None
            if call.name == "edit_file" and isinstance(call.arguments, dict):
                details = {
                    "path": session.workspace.display(
                        session.workspace.resolve(str(call.arguments.get("path", "")))
                    ),
                    "old_text": call.arguments.get("old"),
                    "new_text": call.arguments.get("new"),
                }
            elif call.name == "write_file" and isinstance(call.arguments, dict):
                details = {
                    "path": str(call.arguments.get("path", "")),
                    "new_text": call.arguments.get("content"),
                }
            title = session.tool(call.name)
            request = ToolCallUpdate(
                tool_call_id=call.id,
                title=title.title(call.arguments) if title is not None else call.name,
                kind=title.kind if title is not None else "other",
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
        """Abort every running prompt, wait for each run to end, close the providers."""
        for session in self.sessions.values():
            session.agent.abort()
        with anyio.move_on_after(10, shield=True):
            for session in self.sessions.values():
                await session.agent.wait_idle()
                await session.aclose()


async def _serve(config: Config) -> None:
    server = AcpServer(config)

    async def watch_signals(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                await server.aclose()
                scope.cancel()
                return

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_signals, tg.cancel_scope)
            # Not every optional method of the SDK's Agent protocol is implemented; its router
            # answers "method not found" for those.
            await acp.run_agent(cast("acp.Agent", server))
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await server.aclose()


def serve_stdio(config: Config, *, workspace: str = ".") -> None:
    """Serve ACP on standard input and output until the client goes away.

    ``workspace`` is only a default: each ACP session names its own ``cwd``.
    """
    del workspace
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    anyio.run(_serve, config, backend="asyncio")
