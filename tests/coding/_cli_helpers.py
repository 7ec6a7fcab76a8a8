"""Running the installed ``agentloop`` command as a subprocess, in an isolated environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import agentloop as al

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["AGENTLOOP", "Cli", "decode_events", "write_script"]

_found = shutil.which("agentloop", path=os.path.dirname(sys.executable))
assert _found is not None, "the agentloop console script is not installed (pip install -e .)"
AGENTLOOP: str = _found

# Variables that would leak the developer's own settings or keys into a test.
_SCRUBBED_PREFIXES = ("AGENTLOOP_",)
_SCRUBBED_SUFFIXES = ("_API_KEY", "_BASE_URL")


def write_script(directory: Path, replies: list[dict[str, Any]], name: str = "script.json") -> str:
    """A scripted model's file (see ``agentloop_coding._scripted``); returns its model string."""
    path = directory / name
    path.write_text(json.dumps({"replies": replies}))
    return f"scripted:{path}"


def decode_events(stdout: str) -> list[al.AgentEvent]:
    """``--json`` output back into events; every line must be one."""
    return [al.decode(line, al.AgentEvent) for line in stdout.splitlines()]


class Cli:
    """The command in a workspace of its own, with its own config and data directories."""

    def __init__(self, root: Path) -> None:
        self.workspace = root / "work"
        self.workspace.mkdir()
        self.home = root / "home"
        self.home.mkdir()
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(_SCRUBBED_PREFIXES) and not k.endswith(_SCRUBBED_SUFFIXES)
        }
        env["XDG_CONFIG_HOME"] = str(self.home / "config")
        env["XDG_DATA_HOME"] = str(self.home / "data")
        env["PYTHONUNBUFFERED"] = "1"
        self.env = env

    @property
    def sessions_dir(self) -> Path:
        return self.home / "data" / "agentloop" / "sessions"

    def command(self, *args: str) -> list[str]:
        return [AGENTLOOP, *args]

    def run(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args),
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            cwd=self.workspace,
            env={**self.env, **(env or {})},
            timeout=60,
            check=False,
        )
