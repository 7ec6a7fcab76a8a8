"""What the prompt offers as you type: slash commands after a leading ``/``, and paths after
``@`` (a file to attach); and the files a sent prompt attaches.

``complete(text, cursor, ...)`` looks at the text before the cursor and returns the
``Suggestion``\\ s that fit, each saying what it replaces. Paths are listed inside the
workspace only (``..`` and absolute paths are not offered), a bounded number per directory.

``attach(text, resolve)`` finds the ``@path`` words of a prompt that name files (through the
session's workspace, so the sandbox decides what may be read) and returns their text to send
with the prompt, bounded by ``MAX_ATTACHED`` characters a file.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import msgspec

from agentloop import AgentError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from agentloop import AgentInput

__all__ = ["MAX_ATTACHED", "Attachment", "Suggestion", "attach", "complete", "with_files"]

MAX_ATTACHED = 100_000
"""The most characters of one attached file sent with a prompt."""
_MAX_LISTED = 200  # directory entries looked at per completion
_MAX_SHOWN = 30  # suggestions offered at once
_AT_WORD = re.compile(r"(?:^|(?<=\s))@([^\s@]*)$")
_AT_WORDS = re.compile(r"(?:^|(?<=\s))@([^\s@]+)")


class Suggestion(msgspec.Struct, frozen=True, kw_only=True):
    """One completion: ``text`` replaces the characters ``start`` to ``end`` of the input.

    Attributes:
        text: what goes in.
        start: the first character replaced.
        end: the character after the last replaced.
        label: what the list shows.
        detail: what it shows beside it, dimmed (a description, an argument hint).
    """

    text: str
    start: int
    end: int
    label: str
    detail: str = ""


def complete(
    text: str,
    cursor: int,
    *,
    commands: Iterable[tuple[str, str]] = (),
    root: Path | None = None,
) -> list[Suggestion]:
    """The suggestions for the input ``text`` with the cursor at character ``cursor``.

    Args:
        text: the whole input.
        cursor: where the cursor is (a character offset).
        commands: ``(name, description)`` of every slash command (without the slash).
        root: the workspace, for ``@`` paths (``None``: none are offered).
    """
    before = text[:cursor]
    if before.startswith("/") and " " not in before and "\n" not in before:
        prefix = before[1:].lower()
        return [
            Suggestion(text=f"/{name}", start=0, end=cursor, label=f"/{name}", detail=detail)
            for name, detail in sorted(commands)
            if name.lower().startswith(prefix)
        ][:_MAX_SHOWN]
    match = _AT_WORD.search(before)
    if match is None or root is None:
        return []
    return _paths(match.group(1), root, start=match.start(1), end=cursor)


def _paths(typed: str, root: Path, *, start: int, end: int) -> list[Suggestion]:
    folder, _, prefix = typed.rpartition("/")
    if typed.startswith(("/", "~")) or ".." in folder.split("/"):
        return []  # outside the workspace: not offered
    directory = root / folder if folder else root
    found: list[tuple[bool, str]] = []
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= _MAX_LISTED:
                    break
                name = entry.name
                if not name.startswith(prefix) or (name.startswith(".") and not prefix):
                    continue
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    continue
                found.append((not is_dir, name))
    except OSError:
        return []
    suggestions = []
    for is_file, name in sorted(found)[:_MAX_SHOWN]:
        path = f"{folder}/{name}" if folder else name
        shown = path if is_file else f"{path}/"
        suggestions.append(
            Suggestion(text=shown, start=start, end=end, label=f"@{shown}", detail="")
        )
    return suggestions


class Attachment(msgspec.Struct, frozen=True, kw_only=True):
    """A file a prompt attaches: its path as written, and the text sent with the prompt."""

    path: str
    text: str
    lines: int
    truncated: bool = False


def attach(text: str, resolve: Callable[[str], Path]) -> tuple[list[Attachment], list[str]]:
    """The files the ``@path`` words of ``text`` name, and why the others were left out.

    Args:
        text: the prompt.
        resolve: the path of a name, checked by the workspace's sandbox (raises an
            ``AgentError``, ``ValueError`` or ``OSError`` when it may not be read).
    """
    attached: list[Attachment] = []
    problems: list[str] = []
    seen: set[str] = set()
    for match in _AT_WORDS.finditer(text):
        name = match.group(1).rstrip(".,;:!?)")
        if name in seen or name.endswith("/"):
            continue
        seen.add(name)
        try:
            path = resolve(name)
            if not path.is_file():
                continue  # an @ that names no file is just text (an e-mail, a handle)
            with path.open("rb") as file:
                data = file.read(MAX_ATTACHED * 4 + 1)
        except (OSError, ValueError, AgentError) as exc:  # the sandbox refused it, say
            problems.append(f"@{name} not attached: {exc}")
            continue
        if b"\0" in data[:8192]:
            problems.append(f"@{name} not attached: it is not a text file")
            continue
        body = data.decode("utf-8", errors="replace")
        truncated = len(body) > MAX_ATTACHED
        body = body[:MAX_ATTACHED]
        note = f"\n[… cut at {MAX_ATTACHED:,} characters]" if truncated else ""
        attached.append(
            Attachment(
                path=name,
                text=f'<file path="{name}">\n{body}{note}\n</file>',
                lines=body.count("\n") + (0 if body.endswith("\n") else 1),
                truncated=truncated,
            )
        )
    return attached, problems


def with_files(text: str, resolve: Callable[[str], Path], say: Callable[..., None]) -> AgentInput:
    """The prompt to send for ``text``: itself, or a message with the files its ``@path``
    words name after it; ``say`` tells the user what was attached and what was not."""
    if "@" not in text:
        return text
    from agentloop import Text, UserMessage

    attached, problems = attach(text, resolve)
    for line in problems:
        say(line, level="warning")
    if not attached:
        return text
    for item in attached:
        cut = " (cut)" if item.truncated else ""
        say(f"attached {item.path} ({item.lines} lines){cut}")
    return UserMessage(content=[Text(text=text), *(Text(text=item.text) for item in attached)])
