"""Where the coding tools work: a root directory, the roots they are confined to, and the
editor they may work through.

Every built-in tool turns the path the model gives it into an absolute path here, taken **as
given** (no whitespace is stripped: ``" a.txt"`` is a file whose name starts with a space): a
relative path is joined to the workspace root (or to the call's own working directory) and
``~`` is expanded. A path that is not under a root by its spelling is refused at once, with a
message the model can act on; the file is then opened through ``Beneath`` (``_fs``), which
walks it again component by component so that no symbolic link, whenever it was made, leads
outside the roots.

A workspace is **confined by default** to its root (and the roots of the ``sandbox`` given).
Opting out is explicit, ``Workspace(root, confined=False)``, and loud: it warns, and its
``repr`` says so.

Changes to one file are **serialised** (``lock``): two edits of one file in one batch run one
after the other, each on the other's result, so no edit that reports success is lost. A file
changed by something else between an edit's read and its write is not overwritten: the edit
fails and says so.

``editor`` is set by a front end whose editor offers file access and terminals (ACP): the
tools then read and write through it (unsaved buffers included) and run commands in its
terminals, with the same confinement, approval and cancellation.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

from ._errors import ToolInputError, describe_os_error
from ._fs import Beneath

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping, Sequence

    from agentloop_policies import Sandbox

__all__ = ["Editor", "ToolInputError", "Workspace", "describe_os_error"]

_UNCONFINED = (
    "this workspace is not confined: the coding tools can read, change and list any file this "
    "process can (confined=False)"
)

# One table of per-file locks per event loop (an anyio lock belongs to the loop that made it);
# an entry lives only while a change holds or awaits it.
_locks: RunVar[dict[str, list[Any]]] = RunVar("agentloop_coding_file_locks")


class Editor(Protocol):
    """What an editor offers the tools (ACP's ``fs/*`` and ``terminal/*``), as far as it does.

    ``can_read``/``can_write``/``can_run`` say which parts are offered; the tools use the
    local file system and processes for the rest. Paths are absolute.
    """

    can_read: bool
    can_write: bool
    can_run: bool

    async def read_text(
        self, path: Path, *, line: int | None = None, limit: int | None = None
    ) -> str:
        """The text of ``path`` (the editor's buffer if open), or ``limit`` lines from
        ``line`` (1-based)."""
        ...

    async def write_text(self, path: Path, text: str) -> None:
        """Replace the content of ``path`` (created if missing)."""
        ...

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        time_limit: float,
        max_output: int,
        on_terminal: Any,
    ) -> Any:
        """Run ``argv`` in a terminal of the editor; returns a ``ProcessOutcome``."""
        ...


class Workspace:
    """The directory the coding tools work in, the roots they are confined to, and the editor
    they may work through (module docs).

    Args:
        root: the workspace root; relative paths are taken from it.
        sandbox: its roots are the allowed directories (default: the workspace root alone).
        confined: ``False`` lets the tools use any path (warns: see the module docs).

    Raises:
        ValueError: ``root`` is not a directory, or ``sandbox`` given with ``confined=False``.
    """

    __slots__ = ("beneath", "confined", "editor", "root", "sandbox")

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        sandbox: Sandbox | None = None,
        confined: bool = True,
    ) -> None:
        resolved = Path(os.path.realpath(os.path.expanduser(os.fspath(root))))
        if not resolved.is_dir():
            raise ValueError(f"the workspace root {os.fspath(root)!r} is not a directory")
        if sandbox is not None and not confined:
            raise ValueError("a workspace with a sandbox is confined; drop confined=False")
        if not confined:
            warnings.warn(_UNCONFINED, UserWarning, stacklevel=2)
        self.root = resolved
        self.sandbox = sandbox
        self.confined = confined
        roots = list(sandbox.roots) if sandbox is not None else [resolved]
        self.beneath = Beneath(roots if confined else [Path("/")])
        self.editor: Editor | None = None

    @property
    def roots(self) -> tuple[Path, ...]:
        """The directories the tools may use (``/`` when not confined)."""
        return self.beneath.roots

    def resolve(self, path: str, *, cwd: Path | None = None) -> Path:
        """The absolute path ``path`` names (as given; relative to ``cwd`` or the root).

        Raises:
            ToolInputError: the path is empty or unusable, or not under the roots.
        """
        if not path:
            raise ToolInputError("the path is empty; give a file or directory name")
        if "\x00" in path:
            raise ToolInputError("the path contains a NUL character")
        full = os.path.expanduser(path) if path.startswith("~") else path
        base = cwd if cwd is not None else self.root
        absolute = Path(os.path.normpath(os.path.join(base, full)))
        if self.confined:
            try:
                self.beneath.start(str(absolute), path)
            except ToolInputError:
                roots = ", ".join(str(r) for r in self.roots)
                raise ToolInputError(
                    f"{path!r} is outside the allowed directories ({roots}); use a path inside them"
                ) from None
            except (OSError, ValueError) as exc:
                raise ToolInputError(f"{path!r} is not a usable path: {exc}") from None
        return absolute

    def display(self, path: Path) -> str:
        """``path`` as the model and the user should see it: relative to the root if inside."""
        try:
            relative = path.relative_to(self.root)
        except ValueError:
            return str(path)
        return str(relative) if relative.parts else "."

    @contextlib.asynccontextmanager
    async def lock(self, path: Path) -> AsyncIterator[None]:
        """Hold the change lock of the file ``path`` (its real path): changes to one file run
        one at a time, in the order they asked."""
        key = await anyio.to_thread.run_sync(os.path.realpath, path)
        try:
            table = _locks.get()
        except LookupError:
            table = {}
            _locks.set(table)
        entry = table.get(key)
        if entry is None:
            entry = table[key] = [anyio.Lock(), 0]
        entry[1] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1] -= 1
            if entry[1] == 0:
                del table[key]

    def __repr__(self) -> str:
        if not self.confined:
            return f"Workspace({str(self.root)!r}, UNCONFINED)"
        return f"Workspace({str(self.root)!r}, roots={[str(r) for r in self.roots]!r})"


def os_error(exc: OSError, shown: str) -> ToolInputError:
    """An ``OSError`` as the error the model reads."""
    return ToolInputError(describe_os_error(exc, shown))
