"""``AgentApp``: the Textual application around a ``CodingSession``.

The app owns the widgets; the ``Conversation`` (the view model) owns what they show. Events
from the agent are applied to the view model as they arrive and the widgets catch up once per
frame (``flush``), only for what changed. Textual runs on asyncio, so the agent runs here on
anyio's asyncio backend, in a Textual worker; nothing in the library below knows about it.

Keys and actions live in ``_actions``, slash commands in ``_commands``, dialogs in
``_approval``, ``_screens``, ``_elicit`` and ``_wizard``, MCP servers in ``_mcp``, and what
inline mode prints into the terminal's scrollback in ``_inline``.
"""

from __future__ import annotations

import time
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from textual.containers import Horizontal
from textual.widgets import Static

from agentloop import (
    AgentEnd,
    ContextCompacted,
    SessionNotFound,
    ToolExecutionStart,
    TurnEnd,
    UnknownModel,
)
from agentloop_coding import ConfigError

from ._actions import Actions
from ._commands import Commands
from ._complete import complete, with_files
from ._editor import edit_prompt
from ._history import PromptHistory
from ._inline import Scrollback, with_scrollback
from ._keys import newline_key
from ._prompt import PromptInput, SuggestionList
from ._status import ContextGauge
from ._view import AUTO_COLLAPSE_SECONDS, Conversation, UserEntry
from ._widgets import ConversationView, StatusBar, ToolBlock, ToolPanel, Welcome, view_for

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from textual.app import ComposeResult
    from textual.screen import Screen

    from agentloop import AgentEvent, AgentInput
    from agentloop_coding import CodingSession

    from ._complete import Suggestion
    from ._keys import Keyboard
    from ._mcp import McpBridge
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


