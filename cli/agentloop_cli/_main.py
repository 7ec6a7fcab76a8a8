"""Finding the subcommands and handing the command line to one.

Start-up time matters here (``agentloop --help`` is typed often): nothing of agentloop is
imported until a command runs, and a command's module is imported only when it is listed or
run. The entry points of the ``agentloop.commands`` group are read once.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.metadata import EntryPoint

__all__ = ["ENTRY_POINT_GROUP", "Command", "main"]

ENTRY_POINT_GROUP = "agentloop.commands"
"""The entry-point group where packages register ``agentloop``'s subcommands."""
DISTRIBUTION = "anyio-agentloop"
DEFAULT_COMMAND = "tui"
EXIT_USAGE = 2


class Command(Protocol):
    """A subcommand of ``agentloop``, registered in the ``agentloop.commands`` group."""

    help: str
    """One line for ``agentloop --help``."""

    def main(self, argv: list[str], prog: str) -> int:
        """Run with the arguments after the command's name; returns the exit status."""
        ...


class _Unavailable:
    """A registered command whose module cannot be imported: its extra is missing."""

    def __init__(self, name: str, extra: str | None, missing: str | None) -> None:
        self.name = name
        self.extra = extra
        self.missing = missing
        what = f"the [{extra}] extra" if extra else f"the module {missing!r}"
        install = f': pip install "{DISTRIBUTION}[{extra}]"' if extra else ""
        self.message = f"agentloop {name} needs {what}{install}"
        self.help = f"(needs {what})"

    def main(self, argv: list[str], prog: str) -> int:
        print(f"agentloop: {self.message}", file=sys.stderr)
        return EXIT_USAGE


def _entry_points() -> dict[str, EntryPoint]:
    from importlib.metadata import entry_points

    found: dict[str, EntryPoint] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(entry.name, entry)  # the first of a name wins, as Python's path does
    return found


def _load(name: str, entry: EntryPoint) -> Command:
    try:
        command: Command = entry.load()
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing.startswith("agentloop"):
            raise  # our own module missing is a broken install, not a missing extra
        extras = list(entry.extras)
        return _Unavailable(name, extras[0] if extras else None, exc.name)
    return command


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown (not installed)"


def _help(entries: dict[str, EntryPoint]) -> str:
    lines = [
        "usage: agentloop [COMMAND] [ARGS...]",
        "",
        "A coding agent on agentloop. With no command (or only flags), opens the terminal UI.",
        "",
        "commands:",
    ]
    for name in sorted(entries):
        command = _load(name, entries[name])
        lines.append(f"  {name:<10}  {command.help}")
    lines += [
        "",
        "options:",
        "  -h, --help  show this message and exit",
        "  --version   show the version and exit",
        "",
        "agentloop COMMAND --help shows a command's own options.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``agentloop`` command; returns the exit status.

    The first argument names the command; with none, or when it is an option
    (``agentloop --inline``), the terminal UI gets every argument.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    first = arguments[0] if arguments else None
    if first == "--version":
        print(f"agentloop {_version()}")
        return 0
    entries = _entry_points()
    if first in ("-h", "--help", "help"):
        print(_help(entries))
        return 0
    if first is None or first.startswith("-"):
        name, rest = DEFAULT_COMMAND, arguments
    else:
        name, rest = first, arguments[1:]
    entry = entries.get(name)
    if entry is None:
        known = ", ".join(sorted(entries)) or "none"
        print(
            f"agentloop: error: no command {name!r} (commands: {known}); see agentloop --help",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return _load(name, entry).main(rest, f"agentloop {name}")
