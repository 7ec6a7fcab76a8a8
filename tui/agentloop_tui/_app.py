"""``AgentApp``: the Textual application around a ``CodingSession``.

The app owns the widgets; the ``Conversation`` (the view model) owns what they show. Events
from the agent are applied to the view model as they arrive and the widgets catch up once per
frame (``flush``), only for what changed. Textual runs on asyncio, so the agent runs here on
anyio's asyncio backend, in a Textual worker; nothing in the library below knows about it.

Slash commands live in ``_commands``, the dialogs in ``_screens``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import anyio
from textual.app import App
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Static

from agentloop import AgentEnd, ContextCompacted, SessionNotFound, TurnEnd, UnknownModel
from agentloop_coding import ConfigError
from agentloop_policies import ALWAYS_ALLOW

from ._commands import Commands
from ._editor import edit_prompt
from ._screens import ApprovalScreen, Setup, SetupScreen, preview_diff
from ._status import ContextGauge
from ._view import AUTO_COLLAPSE_SECONDS, Conversation, ToolEntry
from ._widgets import ConversationView, PromptInput, StatusBar, ToolBlock, ToolPanel, view_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import ComposeResult

    from agentloop import AgentEvent, AgentTool, ToolCall
    from agentloop_coding import CodingSession
    from agentloop_policies import ApprovalAnswer

    from ._widgets import EntryView

__all__ = ["AgentApp", "SessionStarter"]

FRAME = 1 / 30
"""The shortest time between two updates of the widgets while the agent streams."""


class SessionStarter(Protocol):
    """Opens the session the app shows: a new one, a stored one (``resume``), or one with
    another ``model`` (after the first-run wizard)."""

    async def __call__(
        self, *, resume: str | None = None, model: str | None = None
    ) -> CodingSession: ...


class AgentApp(App[int]):
    """The terminal UI of the coding agent.

    Args:
        start: opens the session to show (see ``SessionStarter``).
        needs_setup: no model is configured: the first-run wizard asks for one first.
        clock: the time in seconds (tool blocks fold ``auto_collapse`` seconds after they end).
        auto_collapse: seconds a finished tool block stays open (``None``: until toggled).
        side_by_side_width: from this terminal width, diffs show old and new side by side.
        editor: writes a prompt in an external editor (see ``edit_prompt``).
        cursor_blink: whether the input's cursor blinks (off for reproducible screenshots).
    """

    CSS_PATH = "app.tcss"
    TITLE = "agentloop"
    HORIZONTAL_BREAKPOINTS = [
        (0, "-narrow"),
        (70, "-normal"),
        (120, "-wide"),
    ]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("ctrl+c", "interrupt", "Abort", priority=True, show=False),
        Binding("escape", "abort", "Abort", show=False),
        Binding("shift+tab", "toggle_plan", "Plan mode", priority=True),
        Binding("f2", "toggle_tool", "Tool block", priority=True),
        Binding("shift+left", "select_tool(-1)", "Previous tool", priority=True, show=False),
        Binding("shift+right", "select_tool(1)", "Next tool", priority=True, show=False),
        Binding("ctrl+t", "toggle_thinking", "Thinking", priority=True, show=False),
        Binding("ctrl+y", "copy_answer", "Copy answer", priority=True, show=False),
        Binding("alt+y", "copy_code", "Copy code", priority=True, show=False),
        Binding("pageup", "scroll(-1, True)", show=False, priority=True),
        Binding("pagedown", "scroll(1, True)", show=False, priority=True),
        Binding("ctrl+up", "scroll(-1, False)", show=False, priority=True),
        Binding("ctrl+down", "scroll(1, False)", show=False, priority=True),
    ]

    def __init__(
        self,
        start: SessionStarter,
        *,
        needs_setup: bool = False,
        clock: Callable[[], float] = time.monotonic,
        auto_collapse: float | None = AUTO_COLLAPSE_SECONDS,
        side_by_side_width: int = 160,
        editor: Callable[[str], str | None] = edit_prompt,
        cursor_blink: bool = True,
    ) -> None:
        super().__init__()
        self.start_session = start
        self.needs_setup = needs_setup
        self.view = Conversation(title=self._title, clock=clock, auto_collapse=auto_collapse)
        self.side_by_side_width = side_by_side_width
        self.editor = editor
        self.cursor_blink = cursor_blink
        self.session: CodingSession | None = None
        self.gauge = ContextGauge()
        self.commands = Commands(self)
        self.running = False
        self._session_ready: anyio.Event | None = None
        self._views: dict[int, EntryView] = {}
        self._flush_pending = False
        self._last_flush = 0.0

    @property
    def ready(self) -> anyio.Event:
        """Set once a session is open (or opening it failed)."""
        if self._session_ready is None:
            self._session_ready = anyio.Event()  # made in the app's own event loop
        return self._session_ready

    # ---------------------------------------------------------------- layout

    def compose(self) -> ComposeResult:
        # Kept by reference: while a dialog is open, queries look in the dialog's screen.
        self.conversation = ConversationView(id="conversation")
        self.tool_panel = ToolPanel(id="tool-panel")
        self.queue = Static("", id="queue", markup=False)
        self.prompt = PromptInput(id="input", placeholder="Ask, or /help")
        self.prompt.cursor_blink = self.cursor_blink
        self.status_bar = StatusBar(id="status")
        with Horizontal(id="main"):
            yield self.conversation
            yield self.tool_panel
        yield self.queue
        yield self.prompt
        yield self.status_bar

    async def on_mount(self) -> None:
        self.conversation.anchor()
        self.prompt.focus()
        self.set_interval(0.25, self.tick)
        if self.needs_setup:
            self.push_screen(SetupScreen(), callback=self._set_up)
        else:
            self.run_worker(self.open_session(), group="session")

    async def on_unmount(self) -> None:
        session = self.session
        if session is not None:
            session.agent.abort()
            with anyio.move_on_after(5, shield=True):
                await session.aclose()

    def on_resize(self) -> None:
        self._changed()

    # ---------------------------------------------------------------- sessions

    async def open_session(self, *, resume: str | None = None, model: str | None = None) -> None:
        """Show a new session (or the stored ``resume``), closing the one shown."""
        old, self.session = self.session, None
        if old is not None:
            await old.aclose()
        try:
            session = await self.start_session(resume=resume, model=model)
        except (ConfigError, UnknownModel, SessionNotFound, ValueError) as exc:
            self.view.notice(f"error: {exc}", level="error")
            self.ready.set()
            self._changed()
            return
        session.ask = self.ask
        self.session = session
        await self.conversation.remove_children()
        self._views.clear()
        self.view.clear()
        if resume is not None:
            self.view.load(session.agent.messages)
        status = self.view.status
        status.model = session.model
        status.mode = session.mode
        status.approval = session.approval_mode.value
        status.thinking = session.agent.model.thinking_level.value
        status.state = "idle"
        self.gauge = ContextGauge()
        self.update_gauge()
        where = f"session {session.session_id}" if session.session_id else "not recorded"
        self.view.notice(f"{session.model} · {where} · /help for keys and commands")
        self.ready.set()
        self._changed()

    def _set_up(self, setup: Setup | None) -> None:
        if setup is None:
            self.exit(0)
            return
        from ._setup import apply_setup

        for line in apply_setup(setup):
            self.view.notice(line)
        self.run_worker(self.open_session(model=f"{setup.provider}:{setup.model}"))

    def update_gauge(self) -> None:
        """Estimate the context window's fill from the history (once per turn)."""
        if self.session is None:
            return
        agent = self.session.agent
        prompt = agent.system_prompt if isinstance(agent.system_prompt, str) else ""
        tokens = self.gauge.update(agent.messages, prompt)
        self.view.status.set_context(tokens, agent.model.context_window)

    def _title(self, name: str, arguments: Any) -> str:
        tool = self.session.tool(name) if self.session is not None else None
        return tool.title(arguments) if tool is not None else name

    # ---------------------------------------------------------------- running

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.submit(message.text, follow_up=message.follow_up)

    def submit(self, text: str, *, follow_up: bool = False) -> None:
        """What Enter (or Alt+Enter, ``follow_up``) does with the input's text."""
        text = text.strip()
        if not text:
            return
        if self.commands.handles(text):
            self.run_worker(self.commands.run(text), group="command")
            return
        if self.session is None:
            self.view.notice("no session is open yet", level="warning")
        elif self.running:
            agent = self.session.agent
            agent.follow_up(text) if follow_up else agent.steer(text)
        else:
            self.start_run(text)
        self._changed()

    def start_run(self, prompt: str) -> None:
        """Run the agent on ``prompt`` in a worker of the app."""
        self.running = True
        self.view.status.state = "running"
        self.run_worker(self._run(prompt), group="agent", exit_on_error=False)

    async def _run(self, prompt: str) -> None:
        assert self.session is not None
        agent = self.session.agent
        try:
            async with agent.stream(prompt) as events:
                async for event in events:
                    self.on_agent_event(event)
        except Exception as exc:  # a hook that raised: show it, keep the app
            self.view.notice(f"error: {type(exc).__name__}: {exc}", level="error")
            self.view.status.state = "error"
        finally:
            self.running = False
            self._changed()

    def on_agent_event(self, event: AgentEvent) -> None:
        self.view.feed(event)
        kind = type(event)
        if kind is TurnEnd or kind is AgentEnd or kind is ContextCompacted:
            self.update_gauge()
        if kind is AgentEnd and self.session is not None:
            self.view.status.mode = self.session.mode
        self._changed()

    # ---------------------------------------------------------------- approval

    async def ask(self, call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        """The session's ``ask``: a modal dialog. Anything but yes or always refuses."""
        screen = ApprovalScreen(
            call.name,
            self._title(call.name, call.arguments),
            call.arguments,
            preview_diff(self.session, call),
        )
        answered = anyio.Event()
        box: list[str | None] = []

        def done(answer: str | None) -> None:
            box.append(answer)
            answered.set()

        self.push_screen(screen, callback=done)
        try:
            await answered.wait()
        finally:
            if not answered.is_set() and screen.is_attached and self.screen is screen:
                self.pop_screen()  # the run was aborted while the question was open
        answer = box[0] if box else None
        if answer == "always":
            return ALWAYS_ALLOW
        return answer == "yes"

    # ---------------------------------------------------------------- drawing

    def _changed(self) -> None:
        """Something in the view model changed: draw it within a frame."""
        if self._flush_pending or not self.is_running:
            return
        self._flush_pending = True
        wait = self._last_flush + FRAME - time.monotonic()
        if wait > 0:
            self.set_timer(wait, self.flush)
        else:
            self.call_later(self.flush)

    def flush(self) -> None:
        """Bring the widgets up to date with the view model."""
        self._flush_pending = False
        if not self.is_running or not self.conversation.is_attached:
            return
        self._last_flush = time.monotonic()
        added, changed = self.view.take_changes()
        if added:
            widgets = [view_for(entry) for entry in added]
            for widget in widgets:
                self._views[widget.entry.id] = widget
            self.conversation.mount_all(widgets)  # type: ignore[arg-type]
        for entry in changed:
            view = self._views.get(entry.id)
            if view is not None:
                view.sync()
        tools = self.view.tool_entries()
        selected = self.view.selected_tool
        for index, entry in enumerate(tools):
            block = self._views.get(entry.id)
            if isinstance(block, ToolBlock):
                block.set_class(index == selected, "-selected")
        self.tool_panel.show(tools, selected)
        self.status_bar.show(self.view.status, self.size.width)
        self._show_queue()

    def _show_queue(self) -> None:
        queue = self.queue
        lines: list[str] = []
        if self.session is not None:
            agent = self.session.agent
            lines += [f"⤷ steer: {_text(m)}" for m in agent.queued_steering]
            lines += [f"⏎ follow-up: {_text(m)}" for m in agent.queued_follow_up]
        queue.update("\n".join(lines))
        queue.set_class(bool(lines), "-visible")

    def tick(self) -> None:
        """Fold the tool blocks whose three seconds are up."""
        if self.view.tick():
            self._changed()

    # ---------------------------------------------------------------- actions

    def action_abort(self) -> None:
        if self.session is not None and self.running:
            self.view.request_abort()
            self.session.agent.abort()
            self._changed()

    def action_interrupt(self) -> None:
        if self.running:
            self.action_abort()
        else:
            self.notify("Ctrl+Q quits", timeout=2)

    async def action_quit(self) -> None:
        if self.session is not None:
            self.session.agent.abort()
        self.exit(0)

    def action_toggle_plan(self) -> None:
        self.commands.toggle_plan()

    def action_toggle_tool(self) -> None:
        if self.view.toggle_tool() is not None:
            self._changed()

    def action_select_tool(self, step: int) -> None:
        entry = self.view.select_tool(step)
        if entry is not None:
            self._changed()
            block = self._views.get(entry.id)
            if isinstance(block, ToolBlock):
                block.scroll_visible(animate=False)

    def action_toggle_thinking(self) -> None:
        self.view.toggle_thinking()
        self._changed()

    def action_copy_answer(self) -> None:
        answer = self.view.last_answer()
        if answer is None or not answer.text:
            self.notify("no answer to copy yet", severity="warning", timeout=2)
            return
        self.copy_to_clipboard(answer.text)
        self.notify(f"copied the answer ({len(answer.text)} characters)", timeout=2)

    def action_copy_code(self) -> None:
        for entry in reversed(self.view.entries):
            if isinstance(entry, ToolEntry):
                continue
            blocks = entry.code_blocks() if hasattr(entry, "code_blocks") else []
            if blocks:
                self.copy_to_clipboard(blocks[-1])
                self.notify(f"copied a code block ({len(blocks[-1])} characters)", timeout=2)
                return
        self.notify("no code block to copy", severity="warning", timeout=2)

    def action_scroll(self, direction: int, page: bool) -> None:
        conversation = self.conversation
        if page:
            (conversation.scroll_page_up if direction < 0 else conversation.scroll_page_down)(
                animate=False
            )
        else:
            conversation.scroll_relative(y=direction * 3, animate=False)

    def edit_externally(self, initial: str) -> str | None:
        """Run the external editor with the app suspended (where the terminal allows it)."""
        from textual.app import SuspendNotSupported

        try:
            with self.suspend():
                return self.editor(initial)
        except SuspendNotSupported:
            if not self.is_headless:
                raise
            return self.editor(initial)  # headless (tests): there is no terminal to give up


def _text(message: Any) -> str:
    from agentloop import extract_text

    text = extract_text(getattr(message, "content", []))
    return text if len(text) <= 80 else text[:79] + "…"
