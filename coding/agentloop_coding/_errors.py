"""``ToolInputError``, and how an ``OSError`` is told to the model.

``ToolInputError`` is how a tool says the model's input cannot be used (a missing file, an edit
that is not unique, a path outside the workspace): the tool base class turns it into an error
result the model can act on. It lives here, below every module that raises it.
"""

from __future__ import annotations

import errno

from agentloop import AgentError

__all__ = ["ToolInputError", "describe_os_error"]


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
    errno.ENXIO: "no such device or address",
    errno.EFBIG: "file too large",
    errno.EDQUOT: "disk quota exceeded",
}


def describe_os_error(exc: OSError, shown: str) -> str:
    """A short sentence for the model about an ``OSError`` on the path shown as ``shown``."""
    what = _OS_ERRORS.get(exc.errno or 0) or exc.strerror or type(exc).__name__
    return f"{shown}: {what}"
