"""Where the coding tools work: a root directory and, when configured, the sandbox guarding it.

Every built-in tool turns the paths the model gives it into absolute paths here, at the point
of use: a relative path is taken from the workspace root (or from the call's own working
directory), ``~`` is expanded, and with a ``Sandbox`` the result must lie under its roots. The
same ``Sandbox`` usually also runs as a pre-dispatch policy, so a call naming a path outside is
skipped before it is approved; checking again here narrows the window between check and use
(see ``agentloop_policies.Sandbox`` for what no check on names can close).

``ToolInputError`` is how a tool says the model's input cannot be used (a missing file, an edit
that is not unique): the tool base class turns it into an error result the model can act on.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING

from agentloop import AgentError

if TYPE_CHECKING:
    from agentloop_policies import Sandbox

__all__ = ["ToolInputError", "Workspace", "describe_os_error"]


class ToolInputError(AgentError):
    """The model's input cannot be used; the message tells the model what to do instead."""


_OS_ERRORS = {
    errno.ENOENT: "no such file or directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "is a directory",
    errno.ENOTDIR: "not a directory",
    errno.ENOSPC: "no space left on the device",
    errno.EROFS: "read-only file system",
    errno.ENAMETOOLONG: "file name too long",
    errno.ELOOP: "too many levels of symbolic links",
}


def describe_os_error(exc: OSError, shown: str) -> str:
    """A short sentence for the model about an ``OSError`` on the path shown as ``shown``."""
    what = _OS_ERRORS.get(exc.errno or 0) or exc.strerror or type(exc).__name__
    return f"{shown}: {what}"


class Workspace:
    """The directory the coding tools work in, and the sandbox that keeps them there.

    Args:
        root: the workspace root; relative paths are taken from it.
        sandbox: when given, every path a tool uses must pass ``sandbox.check``.

    Raises:
        ValueError: ``root`` is not a directory.
    """

    __slots__ = ("root", "sandbox")

    def __init__(self, root: str | os.PathLike[str], *, sandbox: Sandbox | None = None) -> None:
        resolved = Path(os.path.realpath(os.path.expanduser(os.fspath(root))))
        if not resolved.is_dir():
            raise ValueError(f"the workspace root {os.fspath(root)!r} is not a directory")
        self.root = resolved
        self.sandbox = sandbox

    def resolve(self, path: str, *, cwd: Path | None = None) -> Path:
        """The absolute path ``path`` names, relative paths taken from ``cwd`` or the root.

        Raises:
            ToolInputError: the path is empty or unusable, or the sandbox refuses it.
        """
        text = path.strip()
        if not text:
            raise ToolInputError("the path is empty; give a file or directory name")
        if "\x00" in text:
            raise ToolInputError("the path contains a NUL character")
        base = cwd if cwd is not None else self.root
        if self.sandbox is not None:
            try:
                checked = self.sandbox.check(text, base=base)
            except ValueError as exc:
                raise ToolInputError(f"{text!r} is not a usable path: {exc}") from None
            if checked is None:
                roots = ", ".join(str(r) for r in self.sandbox.roots)
                raise ToolInputError(
                    f"{text!r} is outside the allowed directories ({roots}); use a path inside them"
                )
            return checked
        full = Path(os.path.expanduser(text))
        if not full.is_absolute():
            full = base / full
        return Path(os.path.normpath(full))

    def display(self, path: Path) -> str:
        """``path`` as the model and the user should see it: relative to the root if inside."""
        try:
            relative = path.relative_to(self.root)
        except ValueError:
            return str(path)
        return str(relative) if relative.parts else "."

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r}, sandbox={self.sandbox!r})"
