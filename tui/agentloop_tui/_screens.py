"""The pickers and help: stored sessions, models, earlier prompts, and the keys.

Each picker is a filter box over a list: type to narrow it, Up and Down to move, Enter to
choose, Escape to close without choosing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from textual.app import ComposeResult

    from agentloop.sessions import SessionInfo

__all__ = [
    "HelpScreen",
    "HistorySearch",
    "ModelChoice",
    "ModelPicker",
    "Picker",
    "SessionPicker",
    "catalog_models",
    "help_text",
    "when",
]


def when(milliseconds: int, now: float | None = None) -> str:
    """A time as people say it: ``just now``, ``5 min ago``, ``3 h ago``, ``2 d ago``."""
    if milliseconds <= 0:
        return "unknown time"
    seconds = (time.time() if now is None else now) - milliseconds / 1000
    for limit, unit, size in ((3600, "min", 60), (86_400, "h", 3600), (30 * 86_400, "d", 86_400)):
        if seconds < limit:
            return "just now" if seconds < 60 else f"{int(seconds // size)} {unit} ago"
    return time.strftime("%Y-%m-%d", time.localtime(milliseconds / 1000))


class Picker(ModalScreen[str | None]):
    """A list to choose from, narrowed by what is typed; dismissed with the chosen id."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, rows: list[tuple[str, Text, str]], *, empty: str) -> None:
        """``rows``: ``(id, what the row shows, the text the filter searches)``."""
        super().__init__(classes="picker")
        self.heading = title
        self.rows = rows
        self.empty = empty

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.heading, id="question")
            yield Input(placeholder="type to filter", id="filter")
            yield OptionList(id="choices")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one("#filter", Input).focus()

    def _fill(self, query: str) -> None:
        words = query.lower().split()
        choices = self.query_one("#choices", OptionList)
        choices.clear_options()
        shown = [
            Option(row, id=key)
            for key, row, searched in self.rows
            if all(word in searched.lower() for word in words)
        ]
        if shown:
            choices.add_options(shown)
            choices.highlighted = 0
        else:
            choices.add_option(Option(Text(self.empty, style="dim"), disabled=True))

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def on_key(self, event: Any) -> None:
        choices = self.query_one("#choices", OptionList)
        if event.key in ("up", "down"):
            event.stop()
            (choices.action_cursor_up if event.key == "up" else choices.action_cursor_down)()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        choices = self.query_one("#choices", OptionList)
        index = choices.highlighted
        if index is not None:
            option = choices.get_option_at_index(index)
            if not option.disabled:
                self.dismiss(option.id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class SessionPicker(Picker):
    """The stored sessions with something in them, newest first: when, the first prompt as a
    title, how many messages, the model."""

    def __init__(self, sessions: list[SessionInfo], *, now: float | None = None) -> None:
        self.sessions = sessions
        rows = []
        for info in sessions:
            title = info.title or "(untitled)"
            model = info.model or ""
            row = Text.assemble(
                (f"{when(info.updated_at or info.created_at, now):>12}  ", "dim"),
                (title, "bold"),
                (f"  {info.message_count} messages", ""),
                (f"  {model}", "cyan"),
            )
            rows.append((info.id, row, f"{title} {model} {info.id}"))
        super().__init__("Resume a session (Enter), or Escape", rows, empty="no stored sessions")


class ModelChoice(msgspec.Struct, frozen=True, kw_only=True):
    """A model the picker offers: its string, context window and prices per million tokens."""

    model: str
    context_window: int | None = None
    input_price: float | None = None
    output_price: float | None = None
    note: str = ""


def catalog_models() -> list[ModelChoice]:
    """The catalog's models (and the installed local ones), by provider."""
    from agentloop_providers import presets

    found: list[ModelChoice] = []
    for provider, preset in presets().items():
        for model_id, info in sorted(preset.models.items()):
            pricing = info.pricing
            found.append(
                ModelChoice(
                    model=f"{provider}:{model_id}",
                    context_window=info.context_window,
                    input_price=pricing.input if pricing else None,
                    output_price=pricing.output if pricing else None,
                )
            )
    try:
        from agentloop_local import available_models
    except ImportError:
        return found
    for local in available_models():
        if local.installed:
            found.append(
                ModelChoice(
                    model=local.model_string,
                    context_window=local.preset.context_window,
                    input_price=0.0,
                    output_price=0.0,
                    note="in-process",
                )
            )
    return found


class ModelPicker(Picker):
    """The models to switch to: each with its context window and price."""

    def __init__(self, models: list[ModelChoice], current: str) -> None:
        rows = []
        for choice in models:
            window = f"{choice.context_window // 1000:,}k ctx" if choice.context_window else ""
            price = ""
            if choice.input_price is not None and choice.output_price is not None:
                price = f"${choice.input_price:g} / ${choice.output_price:g} per M"
            mark = "● " if choice.model == current else "  "
            row = Text.assemble(
                mark,
                (f"{choice.model:<44}", "bold"),
                (f"{window:>11}  ", "cyan"),
                (price, "dim"),
                (f"  {choice.note}" if choice.note else "", "green"),
            )
            rows.append((choice.model, row, choice.model))
        super().__init__("Switch the model (Enter), or Escape", rows, empty="no such model")


class HistorySearch(Picker):
    """Ctrl+R: the earlier prompts of this project, newest first."""

    def __init__(self, prompts: list[str]) -> None:
        rows = []
        for index, prompt in enumerate(prompts):
            first = prompt.strip().splitlines()[0] if prompt.strip() else ""
            lines = prompt.count("\n") + 1
            row = Text.assemble(
                first[:100], (f"  (+{lines - 1} lines)" if lines > 1 else "", "dim")
            )
            rows.append((str(index), row, prompt))
        self.prompts = prompts
        super().__init__("Search earlier prompts (Enter puts it in the prompt)", rows, empty="none")


def help_text(newline: str) -> str:
    """The keys and commands; ``newline`` is the key that adds a line in this terminal."""
    return f"""\
Keys
  Enter            send (while the agent runs: steer it, interrupting its tools)
  Alt+Enter        queue a follow-up for when the agent would stop
  {newline + ", Ctrl+J" if newline != "Ctrl+J" else "Ctrl+J":<16} new line   Up/Down  earlier prompts   Ctrl+R  search them
  Tab              complete a /command or an @path (@path attaches a file)
  Esc, Ctrl+C      abort the run    Ctrl+C (idle) clears the prompt, twice quits
  Esc Esc          edit the previous prompt (the conversation goes back to before it)
  Ctrl+Q           quit             Shift+Tab  plan mode on/off (off with a plan: run it)
  F2               fold/open the newest (or selected) tool block
  Shift+Left/Right select a tool block    Ctrl+T    show/fold thinking
  PageUp/PageDown, Ctrl+Up/Down, wheel    scroll    End  back to the newest output
  Ctrl+Y           copy the last answer   Alt+Y     copy its last code block
Commands
  /plan /editor /compact [tokens] /model [provider:model] /thinking [level]
  /usage /system [text] /reset /sessions /copy /help /quit, and MCP prompts (/mcp__...)
  #approve on|smart|off   ask about every call, calls that change something, none"""


class HelpScreen(ModalScreen[None]):
    """The keys and commands."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", show=False),
    ]

    def __init__(self, newline: str = "Ctrl+J") -> None:
        super().__init__()
        self.newline = newline

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(help_text(self.newline), markup=False)

    def action_close(self) -> None:
        self.dismiss(None)
