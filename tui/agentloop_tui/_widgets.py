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
from textual.widgets import Static

from ._diff import render_diff
from ._entries import AssistantEntry, NoticeEntry, TextPart, ToolEntry, UserEntry
from ._tall import coarse
from ._text_view import CODE_THEME, CURSOR, TextView, ThinkingView

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual.app import ComposeResult
    from textual.geometry import Size
    from textual.layout import DockArrangeResult
    from textual.widget import Widget

    from ._entries import AnyEntry
    from ._status import Status

__all__ = [
    "AnswerView",
    "ConversationView",
    "EntryView",
    "StatusBar",
    "ToolBlock",
    "ToolPanel",
    "Welcome",
    "view_for",
]

_BADGES = {
    "running": ("…", "yellow"),
    "done": ("✓", "green"),
    "error": ("✗", "red"),
    "cancelled": ("⊘", "magenta"),
}
_HEAD_LINES = 12  # a tool's output: its first lines ...
_TAIL_LINES = 24  # ... and its last, where failures and exit codes are
_DIFF_LINES = 300  # the most lines of a diff a tool block shows


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
        self.retries = Static("", classes="retries", markup=False)
        self.footer = Static("", classes="footer", markup=False)
        self.ready = False
        self.generation = 0
        if entry.plan:
            self.border_title = "PLAN"

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        return coarse(super().arrange(size, optimal=optimal))  # its text may be very tall

    def compose(self) -> ComposeResult:
        yield self.retries
        yield self.footer

    def on_mount(self) -> None:
        self.ready = True
        self.sync()

    def sync(self) -> None:
        if not self.ready:
            return  # on_mount catches up
        entry = self.entry
        if entry.generation != self.generation:  # a retry: what streamed before is void
            self.generation = entry.generation
            for old in self.parts:
                old.remove()
            self.parts = []
        self.retries.update("\n".join(entry.retries))
        self.retries.display = bool(entry.retries)
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
    """The conversation: a widget per entry, scrolled; an answer in it may be very tall.

    It follows new output while it is scrolled to the bottom, and only then: scrolling up
    stops following, coming back to the bottom (by any means) follows again. Textual's anchor
    keeps it at the bottom as the content grows; whether it is released is decided here, from
    where the view is, rather than by every scroll request (Textual releases it on each one,
    so a PageDown pressed at the bottom, which moves nothing, left it released for good).
    """

    marker: Widget | None = None
    """Shown while new output arrives out of view ("new output below"); hidden on return."""

    @property
    def following(self) -> bool:
        return not self._anchor_released

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        return coarse(super().arrange(size, optimal=optimal))

    def release_anchor(self) -> None:
        self.scroll_target_y = self.scroll_y  # what Textual's does, but the anchor holds

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._anchor_released = new_value < self.max_scroll_y
        if not self._anchor_released and self.marker is not None:
            self.marker.display = False

    def follow(self) -> None:
        """Show the newest output, and follow it from now on."""
        self.anchor()
        if self.marker is not None:
            self.marker.display = False

    def scroll_by(self, lines: int) -> None:
        """Scroll ``lines`` down (up when negative), at once: quick presses add up."""
        self.scroll_to(y=self.scroll_y + lines, animate=False, immediate=True)


def _output(entry: ToolEntry) -> RenderableType:
    """A tool's output: all of it when short, else its head and its tail (where a failure and
    a command's exit status are) with how many lines are left out between them."""
    from rich.console import Group

    lines = entry.output.splitlines()
    path = entry.arguments.get("path") if isinstance(entry.arguments, dict) else None
    style = "red" if entry.status == "error" else ""
    if entry.name == "read_file" and isinstance(path, str) and entry.status == "done":
        shown = "\n".join(lines[: _HEAD_LINES + _TAIL_LINES])
        more = len(lines) - _HEAD_LINES - _TAIL_LINES
        body = Syntax(shown, Syntax.guess_lexer(path, shown), theme=CODE_THEME)
        if more > 0:
            return Group(body, Text(f"… {more:,} more lines", style="dim"))
        return body
    if len(lines) <= _HEAD_LINES + _TAIL_LINES + 1:
        return Text(entry.output.rstrip("\n"), style=style)
    left_out = len(lines) - _HEAD_LINES - _TAIL_LINES
    return Group(
        Text("\n".join(lines[:_HEAD_LINES]), style=style),
        Text(f"… {left_out:,} lines …", style="dim italic"),
        Text("\n".join(lines[-_TAIL_LINES:]), style=style),
    )


def _seconds(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


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
        """``▸ ✓ bash: pytest -x → exit 1 · 3.2s``; while it runs, how long it has and that
        Esc interrupts it."""
        entry = self.entry
        badge, colour = _BADGES[entry.status]
        arrow = "▾" if entry.expanded else "▸"
        line = Text.assemble(f"{arrow} ", (badge, f"bold {colour}"), " ", (entry.label, "bold"))
        clock = getattr(self.app, "view", None)
        elapsed = entry.elapsed(clock.clock()) if clock is not None else None
        if entry.status == "running":
            if elapsed is not None:
                line.append(f" · {_seconds(elapsed)}", style="yellow")
            line.append(" · esc to interrupt", style="dim")
            return line
        if entry.exit_code is not None:
            line.append(f" → exit {entry.exit_code}", style="red" if entry.exit_code else "dim")
        elif entry.summary and not entry.expanded:
            line.append(f" — {entry.summary}", style="dim")
        if elapsed is not None and elapsed >= 1:
            line.append(f" · {_seconds(elapsed)}", style="dim")
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
            body = render_diff(
                entry.diff, width=width, side_by_side_width=wide, max_lines=_DIFF_LINES
            )
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
            lines.append(f"{entry.label}\n", style=style)
        if not tools:
            lines.append("none yet", style="dim")
        self.update(lines)


class Welcome(Static):
    """The first screen while nothing has been asked: what to do, with which model, where."""

    _shown: tuple[str, str, str | None, str] | None = None

    def show(self, *, model: str, workspace: str, session: str | None, newline: str) -> None:
        if self._shown == (model, workspace, session, newline):
            return  # drawn already
        self._shown = (model, workspace, session, newline)
        if not model:
            self.update(Text("opening the session…", style="dim"))
            return
        recorded = f"session {session}" if session else "not recorded"
        self.update(
            Text.assemble(
                ("agentloop", "bold"),
                " · a coding agent working in ",
                (workspace or "…", "bold"),
                "\n",
                ("model ", "dim"),
                (model or "…", "bold cyan"),
                (f" · {recorded}", "dim"),
                "\n\n",
                "Type a task and press ",
                ("Enter", "bold"),
                ". ",
                (newline, "bold"),
                " adds a line, ",
                ("Alt+Enter", "bold"),
                " queues a follow-up while it works.\n",
                ("/", "bold"),
                " commands · ",
                ("@", "bold"),
                " attach a file · ",
                ("Shift+Tab", "bold"),
                " plan mode · ",
                ("Esc", "bold"),
                " interrupt · ",
                ("/help", "bold"),
                " keys · ",
                ("Ctrl+Q", "bold"),
                " quit",
            )
        )
