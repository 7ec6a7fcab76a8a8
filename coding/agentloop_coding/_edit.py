"""The tools that change files: ``write_file`` and ``edit_file``.

Both write atomically (a temporary file in the same directory, then a rename over the file;
see ``_fs``), keep an existing file's permission bits, and describe the change in the
result's ``details``::

    {"path": "src/app.py",        # as shown to the model (relative to the workspace)
     "diff": "--- a/src/app.py\\n+++ b/src/app.py\\n@@ ...",   # unified diff
     "created": False,            # write_file: the file did not exist before
     "old_text": "...",           # edit_file: the text replaced; write_file: the old content
     "new_text": "...",           #   (None for a new file, or when larger than the cap)
     "added": 3, "removed": 1,    # lines
     "base_sha256": "...",        # SHA-256 of the content changed (None for a new file)
     "sha256": "..."}             # SHA-256 of the content written

so that a display (the TUI's inline diff, an editor over ACP) can show the change without
reading the file again. ``edit_file`` replaces an exact piece of text that must occur exactly
once (or everywhere, with ``replace_all``); a piece that is missing or ambiguous is an error
result telling the model how to fix its call.

**No change that reports success is lost.** Changes to one file are serialised
(``Workspace.lock``), so two edits of one file in one batch apply one after the other; and a
file that something else (a command, another program) wrote between a change's read and its
write is not overwritten: the change fails, saying so. Through an editor (ACP) the file is
read and written by the editor, unsaved buffers included.
"""

from __future__ import annotations

import difflib
import hashlib
from typing import TYPE_CHECKING, Any

from agentloop import AgentToolResult

from ._base import NOT_PATH, CodingTool, decode_text, looks_binary
from ._errors import ToolInputError, describe_os_error

if TYPE_CHECKING:
    from pathlib import Path

    from agentloop.abc import OnUpdate

    from ._fs import Stamp
    from ._workspace import Editor


__all__ = ["EditFile", "WriteFile", "unified_diff"]

_MAX_FILE = 10_000_000  # bytes a file may have to be edited or diffed
_MAX_DETAIL = 200_000  # characters of old/new text or diff kept in details


