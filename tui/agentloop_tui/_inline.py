"""Inline mode: finished messages go to the terminal's own scrollback; only the live part
(what is still streaming or running, the prompt, the status bar) is drawn by the app.

The top complaint about full-screen agent interfaces is that the conversation lives in the
app, not in the terminal: the terminal's scrollback, search and text selection do not reach it.
Inline, the app is drawn below the shell's prompt; as each entry of the conversation settles
(the user's message at once, an answer when it has ended, a tool block when its call has) it is
printed **above** the app, as plain terminal output, and the terminal scrolls it into its
scrollback like any command's output. Entries are printed in order: one still running holds
back those after it.

``Scrollback`` decides what to print and renders it (``render_entry`` is also what
``print_transcript`` prints). Textual redraws an inline app from its top-left corner each frame
(``InlineUpdate``); ``before_frame`` puts the printed lines in front of the next frame, starting
where the app was: clear to the end of the screen, the lines, then the app below them.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from ._entries import AssistantEntry, NoticeEntry, TextPart, ThinkingPart, ToolEntry, UserEntry

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ._entries import AnyEntry
    from ._view import Conversation

__all__ = ["Scrollback", "render_entry", "settled"]

_BADGES = {"running": "…", "done": "✓", "error": "✗", "cancelled": "⊘"}
_NOTICE_STYLE = {"info": "dim", "warning": "yellow", "error": "red"}


def settled(entry: AnyEntry) -> bool:
    """Whether ``entry`` will not change any more (an answer that ended, a call that did)."""
    if isinstance(entry, AssistantEntry):
        return not entry.streaming
    if isinstance(entry, ToolEntry):
        return entry.status != "running"
    return True


def render_entry(entry: AnyEntry) -> list[RenderableType]:
    """What a finished ``entry`` looks like as terminal output."""
    if isinstance(entry, UserEntry):
        return [Text.assemble(("› ", "bold cyan"), (entry.text, "bold"))]
    if isinstance(entry, NoticeEntry):
        return [Text(entry.text, style=_NOTICE_STYLE.get(entry.level, ""))]
    if isinstance(entry, ToolEntry):
        line = Text(f"  {_BADGES[entry.status]} {entry.label}", style="dim")
        if entry.exit_code is not None:
            line.append(f" → exit {entry.exit_code}")
        elif entry.summary:
            line.append(f" — {entry.summary}")
        return [line]
    shown: list[RenderableType] = []
    if entry.plan:
        shown.append(Text("PLAN", style="bold black on magenta"))
    shown += [Text(line, style="yellow") for line in entry.retries]
    for part in entry.parts:
        if isinstance(part, TextPart) and part.markdown.text:
            shown.append(Markdown(part.markdown.text, code_theme="monokai"))
        elif isinstance(part, ThinkingPart) and part.lines:
            shown.append(Text(f"▸ thinking ({part.lines} lines)", style="dim italic"))
    if entry.aborted:
        shown.append(Text("⊘ aborted", style="magenta"))
    elif entry.error:
        shown.append(Text(f"✗ {entry.error}", style="red"))
    return shown


class Scrollback:
    """The settled entries of ``view`` not printed yet, as terminal output.

    Args:
        view: the conversation.
        color_system: the terminal's (Rich's name for it), for the printed lines.

    Attributes:
        printed: how many entries, from the first, have been printed.
    """

    def __init__(self, view: Conversation, *, color_system: str | None = "truecolor") -> None:
        self.view = view
        self.color_system = color_system
        self.printed = 0
        self.pending = ""

    def reset(self) -> None:
        """The view was cleared (a new session): nothing of it is printed."""
        self.printed = 0

    def take(self, width: int) -> list[AnyEntry]:
        """Render the entries that settled since the last call; returns them."""
        entries = self.view.entries
        start = self.printed
        end = start
        while end < len(entries) and settled(entries[end]):
            end += 1
        if end == start:
            return []
        out = io.StringIO()
        console = Console(
            file=out,
            width=max(20, width),
            force_terminal=True,
            color_system=self.color_system,  # type: ignore[arg-type]
            legacy_windows=False,
            soft_wrap=False,
        )
        for entry in entries[start:end]:
            for renderable in render_entry(entry):
                console.print(renderable)
        self.printed = end
        # The terminal is in raw mode: a line feed does not return the cursor by itself.
        self.pending += out.getvalue().replace("\r\n", "\n").replace("\n", "\r\n")
        return list(entries[start:end])

    def before_frame(self) -> str:
        """What the next frame starts with: the new lines, in the app's place."""
        pending, self.pending = self.pending, ""
        return f"\x1b[J{pending}" if pending else ""


try:  # Textual 8's inline frame; if it moved, lines are printed when the app closes instead
    from textual._compositor import CompositorUpdate, InlineUpdate
except ImportError:  # pragma: no cover - another Textual
    InlineUpdate = None  # type: ignore[assignment,misc]


def with_scrollback(renderable: object, scrollback: Scrollback) -> object:
    """``renderable`` (a frame Textual is about to write), preceded by the lines ``scrollback``
    has to print when it is an inline frame and there are some."""
    if InlineUpdate is None or not scrollback.pending or not isinstance(renderable, InlineUpdate):
        return renderable
    return _Printed(renderable, scrollback)


if InlineUpdate is not None:

    class _Printed(CompositorUpdate):
        """An inline frame with lines to print before it, in the app's place."""

        def __init__(self, frame: InlineUpdate, scrollback: Scrollback) -> None:
            self.frame = frame
            self.scrollback = scrollback

        def render_segments(self, console: Console) -> str:
            # Taken only now: a frame Textual decides not to write keeps them for the next.
            return self.scrollback.before_frame() + self.frame.render_segments(console)
