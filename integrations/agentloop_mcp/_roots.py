"""``Roots``: the directories (or other URIs) a client lets its servers work in, kept current.

A ``Roots`` is given to ``open_toolset``/``open_group``/``connect``; every connection that uses
it advertises the ``roots`` capability, answers ``roots/list`` with its current value, and sends
``notifications/roots/list_changed`` whenever ``set`` changes it (handshake-era connections;
2026-era servers ask for the roots each time they need them). One ``Roots`` may be shared by
every server of an application: a coding agent keeps it equal to its workspace.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["Root", "Roots"]

log = logging.getLogger("agentloop.mcp")


class Root(msgspec.Struct, frozen=True, kw_only=True):
    """One root: a URI (``file://`` for a directory) and an optional display name.

    Attributes:
        uri: the root's URI.
        name: what to call it in a user interface.
    """

    uri: str
    name: str | None = None


def _as_root(value: Root | str | Path) -> Root:
    if isinstance(value, Path) or (isinstance(value, str) and "://" not in value):
        path = Path(value).expanduser().resolve()
        return Root(uri=path.as_uri(), name=path.name or str(path))
    root = value if isinstance(value, Root) else Root(uri=value)
    if not root.uri.startswith("file://"):
        # The protocol allows only file:// roots; a server would refuse the whole list.
        raise ValueError(f"a root must be a file:// URI or a path, not {root.uri!r}")
    return root


class Roots:
    """The roots offered to servers; ``set`` replaces them and tells every connected server.

    Args:
        roots: the first roots: ``Root`` values, ``file://`` URIs, or paths (made absolute
            ``file://`` URIs named after their last component).

    Raises:
        ValueError: a root that is not a ``file://`` URI (the protocol allows no other).

    Usable from the event loop's thread only (``set`` notifies the connections there).
    """

    def __init__(self, roots: Iterable[Root | str | Path] = ()) -> None:
        self._roots: tuple[Root, ...] = tuple(_as_root(r) for r in roots)
        self._listeners: list[Callable[[], None]] = []

    def get(self) -> tuple[Root, ...]:
        """The current roots."""
        return self._roots

    def set(self, roots: Iterable[Root | str | Path]) -> None:
        """Replace the roots; every connected server that listens is told at once.

        Setting the same roots again tells nobody.

        Raises:
            ValueError: a root that is not a ``file://`` URI; the roots are left as they were.
        """
        new = tuple(_as_root(r) for r in roots)
        if new == self._roots:
            return
        self._roots = new
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                log.exception("a roots listener raised")

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` after each change; returns the function that stops it."""
        self._listeners.append(listener)

        def stop() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return stop

    def __repr__(self) -> str:
        return f"Roots({[r.uri for r in self._roots]!r})"
