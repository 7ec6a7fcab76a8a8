"""Streamed markdown cut into finished blocks and one open tail.

An answer arrives a few characters at a time. Re-rendering the whole document on every delta
costs O(document) per delta, O(n²) per answer; instead ``MarkdownBlocks`` cuts the text into
blocks as it goes — a paragraph ends at a blank line, a fenced code block at its closing fence —
so a display renders each finished block once and re-renders only the open tail. A block is
capped at ``max_lines`` lines: a long code block is cut into fenced pieces of its own (each
rendered, highlighted, as a code block), so the tail, and the work per frame, stay bounded
whatever the answer holds.

Nothing here knows about widgets: a display asks how many blocks are finished, renders the new
ones, and renders ``tail`` again.
"""

from __future__ import annotations

import re

__all__ = ["MarkdownBlocks"]

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def _closes(line: str, fence: str) -> bool:
    """Whether ``line`` closes a code block opened with ``fence``."""
    stripped = line.strip()
    return (
        bool(stripped)
        and stripped[0] == fence[0]
        and len(stripped) >= len(fence)
        and stripped == stripped[0] * len(stripped)
    )


class MarkdownBlocks:
    """Markdown text, appended to piece by piece, kept as finished blocks plus an open tail.

    Args:
        max_lines: the most lines a block holds before it is cut.

    Attributes:
        blocks: the finished blocks, in order (each is markdown that renders on its own).
    """

    def __init__(self, *, max_lines: int = 40) -> None:
        self.max_lines = max_lines
        self.blocks: list[str] = []
        self._open: list[str] = []  # complete lines of the open block, newlines kept
        self._line: list[str] = []  # pieces of the line not yet ended by a newline
        self._fence: str | None = None  # the opening fence of the open code block
        self._opener = ""  # the opening fence line, repeated when a code block is cut
        self._size = 0
        self._raw: list[str] = []
        self._content = False  # the open block holds more than blank lines

    @property
    def text(self) -> str:
        """All the text so far, as it arrived (joined on demand, for copying)."""
        if len(self._raw) > 1:
            self._raw[:] = ["".join(self._raw)]
        return self._raw[0] if self._raw else ""

    @property
    def tail(self) -> str:
        """The open block: the text after the last finished block."""
        return "".join(self._open) + "".join(self._line)

    @property
    def in_code(self) -> bool:
        """Whether the tail is inside a fenced code block."""
        return self._fence is not None

    def __len__(self) -> int:
        return self._size

    def append(self, text: str) -> int:
        """Add ``text``; returns how many blocks it finished."""
        self._size += len(text)
        self._raw.append(text)
        before = len(self.blocks)
        start = 0
        while True:
            end = text.find("\n", start)
            if end < 0:
                if start < len(text):
                    self._line.append(text[start:])
                break
            self._line.append(text[start : end + 1])
            line = "".join(self._line)
            self._line.clear()
            self._take_line(line)
            start = end + 1
        return len(self.blocks) - before

    def close(self) -> int:
        """End the text: the tail becomes a finished block; returns how many were finished."""
        before = len(self.blocks)
        rest = self.tail
        if self._fence is not None and rest == self._opener:
            rest = ""  # a code block cut just before its end: nothing left to show
        self._open.clear()
        self._line.clear()
        if rest.strip():
            self.blocks.append(rest)
        self._fence = None
        self._content = False
        return len(self.blocks) - before

    def _finish(self) -> None:
        if self._open:
            self.blocks.append("".join(self._open))
            self._open.clear()
        self._content = False

    def _take_line(self, line: str) -> None:
        fence = self._fence
        if fence is not None:
            self._open.append(line)
            if _closes(line, fence):
                self._fence = None
                self._finish()
            elif len(self._open) >= self.max_lines:
                # Cut a long code block into fenced pieces that each render on their own.
                self._open.append(fence + "\n")
                self._finish()
                self._open.append(self._opener)
            return
        opening = _FENCE.match(line)
        if opening is not None:
            self._finish()
            self._fence = opening.group(1)
            self._opener = line
            self._open.append(line)
            self._content = True
            return
        self._open.append(line)
        if not line.strip():
            # A paragraph ends at a blank line; blank lines before one stay with it.
            if self._content:
                self._finish()
            return
        self._content = True
        if len(self._open) >= self.max_lines:
            self._finish()
