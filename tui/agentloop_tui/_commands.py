"""Slash commands (``/plan``, ``/model`` ...) and ``#approve on|smart|off``.

``parse`` reads a line into a ``Command`` (or ``None`` for an ordinary prompt); ``Commands``
carries them out on an ``AgentApp``. A command that cannot be carried out says why in the
conversation; none of them raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from agentloop import AlreadyRunning, ThinkingLevel, UnknownModel

from ._editor import EditorError
from ._keys import newline_key
from ._screens import HelpScreen, ModelPicker, SessionPicker, catalog_models

if TYPE_CHECKING:
    from ._app import AgentApp

__all__ = ["APPROVE_MODES", "COMMANDS", "Command", "Commands", "parse"]

COMMANDS = {
    "compact": "[tokens] shrink the history",
    "copy": "copy the last answer",
    "editor": "write the prompt in $EDITOR",
    "help": "keys and commands",
    "model": "[provider:model] show, pick or change the model",
    "plan": "plan mode on or off",
    "quit": "quit",
    "reset": "a new conversation",
    "sessions": "resume a stored session",
    "system": "[text] show or replace the system prompt",
    "thinking": "[level] show or change the reasoning level",
    "usage": "tokens, cost and context so far",
}
"""The slash commands, by name, with what they do."""

APPROVE_MODES = {"on": "enabled", "smart": "smart", "off": "bypassed"}
"""``#approve`` words and the approval modes they choose."""


class Command(msgspec.Struct, frozen=True):
    """A command line: its name and the rest of the line."""

    name: str
    argument: str = ""


def parse(text: str) -> Command | None:
    """The command ``text`` is, or ``None`` when it is a prompt for the model."""
    stripped = text.strip()
    if stripped.startswith("#approve"):
        return Command("approve", stripped[len("#approve") :].strip())
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    name, _, argument = stripped[1:].partition(" ")
    return Command(name.lower(), argument.strip())


