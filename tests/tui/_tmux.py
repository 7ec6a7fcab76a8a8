"""A real terminal for the tests: tmux runs ``agentloop`` (the TUI) against a loopback
OpenAI-compatible server; keys are typed with ``send-keys`` (or as raw bytes, ``send_bytes``, for
the encodings of other terminals) and the screen read with ``capture-pane``.

Each test has a tmux server of its own (its own socket, no user configuration), killed at the
end, with the processes of its panes, whatever happened. Without tmux the tests are skipped (they fail
where ``AGENTLOOP_REQUIRE_PROGRAMS=1``, as in CI, which installs it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from tests._programs import require
from tests.coding._cli_helpers import AGENTLOOP, Cli

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from tests.coding._fake_openai import FakeOpenAI

__all__ = ["ANSWERS", "READY", "TMUX", "Tmux", "agentloop", "quote", "tmux"]

READY = "Type a task"
"""On the first screen once a session is open."""

TMUX = shutil.which("tmux")
ANSWERS: list[dict[str, Any]] = [
    {"tool_calls": [("list_dir", {})]},
    {"text": "The workspace holds **README.md** and nothing else."},
]
"""A tool call, then an answer: what the first prompt of each test gets."""


class Tmux:
    """A tmux server of its own, named ``name`` (its socket), running one session, ``name``."""

    def __init__(self, name: str, config: str = os.devnull) -> None:
        self.name = name
        self.config = config

    def run(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run(
            [TMUX, "-L", self.name, "-f", self.config, *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return done.stdout

    def start(self, command: str, *, width: int = 110, height: int = 32) -> None:
        """Run ``command`` (a shell command line) in the session's one pane. The pane stays
        when the command ends, so its screen and exit status can be read."""
        size = ("-x", str(width), "-y", str(height))
        keep = ("set-option", "-w", "-t", self.name, "remain-on-exit", "on")
        self.run("new-session", "-d", "-s", self.name, *size, command, ";", *keep)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.name, *keys)

    def send_bytes(self, data: bytes) -> None:
        """Type ``data`` as the terminal would send it (another terminal's encoding of a key)."""
        self.run("send-keys", "-t", self.name, "-H", *(f"{b:02x}" for b in data))

    def screen(self, *, history: bool = False) -> str:
        """What the pane shows; with ``history``, its scrollback above it too."""
        return self.run("capture-pane", "-p", "-t", self.name, *(("-S", "-") if history else ()))

    def wait_for(self, found: Callable[[str], bool], what: str, timeout: float = 30) -> str:
        """The screen once ``found(screen)``; fails with the screen after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if found(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} on the screen after {timeout} s:\n{screen}")
            time.sleep(0.1)  # a real terminal has no event to wait on: poll its screen

    def pane(self) -> tuple[int | None, int]:
        """The exit status of the pane's command (minus the signal that ended it), ``None``
        while it runs; and its process id."""
        fields = "#{pane_dead_status}:#{pane_dead_signal}:#{pane_pid}"
        status, killed_by, pid = self.run("list-panes", "-t", self.name, "-F", fields).split(":")
        # tmux marks the pane dead when its terminal closes, and knows why once it has
        # reaped the process: until both are known the command counts as running.
        if status:
            return int(status), int(pid)
        if killed_by:
            return -int(killed_by), int(pid)
        return _zombie_status(int(pid)), int(pid)

    def wait_exited(self, what: str, timeout: float = 20) -> int:
        """The exit status of the pane's command once it ends; fails after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            status, _ = self.pane()
            if status is not None:
                return status
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} after {timeout} s:\n{self.screen()}")
            time.sleep(0.1)

    def kill(self) -> None:
        """End the server, its socket and the pane's command (by its process id)."""
        try:
            status, pid = self.pane()
            socket = self.run("display-message", "-p", "#{socket_path}").strip()
        except subprocess.CalledProcessError:  # no server: nothing was started
            return
        self.run("kill-server")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(socket)  # tmux leaves it behind
        if status is None:
            _end(pid)


def _zombie_status(pid: int) -> int | None:
    """The exit status of process ``pid`` if it has ended but is not yet reaped, else ``None``.

    tmux 3.3a now and then leaves a pane's ended process unreaped (a zombie, 20 s and more: its
    server sleeps in ``poll`` with no signal pending), so it never learns the exit status. The
    kernel keeps it for the parent: ``/proc/PID/stat`` field 52 holds it as ``waitpid`` would
    report it (Linux ≥ 3.5).
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # after the command's name
    except (FileNotFoundError, ProcessLookupError):
        return None  # reaped meanwhile: tmux has the status now
    if fields[0] != b"Z":
        return None
    return os.waitstatus_to_exitcode(int(fields[-1]))


def _end(pid: int, timeout: float = 10) -> None:
    """Wait for process ``pid`` (told to stop by tmux) to end; kill it after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


@pytest.fixture
def tmux(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Tmux]:
    """A tmux server of the test's own; ``indirect`` parametrisation gives its configuration."""
    require("tmux", "apt-get install tmux")  # ``.ci/run`` installs it; CI fails without it
    config = tmp_path / "tmux.conf"
    config.write_text(getattr(request, "param", ""))  # tests parametrise it indirectly
    session = Tmux(f"agentloop-{uuid.uuid4().hex[:8]}", str(config))
    try:
        yield session
    finally:
        session.kill()


def agentloop(cli: Cli, server: FakeOpenAI, *args: str, **env: str) -> str:
    """The shell command running ``agentloop *args`` in the workspace, on the fake server; it
    takes the shell's place (``exec``), so the pane's process is agentloop's."""
    variables = {
        **cli.env,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": server.base_url,
        "AGENTLOOP_APPROVAL": "bypassed",
        "XDG_STATE_HOME": str(cli.home / "state"),
        "TERM": "xterm-256color",
        **env,
    }
    exports = " ".join(f"{k}={quote(v)}" for k, v in variables.items())
    command = " ".join(quote(part) for part in (AGENTLOOP, *args))
    return f"cd {quote(str(cli.workspace))} && exec env -i {exports} {command}"


def quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"
