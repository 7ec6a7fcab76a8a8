"""The search tools: ``glob`` (files by name) and ``grep`` (lines by regular expression).

``grep`` runs the pure-Python search of ``_scan`` or ripgrep (``rg``), each as a process in a
group of its own under a deadline (see ``_process``): a search that takes too long, or a
regular expression that backtracks without end, is killed rather than left to stall the agent.

Which one: ``"python"``, ``"rg"``, or ``"auto"`` (the default): the Python search in a
confined workspace, ripgrep (when installed) in one that is not. The Python search is handed
a descriptor of what it searches, opened beneath the workspace, and walks by descriptors
without following links: a directory swapped for a link mid-search cannot lead it outside.
ripgrep walks by path names, which such a swap can redirect; choose it (``grep = "rg"``) for
speed on large trees when nothing races the agent's files. The two differ a little too:
``rg`` skips what ``.gitignore`` ignores and hidden files, and uses Rust's regex syntax; the
Python search skips only the usual noise directories (``.git``, ``node_modules``, virtual
environments, caches) and uses Python's ``re``. Neither follows symbolic links.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio.from_thread
import msgspec

from agentloop import AgentToolResult

from ._base import NOT_PATH, CodingTool
from ._errors import ToolInputError, describe_os_error
from ._process import run_process
from ._scan import IGNORED_DIRS, GlobMatcher, walk_files

if TYPE_CHECKING:
    from agentloop.abc import OnUpdate

    from ._workspace import Workspace

__all__ = ["Glob", "Grep"]

_SCAN = str(Path(__file__).with_name("_scan.py"))


class Glob(CodingTool):
    """Find files whose path matches a glob pattern."""

    name = "glob"
    label = "Find"
    kind = "search"
    read_only = True
    requires_approval = False
    description = (
        "Find files by name with a glob pattern relative to a directory: '*' matches within "
        "one path component, '**' any number of directories, '{a,b}' either. For example "
        "'**/*.py' finds Python files at any depth, 'src/*.{js,ts}' only directly in src."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "The glob, e.g. '**/*.py'."},
            "path": {
                "type": "string",
                "default": ".",
                "description": "The directory to search (default: the workspace root).",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def __init__(self, workspace: Workspace, *, max_results: int = 500) -> None:
        super().__init__(workspace)
        self.max_results = max_results

    def title(self, arguments: Any) -> str:
        pattern = arguments.get("pattern", "") if isinstance(arguments, dict) else ""
        return f"Find {pattern} in {self.shown(arguments)}"

    async def run(self, arguments: dict[str, Any], on_update: OnUpdate) -> AgentToolResult:
        base = self.workspace.resolve(arguments.get("path", "."))
        try:
            matcher = GlobMatcher(arguments["pattern"])
        except ValueError as exc:
            raise ToolInputError(f"invalid pattern: {exc}") from None
        found, more = await self.in_thread(self._find, base, matcher)
        text = "\n".join(found) if found else "(no files match)"
        if more:
            text += f"\n[more than {self.max_results} files match; narrow the pattern]"
        return AgentToolResult.text(text, details={"count": len(found), "truncated": more})

    def _find(self, base: Path, matcher: GlobMatcher) -> tuple[list[str], bool]:
        shown = self.workspace.display(base)
        try:
            fd, real = self.workspace.beneath.open_dir(base, shown)
        except OSError as exc:
            raise ToolInputError(describe_os_error(exc, shown)) from None
        found: list[str] = []
        ignored = IGNORED_DIRS - matcher.named_ignored
        try:
            for count, (_, parts, _, _) in enumerate(
                walk_files(".", dir_fd=fd, ignored=ignored, max_depth=matcher.max_depth)
            ):
                if count % 1024 == 0:
                    anyio.from_thread.check_cancelled()
                if matcher.match(parts):
                    if len(found) == self.max_results:
                        return found, True
                    found.append(self.workspace.display(real.joinpath(*parts)))
        finally:
            os.close(fd)
        return found, False


class Grep(CodingTool):
    """Search file contents for a regular expression."""

    name = "grep"
    label = "Search"
    kind = "search"
    read_only = True
    requires_approval = False
    description = (
        "Search the contents of files for a regular expression; prints path:line:text for "
        "each matching line. Search a directory (recursively) or one file; `glob` keeps only "
        "files whose name matches (e.g. '*.py')."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            # Not "format": "regex": that would check Python's syntax, and rg's differs.
            "pattern": {**NOT_PATH, "description": "The regular expression."},
            "path": {
                "type": "string",
                "default": ".",
                "description": "A directory or file to search (default: the workspace root).",
            },
            "glob": {**NOT_PATH, "description": "Only files whose name matches this glob."},
            "ignore_case": {"type": "boolean", "default": False},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def __init__(
        self,
        workspace: Workspace,
        *,
        backend: Literal["auto", "rg", "python"] = "auto",
        timeout: float = 60.0,
        max_output: int = 200_000,
    ) -> None:
        super().__init__(workspace)
        self.backend = backend
        self.timeout = timeout
        self.max_output = max_output

    def title(self, arguments: Any) -> str:
        pattern = arguments.get("pattern", "") if isinstance(arguments, dict) else ""
        return f"Search {pattern!r} in {self.shown(arguments)}"

    def ripgrep(self) -> str | None:
        """The ``rg`` program to use, or ``None`` for the pure-Python search (module docs)."""
        if self.backend == "python" or (self.backend == "auto" and self.workspace.confined):
            return None
        found = shutil.which("rg")
        if found is None and self.backend == "rg":
            raise ToolInputError("ripgrep (rg) is not installed")
        return found

    async def run(self, arguments: dict[str, Any], on_update: OnUpdate) -> AgentToolResult:
        path = self.workspace.resolve(arguments.get("path", "."))
        shown = self.workspace.display(path)
        limit: int = arguments.get("max_results", 100)
        rg = self.ripgrep()
        fd, kind, real = await self.in_thread(self._open, path, shown)
        try:
            if rg is not None:
                argv = self._rg_argv(rg, arguments, real, limit)
                keep: tuple[int, ...] = ()
            else:
                request = {
                    "pattern": arguments["pattern"],
                    "fd": fd,
                    "kind": kind,
                    "shown": self.workspace.display(real),
                    "glob": arguments.get("glob"),
                    "ignore_case": arguments.get("ignore_case", False),
                    "max_results": limit,
                }
                argv = [sys.executable, "-E", "-s", _SCAN, msgspec.json.encode(request).decode()]
                keep = (fd,)
            env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C.UTF-8"}
            outcome = await run_process(
                argv,
                cwd=self.workspace.root,
                env=env,
                time_limit=self.timeout,
                max_output=self.max_output,
                pass_fds=keep,
            )
        finally:
            os.close(fd)
        if outcome.timed_out:
            raise ToolInputError(
                f"the search took longer than {self.timeout:g} s and was stopped; search a "
                "smaller directory or use a simpler pattern"
            )
        if outcome.exit_code not in (0, 1):
            message = outcome.output.strip().removeprefix("error: ") or "the search failed"
            raise ToolInputError(message)
        lines = [line.removeprefix("./") for line in outcome.output.splitlines()]
        more = len(lines) > limit
        lines = lines[:limit]
        text = "\n".join(lines) if lines else "(no matches)"
        if more:
            text += f"\n[more than {limit} matching lines; narrow the search]"
        details = {"count": len(lines), "truncated": more, "backend": "rg" if rg else "python"}
        return AgentToolResult.text(text, details=details)

    def _open(self, path: Path, shown: str) -> tuple[int, str, Path]:
        """A descriptor of what to search, opened beneath the workspace: its kind and its real
        path."""
        beneath = self.workspace.beneath
        try:
            if beneath.is_dir(path, shown):
                fd, real = beneath.open_dir(path, shown)
                return fd, "dir", real
            fd, _, real = beneath.open_regular(path, shown)
            return fd, "file", real
        except OSError as exc:
            raise ToolInputError(describe_os_error(exc, shown)) from None

    def _rg_argv(self, rg: str, arguments: dict[str, Any], path: Path, limit: int) -> list[str]:
        argv = [rg, "--line-number", "--no-heading", "--with-filename", "--color=never"]
        argv += ["--max-columns=500", "--max-columns-preview", "--no-messages"]
        if arguments.get("ignore_case"):
            argv.append("--ignore-case")
        if arguments.get("glob"):
            argv += ["--glob", arguments["glob"]]
        try:
            target = str(path.relative_to(self.workspace.root)) or "."
        except ValueError:
            target = str(path)
        return [*argv, "--regexp", arguments["pattern"], "--", target]
