"""The conversation's entries: the user's messages, answers, tool blocks and notices.

Plain objects a display reads; ``Conversation`` (``_view``) makes and changes them.
"""

from __future__ import annotations

from itertools import count
from typing import Any, Literal, TypeAlias

from ._markdown import MarkdownBlocks

__all__ = [
    "AnyEntry",
    "AssistantEntry",
    "Entry",
    "NoticeEntry",
    "TextPart",
    "ThinkingPart",
    "ToolEntry",
    "ToolStatus",
    "UserEntry",
    "first_line",
]

ToolStatus: TypeAlias = Literal["running", "done", "error", "cancelled"]
_ids = count(1)


def first_line(text: str, limit: int = 120) -> str:
    """The first non-blank line of ``text``, cut at ``limit`` characters."""
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


class Entry:
    """One item of the conversation; ``id`` is unique for the life of the process."""

    kind: str = "entry"

    def __init__(self) -> None:
        self.id = next(_ids)


class UserEntry(Entry):
    """A message the user sent; ``text`` is what they typed."""

    kind = "user"

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class TextPart:
    """Answer text: markdown in finished blocks and an open tail."""

    kind = "text"

    def __init__(self) -> None:
        self.markdown = MarkdownBlocks()


class ThinkingPart:
    """The model's reasoning, plain text: shown dimmed, folded to one line once it is over.

    Kept as an answer's markdown is, in finished blocks of whole lines (a paragraph, or
    ``max_lines`` lines) and an open tail, so that a display draws each block once and only the
    tail again as it grows; its lines are counted as they come, for the folded line.

    Attributes:
        blocks: the finished blocks, in order; each ends with a newline.
        firsts: the number of the first line of each block (0 for the first).
        size: how many characters it has.
    """

    kind = "thinking"

    def __init__(self, *, max_lines: int = 40) -> None:
        self.max_lines = max_lines
        self.blocks: list[str] = []
        self.firsts: list[int] = []
        self.size = 0
        self.done = False
        self.collapsed = False
        self._open: list[str] = []  # complete lines of the open block, newlines kept
        self._line: list[str] = []  # pieces of the line not yet ended by a newline
        self._newlines = 0

    @property
    def text(self) -> str:
        """All the reasoning so far (joined on demand, for copying): the blocks hold it as it
        came, so nothing else keeps a second copy."""
        return "".join(self.blocks) + self.tail

    @property
    def tail(self) -> str:
        """The open block: the text after the last finished block."""
        return "".join(self._open) + "".join(self._line)

    @property
    def tail_first(self) -> int:
        """The number of the tail's first line."""
        return self._newlines - len(self._open)

    @property
    def lines(self) -> int:
        """How many lines the text has, as ``str.splitlines`` counts those ended by ``\\n``."""
        return self._newlines + (1 if self._line else 0)

    def append(self, text: str) -> None:
        """Add ``text`` to the reasoning."""
        if not text:
            return
        self.size += len(text)
        start = 0
        while (end := text.find("\n", start)) >= 0:
            self._line.append(text[start : end + 1])
            line = "".join(self._line)
            self._line.clear()
            self._open.append(line)
            self._newlines += 1
            if not line.strip() or len(self._open) >= self.max_lines:
                self.firsts.append(self._newlines - len(self._open))
                self.blocks.append("".join(self._open))
                self._open.clear()
            start = end + 1
        if start < len(text):
            self._line.append(text[start:])


class AssistantEntry(Entry):
    """An answer. ``streaming`` while it arrives; ``plan`` when made in plan mode."""

    kind = "assistant"

    def __init__(self, *, plan: bool = False) -> None:
        super().__init__()
        self.parts: list[TextPart | ThinkingPart] = []
        self._by_index: dict[int, TextPart | ThinkingPart] = {}
        self.streaming = True
        self.plan = plan
        self.error: str | None = None
        self.aborted = False
        self.retries: list[str] = []
        self.generation = 0  # how many times the answer was started afresh (a retry)

    def restart(self, why: str) -> None:
        """The model call is retried: what streamed so far is void, ``why`` is shown instead."""
        self.parts = []
        self._by_index = {}
        self.retries.append(why)
        self.generation += 1

    def part(self, index: int, kind: type[TextPart | ThinkingPart]) -> Any:
        """The part for the answer's block ``index``, made (as a ``kind``) when it is new."""
        found = self._by_index.get(index)
        if not isinstance(found, kind):
            found = kind()
            self._by_index[index] = found
            self.parts.append(found)
        return found

    @property
    def text(self) -> str:
        """The answer's markdown (thinking left out), as it arrived."""
        return "".join(p.markdown.text for p in self.parts if isinstance(p, TextPart))

    def code_blocks(self) -> list[str]:
        """The fenced code blocks of the answer, their fences removed."""
        blocks: list[str] = []
        current: list[str] | None = None
        fence = ""
        for line in self.text.splitlines(keepends=True):
            stripped = line.strip()
            if current is None and stripped[:3] in ("```", "~~~"):
                current, fence = [], stripped[:3]
            elif current is not None and stripped.startswith(fence) and not stripped.strip(fence):
                blocks.append("".join(current))
                current = None
            elif current is not None:
                current.append(line)
        if current is not None:
            blocks.append("".join(current))
        return blocks


class ToolEntry(Entry):
    """A tool call's block: collapsed to one line, or expanded to its output or diff.

    Attributes:
        started: when it started (the view model's clock); ``None`` for a resumed call.
        ended: when it ended.
        exit_code: a command's exit status (``bash``), when its result says.
    """

    kind = "tool"

    def __init__(
        self, call_id: str, name: str, arguments: Any, title: str, *, started: float | None = None
    ) -> None:
        super().__init__()
        self.call_id = call_id
        self.name = name
        self.arguments = arguments
        self.title = title
        self.status: ToolStatus = "running"
        self.output = ""
        self.diff: str | None = None
        self.expanded = True
        self.collapse_at: float | None = None
        self.started = started
        self.ended: float | None = None
        self.exit_code: int | None = None

    @property
    def summary(self) -> str:
        """What the folded line says after the title: a command's exit status, else the first
        line of the output (or of the error)."""
        if self.exit_code is not None:
            return f"exit {self.exit_code}"
        return first_line(self.output)

    @property
    def command(self) -> str | None:
        """The command line of a ``bash`` call (its first line), else ``None``."""
        if self.name != "bash" or not isinstance(self.arguments, dict):
            return None
        command = str(self.arguments.get("command", "")).strip()
        return command.splitlines()[0] if command else None

    @property
    def label(self) -> str:
        """What ran, in one line: ``bash: pytest -x`` for a command, else the title."""
        command = self.command
        return f"bash: {command}" if command is not None else self.title

    def elapsed(self, now: float) -> float | None:
        """Seconds it has run (until ``now`` while running); ``None`` when not known."""
        if self.started is None:
            return None
        return (self.ended if self.ended is not None else now) - self.started


class NoticeEntry(Entry):
    """A line from the application itself: command output, a warning, an error."""

    kind = "notice"

    def __init__(self, text: str, *, level: Literal["info", "warning", "error"] = "info") -> None:
        super().__init__()
        self.text = text
        self.level = level


AnyEntry: TypeAlias = UserEntry | AssistantEntry | ToolEntry | NoticeEntry
