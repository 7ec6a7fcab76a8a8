"""The widgets: each shows one piece of the view model and is told when it changed.

Widgets hold no state of their own beyond what they have already drawn: an answer's text and
its reasoning (``TextView`` and ``ThinkingView``, in their own module) render each finished
block once and re-render only the open tail, so a long answer costs the same per frame at its
end as at its start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.syntax import Syntax
from rich.text import Text
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static, TextArea

from ._diff import render_diff
from ._entries import AssistantEntry, NoticeEntry, TextPart, ToolEntry, UserEntry
from ._tall import coarse
from ._text_view import CODE_THEME, CURSOR, TextView, ThinkingView

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual import events
    from textual.app import ComposeResult
    from textual.geometry import Size
    from textual.layout import DockArrangeResult

    from ._entries import AnyEntry
    from ._status import Status

__all__ = [
    "AnswerView",
    "ConversationView",
    "EntryView",
    "PromptInput",
    "StatusBar",
    "ToolBlock",
    "ToolPanel",
    "view_for",
]

_BADGES = {
    "running": ("…", "yellow"),
    "done": ("✓", "green"),
    "error": ("✗", "red"),
    "cancelled": ("⊘", "magenta"),
}
_OUTPUT_LINES = 40


class EntryView:
    """What every entry's widget can do: show its entry's current state."""

    entry: Any

    def sync(self) -> None:
        raise NotImplementedError


class UserView(Static, EntryView):
    def __init__(self, entry: UserEntry) -> None:
        super().__init__(Text.assemble(("› ", "bold cyan"), entry.text), classes="user")
        self.entry = entry

    def sync(self) -> None:
        pass


class NoticeView(Static, EntryView):
    def __init__(self, entry: NoticeEntry) -> None:
        super().__init__(entry.text, markup=False, classes=f"notice -{entry.level}")
        self.entry = entry

    def sync(self) -> None:
        pass


class AnswerView(Vertical, EntryView):
    """An assistant's answer: its parts in order, a PLAN label in plan mode, its end state."""

    def __init__(self, entry: AssistantEntry) -> None:
        classes = "answer -plan" if entry.plan else "answer"
        super().__init__(classes=classes)
        self.entry = entry
        self.parts: list[TextView | ThinkingView] = []
        self.footer = Static("", classes="footer", markup=False)
        self.ready = False
        if entry.plan:
            self.border_title = "PLAN"

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        return coarse(super().arrange(size, optimal=optimal))  # its text may be very tall

    def compose(self) -> ComposeResult:
        yield self.footer

    def on_mount(self) -> None:
        self.ready = True
        self.sync()

    def sync(self) -> None:
        if not self.ready:
            return  # on_mount catches up
        entry = self.entry
        while len(self.parts) < len(entry.parts):
            part = entry.parts[len(self.parts)]
            view: TextView | ThinkingView = (
                TextView(part, entry) if isinstance(part, TextPart) else ThinkingView(part, entry)
            )
            self.parts.append(view)
            self.mount(view, before=self.footer)
        for view in self.parts:
            view.sync()
        if not entry.parts and entry.streaming:
            self.footer.update(CURSOR)
        elif entry.aborted:
            self.footer.update("⊘ aborted")
        elif entry.error:
            self.footer.update(f"✗ {entry.error}")
        else:
            self.footer.update("")
        self.footer.display = bool(entry.aborted or entry.error) or (
            entry.streaming and not entry.parts
        )
        self.set_class(entry.aborted, "-aborted")
        self.set_class(entry.error is not None, "-error")


class ConversationView(VerticalScroll):
    """The conversation: a widget per entry, scrolled; an answer in it may be very tall."""

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        return coarse(super().arrange(size, optimal=optimal))


def _output(entry: ToolEntry) -> RenderableType:
    lines = entry.output.splitlines()
    shown = "\n".join(lines[:_OUTPUT_LINES])
    more = len(lines) - _OUTPUT_LINES
    path = entry.arguments.get("path") if isinstance(entry.arguments, dict) else None
    body: RenderableType
    if entry.name == "read_file" and isinstance(path, str) and entry.status == "done":
        body = Syntax(shown, Syntax.guess_lexer(path, shown), theme=CODE_THEME)
    else:
        body = Text(shown, style="red" if entry.status == "error" else "")
    if more > 0:
        from rich.console import Group

        return Group(body, Text(f"… {more} more lines", style="dim"))
    return body