class Commands:
    """Carries out commands on ``app``."""

    def __init__(self, app: AgentApp) -> None:
        self.app = app

    def handles(self, text: str) -> bool:
        return parse(text) is not None

    def listed(self) -> list[tuple[str, str]]:
        """Every slash command and what it does, MCP servers' prompts included."""
        found = list(COMMANDS.items())
        mcp = self.app.mcp
        if mcp is not None:
            found += [
                (c.name, f"{c.hint + ' ' if c.hint else ''}{c.description} ({c.server})")
                for c in mcp.commands
            ]
        return found

    def say(self, text: str, *, level: str = "info") -> None:
        self.app.view.notice(text, level=level)  # type: ignore[arg-type]
        self.app._changed()

    async def run(self, text: str) -> None:
        """Carry out the command ``text``."""
        command = parse(text)
        if command is None:
            return
        app, session = self.app, self.app.session
        name, argument = command.name, command.argument
        mcp = app.mcp
        if name == "quit":
            await app.action_quit()
        elif name == "help":
            app.push_screen(HelpScreen(newline_key(app.keyboard)))
        elif name == "copy":
            app.action_copy_answer()
        elif name == "editor":
            await self.editor(argument)
        elif mcp is not None and mcp.has_command(name):
            if session is None or app.running:
                self.say(f"/{name} waits until the run is over", level="warning")
            else:
                await mcp.run_command(name, argument)
        elif name not in (*COMMANDS, "approve"):
            self.say(f"unknown command /{name}; /help lists them", level="warning")
        elif session is None:
            self.say("no session is open", level="warning")
        elif name == "approve":
            self.approve(argument)
        elif name == "plan":
            self.toggle_plan()
        elif name == "usage":
            self.usage()
        elif name == "model":
            await self.model(argument)
        elif name == "thinking":
            self.thinking(argument)
        elif name == "system":
            if argument:
                session.agent.set_system_prompt(argument)
                app.update_gauge()
                self.say("system prompt replaced for this session")
            else:
                prompt = session.agent.system_prompt
                self.say(prompt if isinstance(prompt, str) else "(computed each turn)")
        elif app.running:
            self.say(f"/{name} waits until the run is over (Esc aborts it)", level="warning")
        elif name == "compact":
            self.compact(argument)
        elif name == "reset":
            await app.open_session()
        elif name == "sessions":
            await self.sessions()

    # ---------------------------------------------------------------- commands

    def approve(self, argument: str) -> None:
        assert self.app.session is not None
        mode = APPROVE_MODES.get(argument.lower())
        if mode is None:
            current = self.app.session.approval_mode.value
            self.say(f"approval is {current}; #approve on|smart|off changes it")
            return
        self.app.session.approval_mode = mode
        self.app.view.status.approval = mode
        self.app.view.status.changed = True
        self.say(f"approval: {mode}")

    def toggle_plan(self) -> None:
        """Plan mode on; or off, carrying out the plan if one was made (Shift+Tab, /plan)."""
        app, session = self.app, self.app.session
        if session is None:
            return
        if session.mode == "execute":
            session.mode = "plan"
            self.say("plan mode: read-only tools, the answer is a plan. Shift+Tab carries it out.")
        elif session.plan:
            follow_up = session.execute_plan()
            if app.running:
                session.agent.follow_up(follow_up)
                self.say("execute mode: the plan is queued as a follow-up")
            else:
                self.say("execute mode: carrying out the plan")
                app.start_run(follow_up)
        else:
            session.mode = "execute"
            self.say("execute mode")
        app.view.status.mode = session.mode
        app.view.status.changed = True
        app._changed()

    def usage(self) -> None:
        status = self.app.view.status
        usage, cost = status.usage, status.cost
        estimated = " (estimated)" if usage.estimated else ""
        window = status.context_window
        context = f"{status.context_tokens:,}" + (f" of {window:,}" if window else "")
        self.say(
            f"tokens: {usage.input:,} in, {usage.output:,} out, {usage.cache_read:,} cache read"
            f"{estimated} · cost ${cost.total:.4f} · context {context} tokens (estimated)"
        )

    async def model(self, argument: str) -> None:
        session = self.app.session
        assert session is not None
        if not argument:

            def chosen(model: str | None) -> None:
                if model is not None:
                    self.app.run_worker(self.model(model), group="command")

            self.app.push_screen(ModelPicker(catalog_models(), session.model), callback=chosen)
            return
        try:
            await session.set_model(argument)  # a recorded session remembers it
        except (UnknownModel, ValueError) as exc:
            self.say(f"error: {exc}", level="error")
            return
        self.app.view.status.model = argument
        self.app.update_gauge()
        self.say(f"model: {argument}")

    def thinking(self, argument: str) -> None:
        session = self.app.session
        assert session is not None
        levels = [level.value for level in ThinkingLevel]
        if not argument:
            current = session.agent.model.thinking_level.value
            self.say(f"thinking: {current}; /thinking {'|'.join(levels)} changes it")
            return
        if argument not in levels:
            self.say(
                f"error: no thinking level {argument!r}: choose one of {', '.join(levels)}",
                level="error",
            )
            return
        session.agent.set_thinking_level(ThinkingLevel(argument))
        self.app.view.status.thinking = argument
        self.say(f"thinking: {argument}")

    def compact(self, argument: str) -> None:
        session = self.app.session
        assert session is not None
        try:
            budget = int(argument) if argument else None
            done = session.agent.compact(max_tokens=budget)
        except (ValueError, AlreadyRunning) as exc:
            self.say(f"cannot compact: {exc} (try /compact 20000)", level="error")
            return
        if done.dropped:
            self.say(
                f"context compacted: dropped {done.dropped} messages "
                f"({done.tokens_before:,} -> {done.tokens_after:,} estimated tokens)"
            )
        else:
            self.say(f"nothing to compact ({done.tokens_after:,} estimated tokens)")
        self.app.update_gauge()
        self.app._changed()

    async def sessions(self) -> None:
        from agentloop_coding import list_sessions

        session = self.app.session
        assert session is not None
        # A session that holds no message has nothing to resume.
        found = [info for info in await list_sessions(session.config) if info.message_count]
        if not found:
            self.say("no stored sessions with a conversation in them")
            return

        def chosen(session_id: str | None) -> None:
            if session_id is not None:
                self.app.run_worker(self.app.open_session(resume=session_id))

        self.app.push_screen(SessionPicker(found), callback=chosen)

    async def editor(self, initial: str) -> None:
        app = self.app
        prompt = app.prompt
        draft = initial or prompt.text
        try:
            text = app.edit_externally(draft)
        except EditorError as exc:
            self.say(f"error: {exc}", level="error")
            return
        if text is None:
            self.say("editor closed with an empty file: nothing sent")
            return
        prompt.clear()
        app.submit(text)
