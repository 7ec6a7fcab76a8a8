"""Asking the user: may this tool call run (or this MCP server use the model)?

``ApprovalScreen`` is the dialog: the question, what would happen (the diff an edit would
make, a command, the arguments; only as many lines as fit, then how many more there are) and
the keys: **y** yes, **a** always (this tool for the session; for a command, commands that
start the same way), **n** no, **t** no, and tell the agent what to do instead. Whatever
closes it without a yes refuses.

The "always" of a command trusts its start (``command_prefix``: ``git status``, ``pytest``) in
the session's ``CommandTrust`` (``session.commands``), which lets later ``bash`` calls starting
with those words run unasked, and nothing that could do more than it says: ``git status;
rm -rf ~`` never passes as ``git status``. A command that is not plain words offers no prefix.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

import msgspec
from rich.console import Group
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from agentloop_coding import unified_diff

from ._diff import render_diff

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual.app import ComposeResult

    from agentloop import ToolCall
    from agentloop_coding import CodingSession

__all__ = [
    "Answer",
    "ApprovalChoice",
    "ApprovalScreen",
    "command_prefix",
    "preview_diff",
]

Answer: TypeAlias = Literal["yes", "always", "no"]
_WORD = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")  # a word no shell would read as more than itself
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9_-]*")


class ApprovalChoice(msgspec.Struct, frozen=True, kw_only=True):
    """The user's answer, and (with ``no``) what the agent should do instead."""

    answer: Answer
    instead: str = ""


def _words(command: str) -> list[str] | None:
    """The words of a one-line command made of plain words only, else ``None``."""
    if "\n" in command.strip():
        return None
    words = command.split()
    if not words or not all(_WORD.fullmatch(word) for word in words):
        return None
    return words


def command_prefix(command: str) -> str | None:
    """The start of ``command`` an "always" would allow: its program, and its subcommand
    when it has one (``git status``, ``npm test``, ``pytest``); ``None`` when the command is
    not a plain list of words (nothing can be allowed by prefix then)."""
    words = _words(command)
    if words is None:
        return None
    if len(words) > 1 and _SUBCOMMAND.fullmatch(words[1]):
        return f"{words[0]} {words[1]}"
    return words[0]


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


def clipped(text: str, max_lines: int, style: str = "") -> RenderableType:
    """``text``, its first ``max_lines`` lines and how many more there are."""
    lines = text.splitlines()
    shown = Text("\n".join(lines[:max_lines]), style=style)
    if len(lines) > max_lines:
        return Group(shown, Text(f"… {len(lines) - max_lines:,} more lines", style="dim italic"))
    return shown


class ApprovalScreen(ModalScreen[ApprovalChoice]):
    """Asks whether something may happen; see the module docs.

    Args:
        question: what is asked (``Allow bash: git status?``).
        always: the "always" button's words.
        tool: what asks (a tool's name, ``sampling``), for whoever looks at the dialog.
        diff: the diff an edit would make.
        body: else, the text shown (a command, arguments as JSON, a server's messages).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer('yes')", "Yes"),
        Binding("a", "answer('always')", "Always"),
        Binding("n", "answer('no')", "No"),
        Binding("t", "instead", "No, and say what to do"),
        Binding("escape", "answer('no')", "No", show=False),
    ]

    def __init__(
        self,
        question: Text,
        *,
        always: str,
        diff: str | None = None,
        body: str = "",
        tool: str = "",
    ) -> None:
        super().__init__(classes="approval")
        self.question = question
        self.tool = tool
        self.always = always
        self.diff = diff
        self.body = body

    def _room(self) -> int:
        """Lines of the dialog's details: what fits on the screen beside the question, the
        keys and the dialog's frame (90 % of the screen at most), no more."""
        return max(3, min(40, int(self.app.size.height * 0.9) - 10))

    def details(self) -> RenderableType:
        room = self._room()
        if self.diff:  # a header line and a "more lines" line besides the diff's own
            return render_diff(self.diff, width=self.app.size.width, max_lines=room - 2)
        return clipped(self.body, room - 1, style="dim")

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.question, id="question")
            with VerticalScroll(id="details"):
                yield Static(self.details())
            # Two rows, so that every key shows on a narrow terminal too.
            with Horizontal(id="buttons"):
                yield Button("y yes", id="yes", variant="success", compact=True)
                yield Button("n no", id="no", variant="error", compact=True)
                yield Button("t no, tell it what to do", id="instead", compact=True)
            with Horizontal(id="always-row", classes="buttons"):
                yield Button(f"a {self.always}", id="always", compact=True)
            yield Input(placeholder="What should it do instead? (Enter sends)", id="say")

    def on_mount(self) -> None:
        self.query_one("#say", Input).display = False

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "instead":
            self.action_instead()
        else:
            self.action_answer(event.button.id or "no")

    def action_answer(self, answer: str) -> None:
        if answer not in ("yes", "always"):
            answer = "no"
        self.dismiss(ApprovalChoice(answer=answer))  # type: ignore[arg-type]

    def action_instead(self) -> None:
        say = self.query_one("#say", Input)
        say.display = True
        say.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(ApprovalChoice(answer="no", instead=event.value.strip()))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While the user writes what to do instead, y, a, n and t are letters.
        say = self.query("#say")
        return not (say and say.first().has_focus and action in ("answer", "instead"))


def call_question(title: str) -> Text:
    return Text.assemble("Allow ", (title, "bold"), "?")


def arguments_text(arguments: Any) -> str:
    """A call's arguments, as indented JSON."""
    try:
        return msgspec.json.format(msgspec.json.encode(arguments), indent=2).decode()
    except (TypeError, msgspec.EncodeError):
        return repr(arguments)
