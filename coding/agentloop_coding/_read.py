"""The read-only file tools: ``read_file`` and ``list_dir``.

``read_file`` shows a text file with line numbers, a range of lines at a time: at most
``max_lines`` lines and ``max_bytes`` bytes per call, each line cut at ``max_line_chars``
characters, and a note saying how to read on. A binary file (one holding a NUL byte) is refused
rather than shown. ``list_dir`` lists one directory, directories marked with a trailing ``/``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import anyio.from_thread

from agentloop import AgentToolResult

from ._base import CodingTool, looks_binary
from ._errors import ToolInputError, describe_os_error

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from agentloop.abc import OnUpdate

    from ._workspace import Editor, Workspace

__all__ = ["ListDir", "ReadFile"]


class ReadFile(CodingTool):
    """Read a text file, or a range of its lines, with line numbers."""

    name = "read_file"
    label = "Read"
    kind = "read"
    read_only = True
    requires_approval = False
    description = (
        "Read a text file. Lines come numbered (the number and the tab after it are not part "
        "of the file). Long files come a range at a time: pass offset (first line, from 1) and "
        "limit (how many lines) to read further."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file, relative to the workspace."},
            "offset": {"type": "integer", "minimum": 1, "description": "First line (from 1)."},
            "limit": {"type": "integer", "minimum": 1, "description": "How many lines."},
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def __init__(
        self,
        workspace: Workspace,
        *,
        max_lines: int = 2000,
        max_bytes: int = 100_000,
        max_line_chars: int = 2000,
    ) -> None:
        super().__init__(workspace)
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.max_line_chars = max_line_chars

    def title(self, arguments: Any) -> str:
        return f"Read {self.shown(arguments)}"

    async def run(self, arguments: dict[str, Any], on_update: OnUpdate) -> AgentToolResult:
        path = self.workspace.resolve(arguments["path"])
        offset: int = arguments.get("offset", 1)
        limit: int = min(arguments.get("limit", self.max_lines), self.max_lines)
        shown = self.workspace.display(path)
        editor = self.workspace.editor
        if editor is not None and editor.can_read:
            text, details = await self._read_in_editor(editor, path, shown, offset, limit)
        else:
            text, details = await self.in_thread(self._read, path, shown, offset, limit)
        return AgentToolResult.text(text, details=details)

    def _read(self, path: Path, shown: str, offset: int, limit: int) -> tuple[str, dict[str, Any]]:
        try:
            fd, _, _ = self.workspace.beneath.open_regular(path, shown)
            with open(fd, "rb", closefd=True) as file:
                if looks_binary(file.read(8192)):
                    size = os.fstat(file.fileno()).st_size
                    raise ToolInputError(f"{shown} is a binary file ({size:,} bytes); not shown")
                file.seek(0)
                return self._lines(file, shown, offset, limit)
        except FileNotFoundError:
            raise ToolInputError(
                f"{shown} does not exist; check the name with list_dir or glob"
            ) from None
        except OSError as exc:
            raise ToolInputError(describe_os_error(exc, shown)) from None

    async def _read_in_editor(
        self, editor: Editor, path: Path, shown: str, offset: int, limit: int
    ) -> tuple[str, dict[str, Any]]:
        # The editor's view of the file (an unsaved buffer included); checked beneath the
        # roots here first, so that a link cannot send the editor outside.
        real = await self.in_thread(self._real_path, path, shown)
        text = await editor.read_text(real, line=offset, limit=limit + 1)
        lines = [line.encode() for line in text.splitlines(keepends=True)]
        if not lines and offset > 1:
            raise ToolInputError(
                f"{shown} has fewer than {offset} lines; offset {offset} is past its end"
            )
        return self._lines(lines, shown, offset, limit, start=offset, in_thread=False)

    def _real_path(self, path: Path, shown: str) -> Path:
        fd, _, real = self.workspace.beneath.open_regular(path, shown)
        os.close(fd)
        return real

    def _lines(
        self,
        file: Iterable[bytes],
        shown: str,
        offset: int,
        limit: int,
        *,
        start: int = 1,
        in_thread: bool = True,
    ) -> tuple[str, dict[str, Any]]:
        """Lines from ``offset`` on, numbered; ``file`` yields lines from line ``start``."""
        out: list[str] = []
        size = 0
        number = start - 1
        last = offset - 1
        more = False
        for number, raw in enumerate(file, start):  # noqa: B007
            if in_thread and number % 4096 == 0:
                anyio.from_thread.check_cancelled()
            if number < offset:
                continue
            if len(out) >= limit:
                more = True
                break
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if number == 1:
                line = line.removeprefix("\ufeff")
            if len(line) > self.max_line_chars:
                line = f"{line[: self.max_line_chars]}... [line cut at {self.max_line_chars} chars]"
            entry = f"{number:>6}\t{line}"
            size += len(entry) + 1
            if out and size > self.max_bytes:
                more = True
                break
            out.append(entry)
            last = number
        if number < offset and not (number == start - 1 and offset == start):
            raise ToolInputError(f"{shown} has {number} lines; offset {offset} is past its end")
        text = "\n".join(out) if out else "(empty file)"
        if more:
            text += f"\n[more lines follow; call read_file with offset={last + 1} to read on]"
        details = {"path": shown, "start": offset, "end": last, "more": more}
        return text, details


class ListDir(CodingTool):
    """List the entries of one directory."""

    name = "list_dir"
    label = "List"
    kind = "read"
    read_only = True
    requires_approval = False
    description = (
        "List the files and directories in a directory (directories end with '/', symbolic "
        "links with '@'). "
        "Not recursive: use glob to find files at any depth."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "The directory, relative to the workspace (default: its root).",
                "default": ".",
            },
        },
        "additionalProperties": False,
    }

    def __init__(self, workspace: Workspace, *, max_entries: int = 1000) -> None:
        super().__init__(workspace)
        self.max_entries = max_entries

    def title(self, arguments: Any) -> str:
        return f"List {self.shown(arguments)}"

    async def run(self, arguments: dict[str, Any], on_update: OnUpdate) -> AgentToolResult:
        path = self.workspace.resolve(arguments.get("path", "."))
        shown = self.workspace.display(path)
        names = await self.in_thread(self._list, path, shown)
        total = len(names)
        names = names[: self.max_entries]
        text = "\n".join(names) if names else "(empty directory)"
        if total > len(names):
            text += f"\n[{total - len(names)} more entries not shown]"
        return AgentToolResult.text(
            text, details={"path": shown, "entries": total, "truncated": total > len(names)}
        )

    def _list(self, path: Path, shown: str) -> list[str]:
        try:
            entries = self.workspace.beneath.list_dir(path, shown)
        except OSError as exc:
            raise ToolInputError(describe_os_error(exc, shown)) from None
        names = []
        for entry in entries:
            # Links are not followed (where one leads is not this tool's business): marked.
            if entry.is_symlink():
                names.append(entry.name + "@")
            elif entry.is_dir(follow_symlinks=False):
                names.append(entry.name + "/")
            else:
                names.append(entry.name)
        return sorted(names)