class ToolBlock(Static, EntryView):
    """A tool call: ``▸ ✓ title — first line of output``, expanded to the output or diff."""

    def __init__(self, entry: ToolEntry) -> None:
        super().__init__("", classes="tool")
        self.entry = entry

    def on_mount(self) -> None:
        self.sync()

    def on_resize(self) -> None:
        if self.entry.expanded and self.entry.diff:
            self.sync()

    def header(self) -> Text:
        entry = self.entry
        badge, colour = _BADGES[entry.status]
        arrow = "▾" if entry.expanded else "▸"
        line = Text.assemble(f"{arrow} ", (badge, f"bold {colour}"), " ", (entry.title, "bold"))
        if entry.summary and not entry.expanded:
            line.append(f" — {entry.summary}", style="dim")
        return line

    def sync(self) -> None:
        entry = self.entry
        self.set_class(entry.expanded, "-expanded")
        self.set_class(entry.status == "error", "-error")
        if not entry.expanded:
            self.update(self.header())
            return
        from rich.console import Group

        body: RenderableType
        if entry.diff and entry.status == "done":
            width = self.app.size.width if self.is_attached else 80
            wide = getattr(self.app, "side_by_side_width", 160)
            body = render_diff(entry.diff, width=width, side_by_side_width=wide)
        elif entry.output:
            body = _output(entry)
        else:
            body = Text("running…" if entry.status == "running" else "(no output)", style="dim")
        self.update(Group(self.header(), body))


def view_for(entry: AnyEntry) -> EntryView:
    """The widget showing ``entry``."""
    if isinstance(entry, AssistantEntry):
        return AnswerView(entry)
    if isinstance(entry, ToolEntry):
        return ToolBlock(entry)
    if isinstance(entry, UserEntry):
        return UserView(entry)
    return NoticeView(entry)


def _gauge(status: Status, cells: int) -> Text:
    fraction = status.context_fraction
    if fraction is None:
        return Text("ctx n/a", style="dim")
    filled = min(cells, round(min(fraction, 1.0) * cells))
    colour = status.gauge or "green"
    return Text.assemble(
        "ctx ",
        ("█" * filled, colour),
        ("░" * (cells - filled), "dim"),
        (f" {fraction:.0%}", f"bold {colour}"),
    )


class StatusBar(Static):
    """Model, tokens, cost, state, mode, approval and the context gauge on one line."""

    STATES: ClassVar[dict[str, str]] = {
        "idle": "green",
        "running": "yellow",
        "error": "red",
        "aborted": "magenta",
    }

    def show(self, status: Status, width: int) -> None:
        usage = status.usage
        mode = Text(" PLAN ", style="bold black on magenta")
        if status.mode != "plan":
            mode = Text(" EXECUTE ", style="bold black on green")
        state = Text(f"● {status.state}", style=self.STATES.get(status.state, ""))
        parts: list[Text | str] = [mode, " ", state]
        if width >= 70:
            parts += [" │ ", Text(status.model, style="bold")]
            parts += [f" │ ↑{usage.input:,} ↓{usage.output:,}", f" │ ${status.cost.total:.4f}"]
        if width >= 100:
            parts += [f" │ approve {status.approval}"]
        parts += [" │ ", _gauge(status, 10 if width >= 100 else 5)]
        self.update(Text.assemble(*parts))


class ToolPanel(Static):
    """The tools of this conversation, newest last, with their status (wide layouts)."""

    def show(self, tools: list[ToolEntry], selected: int | None) -> None:
        lines = Text("Tools\n", style="bold")
        start = max(0, len(tools) - 30)
        for index, entry in enumerate(tools[start:], start):
            badge, colour = _BADGES[entry.status]
            style = "reverse" if index == selected else ""
            lines.append(f"{badge} ", style=colour)
            lines.append(f"{entry.title}\n", style=style)
        if not tools:
            lines.append("none yet", style="dim")
        self.update(lines)


class PromptInput(TextArea):
    """The input editor: Enter submits, Shift+Enter or Ctrl+J adds a line, Alt+Enter queues a
    follow-up, Up and Down at the first and last line recall earlier prompts."""

    class Submitted(Message):
        def __init__(self, text: str, *, follow_up: bool) -> None:
            super().__init__()
            self.text = text
            self.follow_up = follow_up

    def __init__(self, **options: Any) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, compact=True, **options)
        self.prompts: list[str] = []
        self._recall: int | None = None  # the index being shown, while browsing
        self._draft = ""

    def submit(self, *, follow_up: bool = False) -> None:
        text = self.text
        if not text.strip():
            return
        if not self.prompts or self.prompts[-1] != text:
            self.prompts.append(text)
        self._recall = None
        self.clear()
        self.post_message(self.Submitted(text, follow_up=follow_up))

    def _show(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        row = self.cursor_location[0]
        handled = True
        if key == "enter":
            self.submit()
        elif key == "alt+enter":
            self.submit(follow_up=True)
        elif key in ("shift+enter", "ctrl+j"):
            self.insert("\n")
        elif key == "up" and row == 0 and self.prompts and self._recall != 0:
            if self._recall is None:
                self._draft, self._recall = self.text, len(self.prompts)
            self._recall -= 1
            self._show(self.prompts[self._recall])
        elif key == "down" and self._recall is not None and row == self.document.line_count - 1:
            self._recall += 1
            if self._recall >= len(self.prompts):
                self._recall = None
                self._show(self._draft)
            else:
                self._show(self.prompts[self._recall])
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)
