"""Unified diffs as syntax-highlighted renderables: one column, or side by side when wide.

The coding tools put a unified diff in each file change's result (``details["diff"]``).
``parse_diff`` reads it into lines with their kind and line numbers; ``render_diff`` shows it
with the file's syntax highlighting (the lexer guessed from its name, as for code blocks) on a
green or red background for added and removed lines. A new file's diff (from ``/dev/null``) is
all additions and a deleted file's (to ``/dev/null``) all deletions, as the diff says. With
``width`` at or past ``side_by_side_width`` the old and new text are shown in two columns.

Each side is highlighted as a whole (context and removed lines for the old side, context and
added lines for the new), so a string or comment spanning lines is lexed right.
"""

from __future__ import annotations

import re
from typing import Literal, TypeAlias

import msgspec
from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

__all__ = ["DiffLine", "ParsedDiff", "parse_diff", "render_diff"]

LineKind: TypeAlias = Literal["context", "added", "removed", "hunk", "note"]

_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_ADDED = "on #12361f"
_REMOVED = "on #3c1618"
_THEME = "monokai"


class DiffLine(msgspec.Struct, frozen=True, kw_only=True):
    """One line of a diff: its kind, text (without the +/-/space prefix) and line numbers."""

    kind: LineKind
    text: str
    old: int | None = None
    new: int | None = None


class ParsedDiff(msgspec.Struct, frozen=True, kw_only=True):
    """A one-file unified diff, read.

    Attributes:
        old_path: the file before (``None``: it did not exist, a new file).
        new_path: the file after (``None``: it was deleted).
        lines: every line after the file headers.
    """

    old_path: str | None
    new_path: str | None
    lines: list[DiffLine]

    @property
    def path(self) -> str:
        """The file's name: the new one, else the old one."""
        return self.new_path or self.old_path or ""

    @property
    def added(self) -> int:
        """How many lines the diff adds."""
        return sum(1 for line in self.lines if line.kind == "added")

    @property
    def removed(self) -> int:
        """How many lines the diff removes."""
        return sum(1 for line in self.lines if line.kind == "removed")


