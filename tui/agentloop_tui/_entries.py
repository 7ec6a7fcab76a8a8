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
    """The model's reasoning: shown dimmed, folded to one line once it is over."""

    kind = "thinking"

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.done = False
        self.collapsed = False

    @property
    def text(self) -> str:
        return "".join(self.pieces)


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

    def part(self, index: int, kind: type[TextPart | ThinkingPart]) -> Any:
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
    """A tool call's block: collapsed to one line, or expanded to its output or diff."""

    kind = "tool"

    def __init__(self, call_id: str, name: str, arguments: Any, title: str) -> None:
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

    @property
    def summary(self) -> str:
        """The first line of the output (or of the error)."""
        return first_line(self.output)


class NoticeEntry(Entry):
    """A line from the application itself: command output, a warning, an error."""

    kind = "notice"

    def __init__(self, text: str, *, level: Literal["info", "warning", "error"] = "info") -> None:
        super().__init__()
        self.text = text
        self.level = level


AnyEntry: TypeAlias = UserEntry | AssistantEntry | ToolEntry | NoticeEntry
