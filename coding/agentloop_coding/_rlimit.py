"""Resource limits for the ``bash`` tool's commands: ``ResourceLimits``, and the small program
that applies them (``python _rlimit.py LIMITS_JSON -- program args...``).

The program sets the limits on itself with ``setrlimit`` and then becomes the command
(``execvp``), so the limits hold for the command and, inherited, for everything it starts;
standard library only (it runs as ``python -E -s``, with no site-packages).

==================  ===========================  ========================================
limit               rlimit                       when it is reached
==================  ===========================  ========================================
``cpu_seconds``     ``RLIMIT_CPU``               the process gets ``SIGXCPU``, then
                                                 ``SIGKILL`` a second later
``memory_mb``       ``RLIMIT_AS``                allocations fail (``MemoryError``,
                                                 ``ENOMEM``); the program usually exits
``processes``       ``RLIMIT_NPROC``             ``fork`` fails with ``EAGAIN``
``file_size_mb``    ``RLIMIT_FSIZE``             the write fails (``EFBIG``) and the
                                                 process gets ``SIGXFSZ``
==================  ===========================  ========================================

What they cannot stop, by how rlimits work:

* **They are per process**, not per command: each process the command starts has its own
  allowance of CPU seconds and memory, so ten processes may use ten times as much.
* **Memory is address space**, not memory in use: a program that reserves a large virtual
  range up front (the JVM, Go, sanitizers) may fail to start under a cap that its real use
  would fit in.
* **The process count is your user's**, not the command's: ``RLIMIT_NPROC`` counts every
  process of the real user ID, so the cap must be above what the user already runs, and it
  does not apply to root.
* **File size is per file**: many files can still fill a disk.
* Nothing here bounds wall-clock time (that is the tool's ``timeout``), network use, or a
  process that leaves the command's process group.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any

__all__ = ["LIMITS", "apply_limits", "main"]

LIMITS = {
    "cpu_seconds": (resource.RLIMIT_CPU, 1),
    "memory_mb": (resource.RLIMIT_AS, 1 << 20),
    "processes": (resource.RLIMIT_NPROC, 1),
    "file_size_mb": (resource.RLIMIT_FSIZE, 1 << 20),
}
"""Each limit's rlimit and the unit its value is counted in (bytes for the ``_mb`` ones)."""


def apply_limits(limits: dict[str, Any]) -> None:
    """Lower this process's rlimits to ``limits`` (names of ``LIMITS``; ``None`` skips one).

    Raises:
        ValueError: an unknown name, or a value below 1 or above the current hard limit.
    """
    for name, value in limits.items():
        if value is None:
            continue
        if name not in LIMITS:
            raise ValueError(f"unknown limit {name!r}")
        which, unit = LIMITS[name]
        amount = int(value) * unit
        if amount < 1:
            raise ValueError(f"{name} must be at least 1")
        _, hard = resource.getrlimit(which)
        # CPU: the soft limit sends SIGXCPU, the hard one a second later SIGKILL.
        top = amount + 1 if name == "cpu_seconds" else amount
        if hard != resource.RLIM_INFINITY and top > hard:
            top = hard
            amount = min(amount, hard)
        resource.setrlimit(which, (amount, top))


def main(argv: list[str]) -> int:
    """``_rlimit.py LIMITS_JSON -- program args...``: apply the limits, become the program.

    Returns only on failure: 126 when the limits cannot be set, 127 when the program cannot
    be run.
    """
    if len(argv) < 3 or argv[1] != "--":
        print("usage: _rlimit.py LIMITS_JSON -- program [args...]", file=sys.stderr)
        return 2
    try:
        apply_limits(json.loads(argv[0]))
    except (ValueError, OSError) as exc:
        print(f"the resource limits could not be set: {exc}", file=sys.stderr)
        return 126
    try:
        os.execvp(argv[2], argv[2:])
    except OSError as exc:
        print(f"{argv[2]}: {exc.strerror or exc}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
