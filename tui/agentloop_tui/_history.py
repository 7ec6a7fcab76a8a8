"""The prompts a user sent, per project, kept across restarts: Up and Down recall them, Ctrl+R
searches them.

Each workspace has a file of its own under ``$XDG_STATE_HOME/agentloop/history`` (else
``~/.local/state/agentloop/history``), named after a hash of the workspace's path: one JSON
string per line, appended as prompts are sent. Reading is bounded (the last ``MAX_BYTES`` of
the file; a line that does not decode is skipped) and the file is rewritten to its last
``KEEP`` prompts once it holds twice as many. History is a convenience: when the file cannot be
read or written the prompts are kept for this run only, and nothing fails.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["KEEP", "MAX_BYTES", "PromptHistory", "history_path"]

KEEP = 1000
"""How many prompts a project's history keeps."""
MAX_BYTES = 1 << 20
"""The most of a history file read on start."""

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(str).decode


def history_path(
    workspace: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> Path:
    """The history file of ``workspace`` (whether or not it exists)."""
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    key = hashlib.sha256(os.path.realpath(os.fspath(workspace)).encode()).hexdigest()[:24]
    return Path(state) / "agentloop" / "history" / f"{key}.jsonl"


class PromptHistory:
    """A project's sent prompts, oldest first.

    Args:
        path: the file they are kept in (``None``: this run only).
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.prompts: list[str] = []
        self._lines = 0  # lines in the file, to know when to rewrite it
        if path is not None:
            self._read(path)

    def _read(self, path: Path) -> None:
        try:
            with path.open("rb") as file:
                size = file.seek(0, os.SEEK_END)
                file.seek(max(0, size - MAX_BYTES))
                data = file.read(MAX_BYTES)
        except OSError:
            return  # no history yet, or none readable: start empty
        lines = data.split(b"\n")
        if size > MAX_BYTES:
            lines = lines[1:]  # the first is cut
        for line in lines:
            if not line.strip():
                continue
            self._lines += 1
            try:
                self._remember(_decode(line))
            except msgspec.DecodeError:
                continue  # a torn or foreign line
        del self.prompts[:-KEEP]

    def _remember(self, text: str) -> None:
        if text and (not self.prompts or self.prompts[-1] != text):
            self.prompts.append(text)

    def add(self, text: str) -> None:
        """Remember ``text`` (not twice in a row), in the file too."""
        if not text.strip() or (self.prompts and self.prompts[-1] == text):
            return
        self._remember(text)
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._lines >= 2 * KEEP:
                del self.prompts[:-KEEP]
                temporary = self.path.with_suffix(".tmp")
                temporary.write_bytes(b"".join(_encode(p) + b"\n" for p in self.prompts))
                os.replace(temporary, self.path)
                self._lines = len(self.prompts)
            else:
                with self.path.open("ab") as file:
                    file.write(_encode(text) + b"\n")
                self._lines += 1
        except OSError:
            self.path = None  # kept for this run only from now on

    def search(self, query: str, *, limit: int = 50) -> list[str]:
        """Prompts holding ``query`` (case-insensitive), newest first, each once."""
        needle = query.lower()
        found: list[str] = []
        seen: set[str] = set()
        for text in reversed(self.prompts):
            if text not in seen and needle in text.lower():
                seen.add(text)
                found.append(text)
                if len(found) >= limit:
                    break
        return found
