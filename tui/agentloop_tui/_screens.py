"""The dialogs: approval, the session picker, help, and the first-run wizard."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

import msgspec
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from agentloop_coding import unified_diff

from ._diff import render_diff

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual.app import ComposeResult

    from agentloop import ToolCall
    from agentloop.sessions import SessionInfo
    from agentloop_coding import CodingSession

__all__ = [
    "Answer",
    "preview_diff",
    "ApprovalScreen",
    "HelpScreen",
    "SessionPicker",
    "Setup",
    "SetupScreen",
]

Answer: TypeAlias = Literal["yes", "always", "no"]


def preview_diff(session: CodingSession | None, call: ToolCall) -> str | None:
    """The diff a file edit would make, for the dialog (``None`` when not an edit)."""
    args = call.arguments
    if session is None or not isinstance(args, dict) or not isinstance(args.get("path"), str):
        return None
    if call.name not in ("write_file", "edit_file"):
        return None
    try:
        path = session.workspace.resolve(args["path"])
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        if call.name == "write_file":
            new = str(args.get("content", ""))
        else:
            new = old.replace(
                str(args["old"]), str(args["new"]), -1 if args.get("replace_all") else 1
            )
        return unified_diff(old, new, session.workspace.display(path))
    except (OSError, ValueError, KeyError):
        return None  # a preview is a convenience: without one, the dialog shows arguments


class ApprovalScreen(ModalScreen[Answer]):
    """Asks whether a tool call may run: yes, always for this session (this tool), or no.

    Escape answers no: whatever closes the dialog without a yes refuses the call.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer('yes')", "Yes"),
        Binding("a", "answer('always')", "Always"),
        Binding("n", "answer('no')", "No"),
        Binding("escape", "answer('no')", "No", show=False),
    ]

    def __init__(self, tool: str, title: str, arguments: Any, diff: str | None = None) -> None:
        super().__init__(classes="approval")
        self.tool = tool
        self.title_line = title
        self.arguments = arguments
        self.diff = diff

    def _details(self) -> RenderableType:
        if self.diff:
            return render_diff(self.diff, width=self.app.size.width)
        raw = msgspec.json.format(msgspec.json.encode(self.arguments), indent=2).decode()
        lines = raw.splitlines()
        shown = "\n".join(lines[:20]) + ("\n…" if len(lines) > 20 else "")
        return Text(shown, style="dim")

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text.assemble("Allow ", (self.title_line, "bold"), "?"), id="question")
            with VerticalScroll(id="details"):
                yield Static(self._details())
            with Horizontal(id="buttons"):
                yield Button("[y] Yes", id="yes", variant="success")
                yield Button(f"[a] Always for {self.tool} this session", id="always")
                yield Button("[n] No", id="no", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_answer(event.button.id or "no")

    def action_answer(self, answer: str) -> None:
        self.dismiss(answer if answer in ("yes", "always") else "no")  # type: ignore[arg-type]


class SessionPicker(ModalScreen[str | None]):
    """The stored sessions, newest first; Enter resumes one, Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, sessions: list[SessionInfo]) -> None:
        super().__init__(classes="picker")
        self.sessions = sessions

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Resume a session (Enter), or Escape", id="question")
            options = [
                Option(
                    Text.assemble(
                        (info.id, "bold"),
                        f"  {info.message_count} messages  ",
                        (str(info.metadata.get("cwd", "")), "dim"),
                        f"  {info.title}",
                    ),
                    id=info.id,
                )
                for info in self.sessions
            ]
            yield OptionList(*options, id="sessions")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


HELP = """\
Keys
  Enter            send (while the agent runs: steer it, interrupting its tools)
  Alt+Enter        queue a follow-up for when the agent would stop
  Shift+Enter, Ctrl+J   new line          Up/Down   earlier prompts
  Esc, Ctrl+C      abort the run          Ctrl+Q    quit
  Shift+Tab        plan mode on/off (off with a plan: carry it out)
  F2               expand/collapse the selected tool block
  Shift+Left/Right select a tool block    Ctrl+T    show/fold thinking
  PageUp/PageDown, Ctrl+Up/Down, mouse wheel   scroll the conversation
  Ctrl+Y           copy the last answer   Alt+Y     copy its last code block
Commands
  /plan /editor /compact [tokens] /model [provider:model] /thinking [level]
  /usage /system [text] /reset /sessions /copy /help /quit
  #approve on|smart|off   ask about every call, calls that change something, none"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(HELP, markup=False)

    def action_close(self) -> None:
        self.dismiss(None)


class Setup(msgspec.Struct, frozen=True, kw_only=True):
    """What the first-run wizard asked: a provider, its model, a key, whether to remember."""

    provider: str
    model: str
    api_key: str = ""
    remember: bool = False


def _providers() -> list[tuple[str, str, str]]:
    """``(name, default model, key variable)`` of the presets with an API key variable."""
    from agentloop_coding._keys import PREFERRED_PROVIDERS
    from agentloop_providers import get_preset

    found = []
    for name in PREFERRED_PROVIDERS:
        preset = get_preset(name)
        found.append((name, preset.default_model or "", preset.api_key_env or ""))
    return found


class SetupScreen(ModalScreen[Setup | None]):
    """The first-run wizard: no model is configured, so ask for a provider, model and key.

    The key is used by this process (and kept in the system keyring when asked to remember
    and the ``keyring`` package is installed); it is never written to a file.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Quit")]

    def compose(self) -> ComposeResult:
        providers = _providers()
        self._defaults = {name: (model, var) for name, model, var in providers}
        first = providers[0]
        with Vertical(id="dialog"):
            yield Label("Welcome to agentloop. Choose a model to start.", id="question")
            yield Select([(n, n) for n, _, _ in providers], value=first[0], id="provider")
            yield Input(first[1], placeholder="model id", id="model")
            yield Input(placeholder=f"API key ({first[2]})", password=True, id="key")
            yield Checkbox("Remember the model (config file) and key (keyring)", id="remember")
            with Horizontal(id="buttons"):
                yield Button("Start", id="start", variant="success")
                yield Button("Quit", id="quit")

    def on_select_changed(self, event: Select.Changed) -> None:
        model, variable = self._defaults.get(str(event.value), ("", ""))
        self.query_one("#model", Input).value = model
        self.query_one("#key", Input).placeholder = f"API key ({variable})"

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "quit":
            self.dismiss(None)
            return
        provider = str(self.query_one("#provider", Select).value)
        model = self.query_one("#model", Input).value.strip()
        if not model:
            self.notify("the model id is empty", severity="error")
            return
        self.dismiss(
            Setup(
                provider=provider,
                model=model,
                api_key=self.query_one("#key", Input).value.strip(),
                remember=self.query_one("#remember", Checkbox).value,
            )
        )

    def action_cancel(self) -> None:
        self.dismiss(None)
