"""The external editor: write a prompt in ``$EDITOR`` (or ``$VISUAL``, or ``vi``).

``edit_prompt`` makes a temporary file in the system's temporary directory, runs the editor on
it and waits, reads what was written, and deletes the file whatever happened. A file left
empty (or only blank) means the user changed their mind: the result is ``None`` and nothing is
sent. The application suspends itself around the call, so the editor has the terminal.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from typing import TYPE_CHECKING

from agentloop import AgentError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = ["EditorError", "edit_prompt", "editor_command"]


class EditorError(AgentError, RuntimeError):
    """The editor could not be started or failed; the message says which and why."""


def editor_command(environ: Mapping[str, str] | None = None) -> list[str]:
    """The editor to run: ``$EDITOR``, else ``$VISUAL``, else ``vi`` (split like a shell)."""
    env = os.environ if environ is None else environ
    for variable in ("EDITOR", "VISUAL"):
        value = env.get(variable, "").strip()
        if value:
            return shlex.split(value)
    return ["vi"]


def _run(command: Sequence[str]) -> int:
    return subprocess.call(list(command))


def edit_prompt(
    initial: str = "",
    *,
    environ: Mapping[str, str] | None = None,
    run: Callable[[Sequence[str]], int] = _run,
) -> str | None:
    """Let the user write a prompt in their editor; returns it, or ``None`` when left empty.

    Args:
        initial: the text the file starts with (what was in the input box).
        environ: where ``EDITOR``/``VISUAL`` are read (default ``os.environ``).
        run: runs the command and returns its exit status (default: as a child process with
            this terminal).

    Raises:
        EditorError: the editor is not found, or exits with a failure status.
    """
    command = editor_command(environ)
    fd, path = tempfile.mkstemp(prefix="agentloop-prompt-", suffix=".md")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(initial)
        try:
            status = run([*command, path])
        except OSError as exc:
            raise EditorError(f"cannot run the editor {command[0]!r}: {exc.strerror}") from None
        if status != 0:
            raise EditorError(f"the editor {command[0]!r} exited with status {status}")
        with open(path, encoding="utf-8", errors="replace") as file:
            text = file.read()
    finally:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    return text.strip() or None
