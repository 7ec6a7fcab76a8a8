"""Walking a tree and matching globs, and the pure-Python grep, run as a program of its own.

Standard library only: ``grep`` runs this file as a separate process (``python _scan.py
ARGS_JSON``), so a pathological regular expression from the model is bounded by the tool's
deadline and killed with its process group; Python's ``re`` cannot be interrupted otherwise,
and holds the GIL while it backtracks. The tool opens what is searched beneath the workspace
and passes the descriptor on; the search walks by descriptors and opens each file without
following links or blocking (a FIFO is skipped, not waited on). ``glob`` imports the matcher
and the walker and runs them in a worker thread: glob matching is per path component with ``fnmatch`` (whose translation
does not backtrack catastrophically), and ``**`` is matched by dynamic programming over the
components, so matching is polynomial in the path length whatever the pattern.

Directories that are noise for a coding agent (``.git``, ``node_modules``, virtual
environments, caches) are not entered unless the pattern names them.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
import sys
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "IGNORED_DIRS",
    "GlobMatcher",
    "expand_braces",
    "grep_main",
    "open_regular",
    "walk_files",
]

IGNORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".tox",
        ".nox",
        ".hypothesis",
    }
)
_MAX_BRACE_EXPANSIONS = 64
_BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")
_MAX_GREP_FILE = 10_000_000
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


def expand_braces(pattern: str) -> list[str]:
    """``a/{b,c}/*.py`` as ``["a/b/*.py", "a/c/*.py"]`` (at most 64 patterns).

    Raises:
        ValueError: the braces expand to more than 64 patterns.
    """
    out: list[str] = []
    todo = [pattern]
    while todo:
        current = todo.pop()
        found = _BRACES.search(current)
        if found is None:
            out.append(current)
        else:
            head, tail = current[: found.start()], current[found.end() :]
            todo.extend(head + choice + tail for choice in reversed(found.group(1).split(",")))
        if len(out) + len(todo) > _MAX_BRACE_EXPANSIONS:
            raise ValueError(f"the pattern expands to more than {_MAX_BRACE_EXPANSIONS} globs")
    return out


class GlobMatcher:
    """Matches paths relative to a base directory against a glob with ``**``, ``*``, ``?``,
    ``[...]`` and ``{a,b}``.

    Raises:
        ValueError: the pattern is empty, absolute, or expands too far.
    """

    def __init__(self, pattern: str) -> None:
        text = pattern.strip()
        while text.startswith("./"):
            text = text[2:]
        if not text:
            raise ValueError("the pattern is empty")
        if text.startswith("/"):
            raise ValueError("the pattern must be relative to the directory searched")
        self.pattern = text
        self._alternatives: list[tuple[tuple[str, ...], tuple[Callable[[str], object], ...]]] = []
        named: set[str] = set()
        deepest = 0
        for alternative in expand_braces(text):
            parts = tuple(p for p in alternative.split("/") if p not in ("", "."))
            matchers = tuple(_component(p) for p in parts)
            self._alternatives.append((parts, matchers))
            named.update(p for p in parts if p in IGNORED_DIRS)
            deepest = -1 if "**" in parts or deepest == -1 else max(deepest, len(parts))
        self.named_ignored = frozenset(named)
        self.max_depth: int | None = None if deepest == -1 else deepest

    def match(self, parts: tuple[str, ...]) -> bool:
        """Whether the relative path with components ``parts`` matches."""
        return any(_match(pattern, matchers, parts) for pattern, matchers in self._alternatives)


@lru_cache(maxsize=512)
def _component(part: str) -> Callable[[str], object]:
    if part == "**":
        return _any
    if not any(c in part for c in "*?["):
        return part.__eq__
    return re.compile(fnmatch.translate(part), re.S).match


def _any(name: str) -> bool:
    return True


def _match(
    pattern: tuple[str, ...], matchers: tuple[Callable[[str], object], ...], parts: tuple[str, ...]
) -> bool:
    # reachable[j]: the pattern so far can have consumed exactly the first j components.
    reachable = [True] + [False] * len(parts)
    for piece, matcher in zip(pattern, matchers, strict=True):
        if piece == "**":
            seen = False
            for j in range(len(reachable)):
                seen = seen or reachable[j]
                reachable[j] = seen
            continue
        shifted = [False] * len(reachable)
        for j in range(len(parts)):
            if reachable[j] and matcher(parts[j]):
                shifted[j + 1] = True
        reachable = shifted
    return reachable[len(parts)]


def walk_files(
    base: str,
    *,
    dir_fd: int,
    ignored: frozenset[str] = IGNORED_DIRS,
    max_depth: int | None = None,
) -> Iterator[tuple[str, tuple[str, ...], int, str]]:
    """Every file under the directory open as ``dir_fd`` (shown as ``base``), sorted, as
    ``(path shown, components relative to base, its directory's descriptor, its name)``,
    skipping ``ignored`` directories, no deeper than ``max_depth`` components.

    The walk goes by descriptors (``os.fwalk``) and never follows a symbolic link to a
    directory, so a directory swapped for a link while it is walked cannot lead it elsewhere.
    """
    for directory, subdirs, files, fd in os.fwalk(".", dir_fd=dir_fd):
        relative = os.path.relpath(directory, ".")
        prefix: tuple[str, ...] = () if relative == "." else tuple(relative.split(os.sep))
        if max_depth is not None and len(prefix) + 1 >= max_depth:
            subdirs[:] = []
        subdirs[:] = sorted(d for d in subdirs if d not in ignored)
        for name in sorted(files):
            parts = (*prefix, name)
            shown = "/".join(parts) if base == "." else "/".join((base, *parts))
            yield shown, parts, fd, name


def open_regular(name: str, dir_fd: int) -> int | None:
    """A descriptor of the regular file ``name`` in ``dir_fd``, opened without following a
    link and without blocking; ``None`` for anything else (a link, a FIFO, a device)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_GREP_FILE:
            return None
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


# --------------------------------------------------------------------------- grep (a program)


def _grep_fd(fd: int, rx: re.Pattern[str], show: str, cut: int) -> Iterator[str]:
    with open(fd, "rb", closefd=True) as file:
        data = file.read(_MAX_GREP_FILE + 1)
    if b"\x00" in data[:8192] or len(data) > _MAX_GREP_FILE:
        return
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if rx.search(line):
            yield f"{show}:{number}:{line[:cut]}"


def grep_main(arguments: dict[str, object]) -> int:
    """Print ``path:line:text`` for each matching line; 0 found, 1 none, 2 an error.

    ``fd`` is an inherited descriptor of the file or directory to search (``kind``), opened
    beneath the workspace by the tool; ``shown`` is how its paths are printed.
    """
    flags = re.IGNORECASE if arguments.get("ignore_case") else 0
    try:
        rx = re.compile(str(arguments["pattern"]), flags)
    except re.error as exc:
        print(f"error: invalid regular expression: {exc}")
        return 2
    fd, shown = int(str(arguments["fd"])), str(arguments["shown"])
    cut = int(str(arguments.get("max_line_chars", 500)))
    limit = int(str(arguments.get("max_results", 100)))
    name_glob = arguments.get("glob")
    try:
        matcher = GlobMatcher(str(name_glob)) if name_glob else None
    except ValueError as exc:
        print(f"error: {exc}")
        return 2
    found = 0
    if arguments.get("kind") == "file":
        hits: Iterator[str] = _grep_fd(fd, rx, shown, cut)
        return _print(hits, limit)
    ignored = IGNORED_DIRS - (matcher.named_ignored if matcher else frozenset())
    for path, parts, dir_fd, name in walk_files(shown, dir_fd=fd, ignored=ignored):
        if matcher is not None and not (matcher.match(parts) or matcher.match(parts[-1:])):
            continue
        file_fd = open_regular(name, dir_fd)
        if file_fd is None:
            continue
        for hit in _grep_fd(file_fd, rx, path, cut):
            print(hit)
            found += 1
            if found > limit:  # one more than asked: the caller knows there are more
                return 0
    return 0 if found else 1


def _print(hits: Iterator[str], limit: int) -> int:
    found = 0
    for hit in hits:
        print(hit)
        found += 1
        if found > limit:
            return 0
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(grep_main(json.loads(sys.argv[1])))