class AgentApp(Actions):
    """The terminal UI of the coding agent.

    Args:
        start: opens the session to show (see ``SessionStarter``).
        needs_setup: no model is configured: the first-run wizard asks for one first.
        clock: the time in seconds (tool blocks fold ``auto_collapse`` seconds after they end).
        auto_collapse: seconds a finished tool block stays open (``None``: until toggled).
        side_by_side_width: from this terminal width, diffs show old and new side by side.
        editor: writes a prompt in an external editor (see ``edit_prompt``).
        cursor_blink: whether the input's cursor blinks (off for reproducible screenshots).
        history: the project's earlier prompts (default: this run's only).
        mcp_servers: MCP servers to connect (``agentloop_mcp`` specs): their tools are
            offered, their prompts are slash commands, their questions are dialogs.
        open_page: opens a page in the user's browser (an MCP server's URL request).
    """

    CSS_PATH = "app.tcss"
    TITLE = "agentloop"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (70, "-normal"), (120, "-wide")]
    # Inline, no blank line above the app: the lines printed into the scrollback go where the
    # app starts, and Textual clears from one padding line above it when the app closes.
    INLINE_PADDING = 0

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
        history: PromptHistory | None = None,
        mcp_servers: Sequence[Any] = (),
        open_page: Callable[[str], object] = webbrowser.open,
    ) -> None:
        super().__init__()
        self.start_session = start
        self.needs_setup = needs_setup
        self.view = Conversation(title=self._title, clock=clock, auto_collapse=auto_collapse)
        self.side_by_side_width = side_by_side_width
        self.editor = editor
        self.cursor_blink = cursor_blink
        self.history = history if history is not None else PromptHistory()
        self.open_page = open_page
        self.session: CodingSession | None = None
        self.gauge = ContextGauge()
        self.commands = Commands(self)
        self.keyboard: Keyboard = "legacy"
        self.running = False
        self.scrollback: Scrollback | None = None  # inline mode's printer
        self.mcp: McpBridge | None = None
        if mcp_servers:
            from ._mcp import McpBridge

            self.mcp = McpBridge(self, list(mcp_servers))
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
        self.welcome = Welcome(id="welcome")
        self.tool_panel = ToolPanel(id="tool-panel")
        self.below = Static("↓ new output below · End shows it", id="below", markup=False)
        self.suggestions = SuggestionList(id="suggestions")
        self.queue = Static("", id="queue", markup=False)
        self.prompt = PromptInput(id="input", history=self.history)
        self.prompt.cursor_blink = self.cursor_blink
        self.prompt.suggestions = self.suggestions
        self.prompt.completer = self.complete
        self.status_bar = StatusBar(id="status")
        with Horizontal(id="main"):
            with self.conversation:
                yield self.welcome
            yield self.tool_panel
        yield self.below
        yield self.suggestions
        yield self.queue
        yield self.prompt
        yield self.status_bar

    async def on_mount(self) -> None:
        if self.is_inline:
            self.scrollback = Scrollback(self.view, color_system=self.console.color_system)
        self.below.display = False
        self.conversation.marker = self.below
        self.suggestions.display = False
        self.conversation.follow()
        self.prompt.focus()
        self._show_keys()
        self.set_interval(0.25, self.tick)
        if self.mcp is not None:
            self.run_worker(self.mcp.run(), group="mcp", exit_on_error=False)
        if self.needs_setup:
            from ._wizard import SetupScreen

            self.push_screen(SetupScreen(), callback=self._set_up)
        else:
            self.run_worker(self.open_session(), group="session")

    async def on_unmount(self) -> None:
        session = self.session
        if session is not None:
            session.agent.abort()
            with anyio.move_on_after(5, shield=True):
                await session.aclose()
        if self.mcp is not None:
            with anyio.move_on_after(10, shield=True):
                await self.mcp.aclose()

    def on_resize(self) -> None:
        self._changed()

    def _build_driver(self, headless: bool, inline: bool, mouse: bool, size: Any) -> Any:
        # Textual's drivers, asking the terminal for the keyboard encodings that tell
        # Shift+Enter from Enter, and reading every encoding of them (see ``_keys``).
        import sys

        if headless or sys.platform == "win32":
            return super()._build_driver(headless, inline, mouse, size)
        from textual import constants

        from ._keys import InlineKeyboardDriver, KeyboardDriver

        cls = InlineKeyboardDriver if inline else KeyboardDriver
        driver = self._driver = cls(self, debug=constants.DEBUG, mouse=mouse, size=size)
        return driver

    def _display(self, screen: Screen[Any], renderable: Any) -> None:
        if self.scrollback is not None:
            renderable = with_scrollback(renderable, self.scrollback)
        super()._display(screen, renderable)

    # ---------------------------------------------------------------- sessions

    async def open_session(
        self, *, resume: str | None = None, model: str | None = None, said: Sequence[str] = ()
    ) -> None:
        """Show a new session (or the stored ``resume``), closing the one shown; ``said``:
        lines to show first (what the first-run wizard did)."""
        old, self.session = self.session, None
        if old is not None:
            await old.aclose()
        try:
            session = await self.start_session(resume=resume, model=model)
        except (ConfigError, UnknownModel, SessionNotFound, ValueError) as exc:
            for line in said:
                self.view.notice(line)
            self.view.notice(f"error: {exc}", level="error")
            self.ready.set()
            self._changed()
            return
        session.ask = self.ask
        # Enter while the agent works steers it, and the help and docs promise that running
        # tools are interrupted for it: ask for that whatever the library's default.
        session.agent.steering_interrupt = "now"
        self.session = session
        await self._clear_widgets()
        for line in said:
            self.view.notice(line)
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
        if self.mcp is not None:
            self.mcp.attach(session)
        self.ready.set()
        self._changed()

    async def _clear_widgets(self) -> None:
        for view in list(self._views.values()):
            await view.remove()  # type: ignore[attr-defined]
        self._views.clear()
        self.view.clear()
        if self.scrollback is not None:
            self.scrollback.reset()

    def _set_up(self, setup: Any) -> None:
        if setup is None:
            self.exit(0)
            return
        from ._setup import apply_setup

        said = apply_setup(setup)
        self.run_worker(self.open_session(model=setup.model_string, said=said), group="session")

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

    def complete(self, text: str, cursor: int) -> list[Suggestion]:
        """The prompt's suggestions: commands after ``/``, workspace paths after ``@``."""
        root = self.session.workspace.root if self.session is not None else None
        return complete(text, cursor, commands=self.commands.listed(), root=root)

    # ---------------------------------------------------------------- running

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.submit(message.text, follow_up=message.follow_up)

    def submit(self, text: str, *, follow_up: bool = False) -> None:
        """What Enter (or Alt+Enter, ``follow_up``) does with the input's text."""
        text = text.strip()
        if not text:
            return
        self.conversation.follow()  # whatever was scrolled, the answer is what comes next
        if self.commands.handles(text):
            self.run_worker(self.commands.run(text), group="command")
            return
        if self.session is None:
            self.view.notice("no session is open yet", level="warning")
        elif self.running:
            agent = self.session.agent
            agent.follow_up(text) if follow_up else agent.steer(text)
        else:
            attached = with_files(text, self.session.workspace.resolve, self.view.notice)
            self.start_run(attached)
        self._changed()

    def start_run(self, prompt: AgentInput) -> None:
        """Run the agent on ``prompt`` in a worker of the app."""
        self.running = True
        self.view.status.state = "running"
        self.run_worker(self._run(prompt), group="agent", exit_on_error=False)

    async def _run(self, prompt: AgentInput) -> None:
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
        if kind is ToolExecutionStart:
            self.tick()
        self._changed()

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
        printed: set[int] = set()
        if self.scrollback is not None:
            # Inline: what settled goes to the terminal's scrollback, not to a widget.
            printed = {entry.id for entry in self.scrollback.take(self.size.width)}
            for entry_id in printed:
                gone = self._views.pop(entry_id, None)
                if gone is not None:
                    gone.remove()  # type: ignore[attr-defined]
            if printed:
                self.screen.refresh()  # a frame, to print them
        widgets = [view_for(entry) for entry in added if entry.id not in printed]
        if widgets:
            for widget in widgets:
                self._views[widget.entry.id] = widget
            self.conversation.mount_all(widgets)  # type: ignore[arg-type]
            if not self.conversation.following:
                self.below.display = True
        for entry in changed:
            view = self._views.get(entry.id)
            if view is not None:
                view.sync()
        if changed and not self.conversation.following:
            self.below.display = True
        tools = self.view.tool_entries()
        selected = self.view.selected_tool
        for index, entry in enumerate(tools):
            block = self._views.get(entry.id)
            if isinstance(block, ToolBlock):
                block.set_class(index == selected, "-selected")
        self.tool_panel.show(tools, selected)
        self.status_bar.show(self.view.status, self.size.width)
        self._show_queue()
        self.welcome.display = not any(isinstance(e, UserEntry) for e in self.view.entries)
        if self.welcome.display:
            self._show_keys()

    def _show_queue(self) -> None:
        queue = self.queue
        lines: list[str] = []
        if self.session is not None:
            agent = self.session.agent
            lines += [f"⤷ steer: {_text(m)}" for m in agent.queued_steering]
            lines += [f"⏎ follow-up: {_text(m)}" for m in agent.queued_follow_up]
        queue.update("\n".join(lines))
        queue.set_class(bool(lines), "-visible")

    def _show_keys(self) -> None:
        """Say which keys work here (the newline key depends on the terminal)."""
        newline = newline_key(self.keyboard)
        self.prompt.placeholder = f"Ask, or /help · {newline} new line · Alt+Enter queue"
        session = self.session
        self.welcome.show(
            model=session.model if session is not None else "",
            workspace=_home_relative(session.workspace.root) if session is not None else "",
            session=session.session_id if session is not None else None,
            newline=newline,
        )

    def tick(self) -> None:
        """Fold the tool blocks whose three seconds are up; count running ones' seconds."""
        if self.view.tick():
            self._changed()


def _text(message: Any) -> str:
    from agentloop import extract_text

    text = extract_text(getattr(message, "content", []))
    return text if len(text) <= 80 else text[:79] + "…"


def _home_relative(path: Path) -> str:
    """``path`` with the user's home directory written ``~`` (as a shell prompt shows it)."""
    try:
        return str(Path("~") / path.relative_to(Path.home()))
    except (ValueError, RuntimeError):  # outside the home directory, or no home
        return str(path)
