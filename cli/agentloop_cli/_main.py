"""Finding the subcommands and handing the command line to one.

Start-up time matters here (``agentloop --help`` is typed often, and ``agentloop run`` should
send its request within 200 ms): nothing of agentloop is imported until a command runs, and a
command's module is imported only when it is listed or run. The ``agentloop.commands`` entry
points are read straight from the installed distributions' ``entry_points.txt`` files, the
format ``importlib.metadata`` reads, without importing ``importlib.metadata`` (with the
``email``, ``zipfile`` and ``csv`` modules it brings: 15-30 ms, a fifth of ``--help``'s
budget); ``tests/cli`` checks the two agree.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

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


class EntryPoint(NamedTuple):
    """One ``name = module:attribute [extra, ...]`` line of an ``entry_points.txt``."""

    name: str
    module: str
    attribute: str
    extras: tuple[str, ...]

    def load(self) -> Command:
        """Import the module and find the object.

        Raises:
            ImportError: the module cannot be imported.
            AttributeError: it has no such object.
        """
        import importlib

        value: object = importlib.import_module(self.module)
        for part in self.attribute.split("."):
            value = getattr(value, part)
        return value  # type: ignore[return-value]


def _parse(text: str) -> list[EntryPoint]:
    """The ``agentloop.commands`` section of an ``entry_points.txt`` (INI, as the packaging
    specification has it: ``[group]`` then ``name = module:attribute [extras]`` lines)."""
    found: list[EntryPoint] = []
    group = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            continue
        if group != ENTRY_POINT_GROUP or "=" not in line:
            continue
        name, _, value = (part.strip() for part in line.partition("="))
        extras: tuple[str, ...] = ()
        if value.endswith("]") and "[" in value:
            value, _, bracket = value.partition("[")
            extras = tuple(e.strip() for e in bracket[:-1].split(",") if e.strip())
            value = value.strip()
        module, _, attribute = value.partition(":")
        found.append(EntryPoint(name, module.strip(), attribute.strip(), extras))
    return found


def _distributions() -> list[str]:
    """The ``.dist-info`` directories on ``sys.path``, in path order."""
    found = []
    for directory in sys.path:
        try:
            names = sorted(os.listdir(directory or "."))
        except OSError:
            continue
        found += [os.path.join(directory, n) for n in names if n.endswith(".dist-info")]
    return found


def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    seen: set[str] = set()
    for dist in _distributions():
        project = os.path.basename(dist).partition("-")[0].lower().replace("_", "-")
        if project in seen:
            continue  # a distribution earlier on the path hides later ones of its name
        seen.add(project)
        try:
            with open(os.path.join(dist, "entry_points.txt"), encoding="utf-8") as file:
                text = file.read()
        except OSError:
            continue
        if ENTRY_POINT_GROUP not in text:
            continue
        for entry in _parse(text):
            found.setdefault(entry.name, entry)  # the first of a name wins, as the path does
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
    for dist in _distributions():
        if os.path.basename(dist).lower().startswith("anyio_agentloop-"):
            try:
                with open(os.path.join(dist, "METADATA"), encoding="utf-8") as file:
                    for line in file:
                        if line.startswith("Version:"):
                            return line.partition(":")[2].strip()
            except OSError:
                continue
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