def _name(header: str) -> str | None:
    name = header[4:].split("\t")[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


def parse_diff(diff: str) -> ParsedDiff:
    """Read a unified diff of one file (total: any text gives a result)."""
    old_path: str | None = None
    new_path: str | None = None
    lines: list[DiffLine] = []
    old = new = 0
    for raw in diff.splitlines():
        if raw.startswith("--- ") and not lines:
            old_path = _name(raw)
        elif raw.startswith("+++ ") and not lines:
            new_path = _name(raw)
        elif raw.startswith("@@"):
            found = _HUNK.match(raw)
            if found is not None:
                old, new = int(found.group(1)), int(found.group(2))
            lines.append(DiffLine(kind="hunk", text=raw))
        elif raw.startswith("+"):
            lines.append(DiffLine(kind="added", text=raw[1:], new=new))
            new += 1
        elif raw.startswith("-"):
            lines.append(DiffLine(kind="removed", text=raw[1:], old=old))
            old += 1
        elif raw.startswith("\\"):
            lines.append(DiffLine(kind="note", text=raw))
        else:
            text = raw[1:] if raw.startswith(" ") else raw
            lines.append(DiffLine(kind="context", text=text, old=old, new=new))
            old += 1
            new += 1
    return ParsedDiff(old_path=old_path, new_path=new_path, lines=lines)


def _lexer(path: str, code: str) -> str:
    return Syntax.guess_lexer(path, code) if path else "text"


def _highlight(parsed: ParsedDiff, side: Literal["old", "new"]) -> dict[int, Text]:
    """The highlighted text of each line on one side, by the line's index in ``parsed``."""
    wanted = ("context", "removed") if side == "old" else ("context", "added")
    indexes = [i for i, line in enumerate(parsed.lines) if line.kind in wanted]
    if not indexes:
        return {}
    code = "\n".join(parsed.lines[i].text for i in indexes)
    syntax = Syntax(code, _lexer(parsed.path, code), theme=_THEME, background_color="default")
    highlighted = syntax.highlight(code).split("\n", allow_blank=True)
    return {i: highlighted[n] for n, i in enumerate(indexes) if n < len(highlighted)}


def _header(parsed: ParsedDiff) -> Text:
    if parsed.old_path is None:
        what = f"new file {parsed.new_path}"
    elif parsed.new_path is None:
        what = f"deleted {parsed.old_path}"
    else:
        what = parsed.path
    return Text.assemble(
        (what, "bold"), "  ", (f"+{parsed.added}", "green"), " ", (f"-{parsed.removed}", "red")
    )


def _unified(parsed: ParsedDiff, old: dict[int, Text], new: dict[int, Text]) -> Table:
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(justify="right", style="dim", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1)
    for i, line in enumerate(parsed.lines):
        if line.kind == "hunk" or line.kind == "note":
            table.add_row("", "", Text(line.text, style="cyan dim"))
        elif line.kind == "added":
            text = new.get(i, Text(line.text)).copy()
            text.stylize(_ADDED)
            table.add_row(str(line.new), Text("+", "green bold"), text, style=_ADDED)
        elif line.kind == "removed":
            text = old.get(i, Text(line.text)).copy()
            text.stylize(_REMOVED)
            table.add_row(str(line.old), Text("-", "red bold"), text, style=_REMOVED)
        else:
            table.add_row(str(line.new), " ", new.get(i, Text(line.text)))
    return table


def _side_by_side(parsed: ParsedDiff, old: dict[int, Text], new: dict[int, Text]) -> Table:
    table = Table.grid(padding=(0, 1), expand=True)
    for _ in range(2):
        table.add_column(justify="right", style="dim", no_wrap=True)
        table.add_column(ratio=1)
    left: list[tuple[str, Text]] = []
    right: list[tuple[str, Text]] = []

    def flush() -> None:
        for n in range(max(len(left), len(right))):
            lno, ltext = left[n] if n < len(left) else ("", Text(""))
            rno, rtext = right[n] if n < len(right) else ("", Text(""))
            table.add_row(lno, ltext, rno, rtext)
        left.clear()
        right.clear()

    for i, line in enumerate(parsed.lines):
        if line.kind == "removed":
            text = old.get(i, Text(line.text)).copy()
            text.stylize(_REMOVED)
            left.append((str(line.old), text))
        elif line.kind == "added":
            text = new.get(i, Text(line.text)).copy()
            text.stylize(_ADDED)
            right.append((str(line.new), text))
        else:
            flush()
            if line.kind in ("hunk", "note"):
                table.add_row("", Text(line.text, "cyan dim"), "", Text(""))
            else:
                table.add_row(
                    str(line.old), old.get(i, Text(line.text)), str(line.new), new.get(i, Text(""))
                )
    flush()
    return table


def render_diff(
    diff: str | ParsedDiff,
    *,
    width: int = 80,
    side_by_side_width: int = 160,
    max_lines: int | None = None,
) -> RenderableType:
    """``diff`` as a renderable: a header (the file, lines added and removed) over the lines,
    unified, or side by side when ``width`` is at least ``side_by_side_width``.

    With ``max_lines``, only that many lines of the diff are highlighted and shown, followed
    by how many more there are: a new file of thousands of lines costs what a short one does.
    """
    parsed = diff if isinstance(diff, ParsedDiff) else parse_diff(diff)
    header = _header(parsed)
    more = 0
    if max_lines is not None and len(parsed.lines) > max_lines:
        more = len(parsed.lines) - max_lines
        parsed = msgspec.structs.replace(parsed, lines=parsed.lines[:max_lines])
    old, new = _highlight(parsed, "old"), _highlight(parsed, "new")
    wide = width >= side_by_side_width and parsed.old_path is not None
    body = _side_by_side(parsed, old, new) if wide else _unified(parsed, old, new)
    if more:
        return Group(header, body, Text(f"… {more:,} more lines", style="dim italic"))
    return Group(header, body)
