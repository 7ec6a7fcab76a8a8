"""Trusting a command, not the whole ``bash`` tool: "always allow ``git status``".

Trusting ``bash`` lets every command run unasked. ``CommandTrust`` trusts command *prefixes*:
a ``bash`` call runs without asking when its command is a trusted prefix's words followed by
any arguments (``git status`` trusts ``git status -s`` and ``git status src/``, not
``git stash``), **and** it is one simple command: a command holding anything that could run
or redirect something else (``;``, ``&``, ``|``, ``<``, ``>``, a backquote, ``$``, a line
break) is asked about as usual, whatever its start, so ``git status; rm -rf ~`` is never let
through by trusting ``git status``.

A session's trusted commands come from ``trusted_commands`` in the user's configuration (a
project file may not set them) and from the front end (``CodingSession.commands.trust``,
after a person chose "always allow this command").
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["CommandTrust", "simple_words"]

_CONTROL = frozenset(";&|<>`$\n\r")


def simple_words(command: str) -> list[str] | None:
    """The words of ``command`` if it is one simple command (module docs), else ``None``."""
    if any(char in _CONTROL for char in command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:  # an unclosed quote
        return None
    return words or None


class CommandTrust:
    """The command prefixes trusted in one session (module docs).

    Args:
        prefixes: trusted from the start.

    Raises:
        ValueError: a prefix is not one simple command.
    """

    def __init__(self, prefixes: Iterable[str] = ()) -> None:
        self._prefixes: dict[str, tuple[str, ...]] = {}
        for prefix in prefixes:
            self.trust(prefix)

    @property
    def prefixes(self) -> list[str]:
        """The trusted prefixes, in the order they were trusted."""
        return list(self._prefixes)

    def trust(self, prefix: str) -> None:
        """Run commands starting with ``prefix``'s words without asking from now on.

        Raises:
            ValueError: ``prefix`` is empty or not one simple command.
        """
        words = simple_words(prefix)
        if words is None:
            raise ValueError(
                f"{prefix!r} cannot be trusted: give one simple command (no ; & | < > ` $)"
            )
        self._prefixes[" ".join(words)] = tuple(words)

    def distrust(self, prefix: str) -> None:
        """Ask again about commands starting with ``prefix``."""
        words = simple_words(prefix)
        if words is not None:
            self._prefixes.pop(" ".join(words), None)

    def allows(self, command: str) -> bool:
        """Whether ``command`` may run without asking."""
        words = simple_words(command)
        if words is None:
            return False
        return any(tuple(words[: len(p)]) == p for p in self._prefixes.values())

    def __repr__(self) -> str:
        return f"CommandTrust({self.prefixes!r})"
