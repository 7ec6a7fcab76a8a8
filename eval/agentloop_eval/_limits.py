"""The limits on what evaluation reads, and reading a file without trusting it.

Suite files, case files, cassettes and reports come from a repository anyone may send a pull
request to, so every one of them is read as hostile: only regular files (a FIFO named
``x.jsonl`` must not hang a CI job in ``open``), no bigger than a limit, nested no deeper than a
limit, and every count in them capped before anything is allocated by it. Each refusal is one
line naming the file, the line where there is one, and the limit.
"""

from __future__ import annotations

import math
import os
import re
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from ._errors import EvalError

__all__ = [
    "MAX_CASSETTE_BYTES",
    "MAX_CASSETTE_LINE",
    "MAX_CONCURRENCY",
    "MAX_NESTING",
    "MAX_REPEATS",
    "MAX_REPORT_BYTES",
    "MAX_REPORT_TEXT",
    "MAX_RUNS",
    "MAX_STEPS",
    "MAX_SUITE_FILE",
    "check_count",
    "check_finite",
    "line_of_offset",
    "nesting_error",
    "read_regular",
]

MAX_SUITE_FILE = 8 * 1024 * 1024
"""Bytes of one suite or case file."""
MAX_CASSETTE_BYTES = 256 * 1024 * 1024
"""Bytes of one cassette."""
MAX_CASSETTE_LINE = 16 * 1024 * 1024
"""Bytes of one cassette line (one model answer, one tool result): far past any model's
output, far short of what would exhaust memory when a report copies it."""
MAX_REPORT_BYTES = 512 * 1024 * 1024
"""Bytes of one saved report read back."""
MAX_REPORT_TEXT = 64 * 1024
"""Characters of one text a report keeps (an answer, a tool result, an error); the checks see
the whole text, the report keeps its start and says how much it left out."""
MAX_NESTING = 100
"""Levels of nested lists and mappings in a suite or case file."""
MAX_REPEATS = 10_000
"""Runs of one case."""
MAX_CONCURRENCY = 1_000
"""Runs at once."""
MAX_RUNS = 100_000
"""Runs of one suite run (every case's repeats added up)."""
MAX_STEPS = 1_000_000
"""A step count (``optimal_steps``)."""

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def read_regular(path: Path, *, limit: int, error: type[EvalError], what: str) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``limit`` bytes.

    The file is opened without blocking (a FIFO with no writer would block ``open`` for ever)
    and checked on the open descriptor, so a file swapped after a check cannot slip through.

    Raises:
        EvalError: the ``error`` subclass given: the file cannot be opened, is not a regular
            file, or is larger than ``limit``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _BINARY)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path}: not a regular file; a {what} must be one")
        if info.st_size > limit:
            raise error(f"{path}: {info.st_size} bytes, more than the limit of {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # a file still growing is read up to the limit, not past it
            chunk = os.read(fd, min(1024 * 1024, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise error(f"{path}: more than the limit of {limit} bytes")
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def check_count(name: str, value: int | None, *, low: int, high: int) -> None:
    """Check that ``value`` (when set) lies in ``low..high``.

    Raises:
        ValueError: it does not, naming ``name`` and the limit.
    """
    if value is not None and not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, not {value}")


def check_finite(name: str, value: float | None, *, low: float = 0.0, strict: bool = False) -> None:
    """Check that ``value`` (when set) is a finite number of at least ``low`` (more than it,
    with ``strict``).

    Raises:
        ValueError: it is not.
    """
    if value is None:
        return
    below = value <= low if strict else value < low
    if not math.isfinite(value) or below:
        bound = f"more than {low:g}" if strict else f"{low:g} or more"
        raise ValueError(f"{name} must be a finite number {bound}, not {value}")


def line_of_offset(data: bytes, offset: int) -> int:
    """The 1-based line holding byte ``offset`` of ``data``."""
    return data.count(b"\n", 0, max(0, offset)) + 1


# Everything that opens or closes a level, starts or ends a string or comment, or ends a line.
_TOKENS = re.compile(rb'"""|\'\'\'|\\.|["\'#\[\]{}\n]', re.DOTALL)


def nesting_error(data: bytes, *, limit: int = MAX_NESTING) -> int | None:
    """The line where ``data`` (TOML or JSON text) nests lists or tables deeper than ``limit``,
    or ``None``. A scan that never recurses, so it is safe on any input; strings and comments
    are skipped, so brackets in them do not count."""
    depth = 0
    line = 1
    quote: bytes | None = None  # the delimiter of the string being skipped
    comment = False
    for match in _TOKENS.finditer(data):
        token = match.group()
        if token == b"\n":
            line += 1
            comment = False
            if quote in (b'"', b"'"):
                quote = None  # one-line strings end with their line (else the parser refuses)
            continue
        if comment:
            continue
        if quote is not None:
            if token == quote:
                quote = None
            continue
        if token in (b'"', b"'", b'"""', b"'''"):
            quote = token
        elif token == b"#":
            comment = True
        elif token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return line
        elif token in (b"]", b"}"):
            depth = max(0, depth - 1)
    return None