def unified_diff(old: str, new: str, shown: str) -> str:
    """A unified diff (3 lines of context) from ``old`` to ``new`` of the file ``shown``."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{shown}" if old else "/dev/null",
        tofile=f"b/{shown}",
    )
    out: list[str] = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _counts(diff: str) -> tuple[int, int]:
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def _capped(text: str | None) -> str | None:
    return text if text is None or len(text) <= _MAX_DETAIL else None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _change_details(
    shown: str,
    old: str,
    new: str,
    *,
    old_text: str | None,
    new_text: str | None,
    before: bytes | None,
    after: bytes,
) -> dict[str, Any]:
    diff = unified_diff(old, new, shown)
    added, removed = _counts(diff)
    return {
        "path": shown,
        "diff": diff if len(diff) <= _MAX_DETAIL else None,
        "old_text": _capped(old_text),
        "new_text": _capped(new_text),
        "added": added,
        "removed": removed,
        "base_sha256": None if before is None else _sha256(before),
        "sha256": _sha256(after),
    }


class WriteFile(CodingTool):
    """Create a file, or replace its whole content."""

    name = "write_file"
    label = "Write"
    kind = "edit"
    read_only = False
    requires_approval = True
    description = (
        "Write a file with the given content, creating it (and its directories) if needed or "
        "replacing everything in it. To change part of an existing file, use edit_file."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file, relative to the workspace."},
            "content": {**NOT_PATH, "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    def title(self, arguments: Any) -> str:
        return f"Write {self.shown(arguments)}"

    async def run(self, arguments: dict[str, Any], on_update: OnUpdate) -> AgentToolResult:
        path = self.workspace.resolve(arguments["path"])
        content: str = arguments["content"]
        shown = self.workspace.display(path)
        editor = self.workspace.editor
        async with self.workspace.lock(path):
            if editor is not None and editor.can_write:
                details = await self._write_in_editor(editor, path, shown, content)
            else:
                details = await self.in_thread(self._write, path, shown, content)
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        if details["created"]:
            text = f"Created {shown} ({lines} lines)."
        else:
            text = f"Wrote {shown} ({lines} lines, +{details['added']} -{details['removed']})."
        return AgentToolResult.text(text, details=details)

    def _old(self, path: Path, shown: str) -> tuple[bytes | None, Stamp | None]:
        """The current content (``None``: no file) and its stamp."""
        beneath = self.workspace.beneath
        with beneath.locate(path, shown, make_dirs=False) as at:
            stamp, _ = beneath.stamp(at, shown)
        if stamp is None:
            return None, None
        if stamp.size > _MAX_FILE:
            return b"", stamp  # too large to diff: the file is replaced all the same
        return beneath.read(path, shown, limit=_MAX_FILE)

    def _write(self, path: Path, shown: str, content: str) -> dict[str, Any]:
        new = content.encode("utf-8")
        try:
            try:
                before, stamp = self._old(path, shown)
            except FileNotFoundError:
                before, stamp = None, None  # a directory on the way is missing: made below
            self.workspace.beneath.write(path, shown, new, base=stamp)
        except OSError as exc:
            raise ToolInputError(describe_os_error(exc, shown)) from None
        old = "" if before is None or looks_binary(before) else decode_text(before)
        created = before is None
        details = _change_details(
            shown,
            old,
            content,
            old_text=None if created else old,
            new_text=content,
            before=before,
            after=new,
        )
        details["created"] = created
        return details

    async def _write_in_editor(
        self, editor: Editor, path: Path, shown: str, content: str
    ) -> dict[str, Any]:
        real, exists = await self.in_thread(_real_target, self.workspace, path, shown)
        old = await editor.read_text(real) if exists else None
        await editor.write_text(real, content)
        details = _change_details(
            shown,
            old or "",
            content,
            old_text=old,
            new_text=content,
            before=None if old is None else old.encode(),
            after=content.encode(),
        )
        details["created"] = old is None
        return details


def _real_target(workspace: Any, path: Path, shown: str) -> tuple[Path, bool]:
    """The real path a change of ``path`` goes to (checked beneath the roots), and whether a
    file is there; for an editor, which is given a path without links to follow."""
    beneath = workspace.beneath
    try:
        with beneath.locate(path, shown) as at:
            stamp, _ = beneath.stamp(at, shown)
            return at.real, stamp is not None
    except FileNotFoundError:
        return path, False  # its directory does not exist yet: nothing to follow


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def apply_edit(
    text: str, old: str, new: str, replace_all: bool, shown: str
) -> tuple[str, int, int, str, str]:
    """``text`` with ``old`` replaced by ``new``; with the count, the first line changed and
    the pieces as used (line ends adapted to the file's).

    Raises:
        ToolInputError: ``old`` is missing, or occurs more than once without ``replace_all``.
    """
    if old not in text and "\r\n" in text and "\r\n" not in old:
        # The model writes "\n"; a file with Windows line ends says "\r\n".
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    if count == 0:
        raise ToolInputError(
            f"`old` was not found in {shown}. Read the file again (read_file) and copy the "
            "text exactly, whitespace and indentation included, without the line numbers."
        )
    if count > 1 and not replace_all:
        starts: list[int] = []
        at = text.find(old)
        while at != -1 and len(starts) < 10:
            starts.append(_line_of(text, at))
            at = text.find(old, at + 1)
        where = ", ".join(str(n) for n in starts)
        raise ToolInputError(
            f"`old` occurs {count} times in {shown} (starting on lines {where}); include "
            "more surrounding lines so that it occurs once, or set replace_all to true"
        )
    first = _line_of(text, text.find(old))
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return updated, (count if replace_all else 1), first, old, new


class EditFile(CodingTool):
    """Replace an exact piece of a file's text."""

    name = "edit_file"
    label = "Edit"
    kind = "edit"
    read_only = False
    requires_approval = True
    description = (
        "Edit a file by replacing an exact piece of its text. `old` must match the file "
        "exactly (whitespace and indentation included, without read_file's line numbers) and "
        "occur exactly once; include surrounding lines to make it unique, or set replace_all "
        "to replace every occurrence."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file, relative to the workspace."},
            "old": {**NOT_PATH, "description": "The exact text to replace."},
            "new": {**NOT_PATH, "description": "The text to put in its place."},
            "replace_all": {
                "type": "boolean",
                "default": False,
                "description": "Replace every occurrence instead of exactly one.",
            },
        },
        "required": ["path", "old", "new"],
        "additionalProperties": False,
    }

    def title(self, arguments: Any) -> str:
        return f"Edit {self.shown(arguments)}"

    async def run(self, arguments: dict[str, Any], on_update: OnUpdate) -> AgentToolResult:
        path = self.workspace.resolve(arguments["path"])
        old: str = arguments["old"]
        new: str = arguments["new"]
        if not old:
            raise ToolInputError("`old` is empty; to create or overwrite a file use write_file")
        if old == new:
            raise ToolInputError("`old` and `new` are the same; nothing would change")
        shown = self.workspace.display(path)
        replace_all = bool(arguments.get("replace_all", False))
        editor = self.workspace.editor
        async with self.workspace.lock(path):
            if editor is not None and editor.can_read and editor.can_write:
                details = await self._edit_in_editor(editor, path, shown, old, new, replace_all)
            else:
                details = await self.in_thread(self._edit, path, shown, old, new, replace_all)
        count = details["replacements"]
        text = (
            f"Edited {shown}: replaced {count} occurrence{'s' if count != 1 else ''} "
            f"(+{details['added']} -{details['removed']} lines)."
        )
        return AgentToolResult.text(text, details=details)

    def _edit(
        self, path: Path, shown: str, old: str, new: str, replace_all: bool
    ) -> dict[str, Any]:
        try:
            data, stamp = self.workspace.beneath.read(path, shown, limit=_MAX_FILE)
        except OSError as exc:
            raise ToolInputError(describe_os_error(exc, shown)) from None
        if looks_binary(data):
            raise ToolInputError(f"{shown} is a binary file; it cannot be edited as text")
        bom = data.startswith(b"\xef\xbb\xbf")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            # Decoding with replacements and writing back would damage the file.
            raise ToolInputError(f"{shown} is not UTF-8 text; it cannot be edited") from None
        updated, count, first, old, new = apply_edit(text, old, new, replace_all, shown)
        written = (b"\xef\xbb\xbf" if bom else b"") + updated.encode("utf-8")
        try:
            self.workspace.beneath.write(path, shown, written, base=stamp)
        except OSError as exc:
            raise ToolInputError(describe_os_error(exc, shown)) from None
        details = _change_details(
            shown, text, updated, old_text=old, new_text=new, before=data, after=written
        )
        details["replacements"] = count
        details["first_line"] = first
        return details

    async def _edit_in_editor(
        self, editor: Editor, path: Path, shown: str, old: str, new: str, replace_all: bool
    ) -> dict[str, Any]:
        real, exists = await self.in_thread(_real_target, self.workspace, path, shown)
        if not exists:
            raise ToolInputError(f"{shown} does not exist; check the name with list_dir or glob")
        text = await editor.read_text(real)
        updated, count, first, old, new = apply_edit(text, old, new, replace_all, shown)
        await editor.write_text(real, updated)
        details = _change_details(
            shown,
            text,
            updated,
            old_text=old,
            new_text=new,
            before=text.encode(),
            after=updated.encode(),
        )
        details["replacements"] = count
        details["first_line"] = first
        return details
