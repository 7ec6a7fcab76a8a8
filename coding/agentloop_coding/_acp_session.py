"""One ACP session, hosted: its ``CodingSession``, its MCP servers, its editor, its commands.

Each ACP session is owned by a task of the server's task group (``host``): the task starts
the session's MCP servers, makes the ``CodingSession`` with them as a toolset, gives the
workspace the client's editor (``ClientEditor``) when the client offers file access or
terminals, and then waits until the session is closed; leaving aborts a running prompt and
stops the servers. So everything a session started ends with it, and the MCP group is entered
and left by the one task that owns it, as task groups must be.

``Hosted`` is what the server keeps of a session, and carries out the agent's own slash
commands (``/plan``, ``/execute``, ``/model``, ``/approval``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import acp
import anyio
from acp.helpers import (
    update_agent_message_text,
    update_available_commands,
    update_current_mode,
)
from acp.schema import (
    ConfigOptionUpdate,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
)

from agentloop import UnknownModel

from ._acp_content import available_commands
from ._acp_editor import ClientEditor
from ._acp_mcp import McpServers
from ._session import CodingSession

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from anyio.abc import TaskStatus

    from ._config import Config

__all__ = ["Hosted", "host"]

log = logging.getLogger("agentloop.coding.acp")

_CLOSE_TIMEOUT = 10.0


class Hosted:
    """A hosted ACP session (see the module docs).

    Attributes:
        session: the ``CodingSession``.
        mcp: its MCP servers.
        closed: set to end the session (its host task then cleans up).
        done: set once the host task has cleaned up.
    """

    def __init__(self, session: CodingSession, mcp: McpServers, conn: Any) -> None:
        self.session = session
        self.mcp = mcp
        self.conn = conn
        self.closed = anyio.Event()
        self.done = anyio.Event()

    @property
    def session_id(self) -> str:
        assert self.session.session_id is not None
        return self.session.session_id

    async def notify(self, update: Any) -> None:
        """Send a ``session/update`` of this session."""
        await self.conn.session_update(session_id=self.session_id, update=update)

    async def say(self, text: str) -> None:
        """Tell the user something, as the agent's message."""
        await self.notify(update_agent_message_text(text))

    # ---------------------------------------------------------------- what the client sees

    def models(self) -> list[str]:
        """The models offered for switching: the session's, then the configured ones."""
        config = self.session.config
        offered = [self.session.model, config.model or "", *config.models]
        return [m for i, m in enumerate(offered) if m and m not in offered[:i]]

    def config_options(self) -> list[Any]:
        """The session's configuration options: the model to use."""
        return [
            SessionConfigOptionSelect(
                id="model",
                name="Model",
                category="model",
                type="select",
                current_value=self.session.model,
                options=[SessionConfigSelectOption(value=m, name=m) for m in self.models()],
            )
        ]

    async def send_commands(self) -> None:
        """``available_commands_update``: the agent's commands and the servers' prompts."""
        try:
            prompts = await self.mcp.prompt_commands()
        except Exception:
            log.exception("listing the MCP servers' prompts failed")
            prompts = []
        await self.notify(update_available_commands(available_commands(prompts)))

    async def introduce(self) -> None:
        """What a client is told about a session it just got: its commands, and which MCP
        servers could not be started."""
        await self.send_commands()
        for name, reason in self.mcp.failures:
            await self.say(f"MCP server {name!r} could not be used: {reason}\n")

    # ---------------------------------------------------------------- changing it

    async def set_model(self, model: str) -> None:
        """Switch the session's model to one it offers.

        Raises:
            acp.RequestError: the model is not offered, or no provider resolves it.
        """
        if model not in self.models():
            raise acp.RequestError.invalid_params(
                {"value": f"{model!r} is not offered; the models: {', '.join(self.models())}"}
            )
        try:
            await self.session.set_model(model)
        except UnknownModel as exc:
            raise acp.RequestError.invalid_params({"value": str(exc)}) from None

    async def command(self, name: str, rest: str) -> str | None:
        """Carry out the agent's command ``/name rest``; returns a prompt to run after it,
        if any."""
        session = self.session
        if name in ("plan", "execute"):
            if session.mode != name:
                session.mode = name  # type: ignore[assignment]
                await self.notify(update_current_mode(name))
            if rest:
                return rest
            if name == "execute" and session.plan:
                return session.execute_plan()
            await self.say(f"Now in {name} mode.")
        elif name == "model":
            if rest:
                await self.set_model(rest)
                await self.notify(
                    ConfigOptionUpdate(
                        session_update="config_option_update",
                        config_options=self.config_options(),
                    )
                )
            await self.say(f"Model: {session.model} (offered: {', '.join(self.models())})")
        elif name == "approval":
            if rest:
                try:
                    session.approval_mode = rest
                except ValueError:
                    await self.say("Approval modes: enabled, smart, bypassed.")
                    return None
            await self.say(f"Approval: {session.approval_mode.value}")
        return None


async def host(
    config: Config,
    conn: Any,
    *,
    cwd: str,
    session_id: str,
    resume: bool,
    servers: Sequence[Any],
    capabilities: Any,
    ask: Callable[[CodingSession], Any],
    soon: Callable[..., None],
    task_status: TaskStatus[Hosted],
) -> None:
    """Host one ACP session until it is closed (module docs).

    Raises:
        ConfigError: from ``CodingSession.start``, before ``task_status.started``.
        UnknownModel: likewise.
        SessionNotFound: likewise (a session to load that is not stored).
        ValueError: likewise (a session id taken).
    """
    holder: list[Hosted] = []

    def prompts_changed() -> None:
        if holder:
            soon(holder[0].send_commands)

    elicitation = getattr(capabilities, "elicitation", None)
    async with McpServers(
        servers,
        cwd,
        conn,
        session_id,
        elicitation=elicitation,
        on_prompts_changed=prompts_changed,
    ) as mcp:
        session = await CodingSession.start(
            config,
            workspace=cwd,
            resume=session_id if resume else None,
            session_id=None if resume else session_id,
            toolsets=mcp.toolsets,
        )
        try:
            session.ask = ask(session)
            session.workspace.editor = editor_for(conn, session_id, capabilities)
            if mcp.sampler is not None:
                mcp.sampler.use(session.agent)
            hosted = Hosted(session, mcp, conn)
            holder.append(hosted)
            task_status.started(hosted)
            await hosted.closed.wait()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
                session.agent.abort()
                await session.agent.wait_idle()
                try:
                    await session.aclose()
                except Exception:  # the server goes on: one session's provider is not it
                    log.exception("closing the provider of session %s failed", session_id)
            if holder:
                holder[0].done.set()


def editor_for(conn: Any, session_id: str, capabilities: Any) -> ClientEditor | None:
    """The client's editor for a session, if it offers file access or terminals."""
    fs = getattr(capabilities, "fs", None)
    can_read = bool(getattr(fs, "read_text_file", False))
    can_write = bool(getattr(fs, "write_text_file", False))
    can_run = bool(getattr(capabilities, "terminal", False))
    if not (can_read or can_write or can_run):
        return None
    return ClientEditor(conn, session_id, can_read=can_read, can_write=can_write, can_run=can_run)
