"""What the keys do (``Actions``, a part of ``AgentApp``), and asking the user about tool calls.

Esc and Ctrl+C abort a run. When idle, Ctrl+C clears the prompt, and pressed again within
``AGAIN`` seconds on an empty prompt quits; Esc pressed twice within ``AGAIN`` seconds takes the
conversation back to before the last prompt and puts that prompt in the input to be edited.
A key typed while the focus is elsewhere (after a click on the conversation, say) goes to the
prompt: keys are never lost.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

import anyio
from textual.app import App
from textual.binding import Binding, BindingType

from agentloop import extract_text
from agentloop.policy import Rejected
from agentloop_policies import ALWAYS_ALLOW

from ._approval import (
    ApprovalChoice,
    ApprovalScreen,
    arguments_text,
    call_question,
    command_prefix,
    preview_diff,
)
from ._editor import EditorError
from ._entries import ToolEntry

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual import events
    from textual.screen import Screen
    from textual.widgets import Static

    from agentloop import AgentTool, ToolCall
    from agentloop_coding import CodingSession
    from agentloop_policies import ApprovalAnswer

    from ._app import AgentApp
    from ._commands import Commands
    from ._history import PromptHistory
    from ._keys import Keyboard, KeyboardReport
    from ._prompt import PromptInput
    from ._view import Conversation
    from ._widgets import ConversationView, EntryView

__all__ = ["AGAIN", "BINDINGS", "Actions"]

AGAIN = 1.5
"""Seconds within which a second Ctrl+C quits, or a second Esc edits the last prompt."""

BINDINGS: list[BindingType] = [
    Binding("ctrl+q", "quit", "Quit", priority=True),
    Binding("ctrl+c", "interrupt", "Abort", priority=True, show=False),
    Binding("escape", "escape", "Abort", show=False),
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
    Binding("ctrl+end", "follow", show=False, priority=True),
]


class Actions(App[int]):
    """The key actions of ``AgentApp``, the part of it that answers keys."""

    BINDINGS = BINDINGS
    _last_escape = 0.0
    _last_interrupt = 0.0

    if TYPE_CHECKING:  # made and defined by AgentApp
        session: CodingSession | None
        view: Conversation
        prompt: PromptInput
        conversation: ConversationView
        below: Static
        commands: Commands
        history: PromptHistory
        keyboard: Keyboard
        running: bool
        editor: Callable[[str], str | None]
        _views: dict[int, EntryView]

        def _changed(self) -> None: ...
        def _show_keys(self) -> None: ...
        def _title(self, name: str, arguments: Any) -> str: ...

    # ---------------------------------------------------------------- running

    def action_escape(self) -> None:
        if self.running:
            self.action_abort()
            return
        now = time.monotonic()
        if now - self._last_escape <= AGAIN:
            self._last_escape = 0.0
            self.run_worker(self.edit_last_prompt(), group="command")
        else:
            self._last_escape = now

    def action_abort(self) -> None:
        if self.session is not None and self.running:
            self.view.request_abort()
            agent = self.session.agent
            agent.abort()
            # What was queued for the run goes back into the prompt, to edit or send again:
            # nothing typed for a stopped run goes out with the next prompt unseen.
            waiting = [*agent.queued_steering, *agent.queued_follow_up]
            agent.clear_queues()
            if waiting:
                typed = [extract_text(getattr(m, "content", [])) for m in waiting]
                self.prompt.set_text("\n".join([*typed, self.prompt.text]).rstrip("\n"))
            self._changed()

    def action_interrupt(self) -> None:
        if self.running:
            self.action_abort()
            return
        now = time.monotonic()
        if self.prompt.text:
            self.prompt.set_text("")
            self._last_interrupt = 0.0  # clearing is not the first of the two that quit
        elif now - self._last_interrupt <= AGAIN:
            self.run_worker(self.action_quit())
        else:
            self._last_interrupt = now
            self.notify("Ctrl+C again quits (or Ctrl+Q)", timeout=AGAIN)

    async def action_quit(self) -> None:
        if self.session is not None:
            self.session.agent.abort()
        self.exit(0)

    async def edit_last_prompt(self) -> None:
        """Take the conversation back to before the last prompt; that prompt is put in the
        input, to be edited and sent again."""
        from ._rewind import rewind

        said = await rewind(cast("AgentApp", self))
        if said is not None:
            self.prompt.set_text(said)
            self.prompt.focus()

    def on_keyboard_report(self, message: KeyboardReport) -> None:
        if self.keyboard == "legacy":
            self.keyboard = message.keyboard
            self._show_keys()

    def on_key(self, event: events.Key) -> None:
        # A key no widget took, typed with the focus away from the prompt (a click on the
        # conversation moved it): the prompt gets it, so that nothing typed is lost.
        if self.screen is not self.screen_stack[0] or self.prompt.has_focus:
            return
        if event.is_printable and event.character:
            event.stop()
            self.prompt.focus()
            self.prompt.insert(event.character)

    # ---------------------------------------------------------------- views

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
            if block is not None:
                block.scroll_visible(animate=False)  # type: ignore[attr-defined]

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
        step = conversation.scrollable_content_region.height if page else 3
        conversation.scroll_by(direction * max(1, step))

    def action_follow(self) -> None:
        self.conversation.follow()

    def on_prompt_input_jump_to_end(self, message: Any) -> None:
        self.conversation.follow()

    def on_prompt_input_search_history(self, message: Any) -> None:
        from ._screens import HistorySearch

        prompts = self.history.search("")
        search = HistorySearch(prompts)

        def chosen(index: str | None) -> None:
            if index is not None:
                self.prompt.set_text(prompts[int(index)])
            self.prompt.focus()

        self.push_screen(search, callback=chosen)

    def on_click(self, event: events.Click) -> None:
        if event.widget is self.below:
            self.conversation.follow()

    # ---------------------------------------------------------------- the editor

    def edit_externally(self, initial: str) -> str | None:
        """Run the external editor with the app suspended (where the terminal allows it).

        Textual resumes the app only when the ``with self.suspend()`` block ends normally: an
        editor that fails (exits non-zero, is not found) must not escape from it, or the
        terminal stays given up (keys echoed raw, nothing drawn, Ctrl+Q dead). Its error is
        raised once the app is back.

        Raises:
            EditorError: the editor could not be started or failed.
        """
        from textual.app import SuspendNotSupported

        failed: EditorError | None = None
        text: str | None = None
        try:
            with self.suspend():
                try:
                    text = self.editor(initial)
                except EditorError as exc:
                    failed = exc
        except SuspendNotSupported:
            if not self.is_headless:
                raise EditorError("this terminal cannot give the screen to an editor") from None
            text = self.editor(initial)  # headless (tests): there is no terminal to give up
        if failed is not None:
            raise failed
        return text

    # ---------------------------------------------------------------- approval

    async def ask(self, call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        """The session's ``ask``: a modal dialog. Anything but yes or always refuses."""
        command = None
        if call.name == "bash" and isinstance(call.arguments, dict):
            command = str(call.arguments.get("command", ""))  # trusted ones never get here
        prefix = command_prefix(command) if command is not None else None
        title = self._title(call.name, call.arguments)
        diff = preview_diff(self.session, call)
        if command is not None:
            body = command
            question = call_question(f"bash: {command.strip().splitlines()[0][:80]}")
        else:
            body = arguments_text(call.arguments)
            question = call_question(title)
        always = f"always allow {call.name} (this session)"
        if command is not None:
            always = f"always allow `{prefix}`" if prefix else "always allow bash (this session)"
        screen = ApprovalScreen(question, always=always, diff=diff, body=body, tool=call.name)
        choice = await self.choose(screen) or ApprovalChoice(answer="no")
        if choice.answer == "always":
            if prefix is not None and self.session is not None:
                self.session.commands.trust(prefix)
                return True
            return ALWAYS_ALLOW
        if choice.answer == "yes":
            return True
        if choice.instead:
            return Rejected(
                reason=f"The user refused this call and says what to do instead: {choice.instead}"
            )
        return False

    async def choose(self, screen: Screen[Any]) -> Any:
        """Show ``screen`` and wait for its answer (``None`` if none comes: the run was
        aborted, or the dialog was closed another way)."""
        answered = anyio.Event()
        box: list[Any] = []

        def done(answer: Any) -> None:
            box.append(answer)
            answered.set()

        self.push_screen(screen, callback=done)
        try:
            await answered.wait()
        finally:
            if not answered.is_set() and screen.is_attached and self.screen is screen:
                self.pop_screen()  # the run was aborted while the question was open
        return box[0] if box else None
