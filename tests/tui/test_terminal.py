"""Real terminals: tmux runs ``agentloop`` (the TUI) against a loopback OpenAI-compatible
server; keys are typed with ``send-keys`` and the screen read with ``capture-pane``.

Full screen, and inline mode (``agentloop tui --inline``), which Textual's Pilot cannot run: it
draws below the shell's prompt and must leave the terminal's scrollback as it found it, then
print the conversation into it.

Each test has a tmux server of its own (its own socket, no user configuration), killed at the
end, with the processes of its panes, whatever happened. tmux must be installed (CI installs
it); without it these tests fail, saying so.
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
from tests.coding._fake_openai import running_fake_openai

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from tests.coding._fake_openai import FakeOpenAI

TMUX = shutil.which("tmux")
ANSWERS: list[dict[str, Any]] = [
    {"tool_calls": [("list_dir", {})]},
    {"text": "The workspace holds **README.md** and nothing else."},
]
"""A tool call, then an answer: what the first prompt of each test gets."""


class Tmux:
    """A tmux server of its own, named ``name`` (its socket), running one session, ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run(
            [TMUX, "-L", self.name, "-f", os.devnull, *args],
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
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    require("tmux", "apt-get install tmux")  # ``.ci/run`` installs it
    session = Tmux(f"agentloop-{uuid.uuid4().hex[:8]}")
    try:
        yield session
    finally:
        session.kill()


def _agentloop(cli: Cli, server: FakeOpenAI, *args: str) -> str:
    """The shell command running ``agentloop *args`` in the workspace, on the fake server; it
    takes the shell's place (``exec``), so the pane's process is agentloop's."""
    env = {
        **cli.env,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": server.base_url,
        "AGENTLOOP_APPROVAL": "bypassed",
        "TERM": "xterm-256color",
    }
    exports = " ".join(f"{k}={_quote(v)}" for k, v in env.items())
    command = " ".join(_quote(part) for part in (AGENTLOOP, *args))
    return f"cd {_quote(str(cli.workspace))} && exec env -i {exports} {command}"


def test_the_tui_in_a_real_terminal_streams_shows_tools_and_aborts(
    tmp_path: Path, tmux: Tmux
) -> None:
    cli = Cli(tmp_path)
    (cli.workspace / "README.md").write_text("# demo\n")
    answers = [*ANSWERS, {"tool_calls": [("bash", {"command": "sleep 60"})]}]
    with running_fake_openai(answers) as server:
        tmux.start(_agentloop(cli, server))
        tmux.wait_for(lambda s: "/help for keys" in s, "TUI")
        tmux.keys("what is here?")
        tmux.keys("Enter")
        screen = tmux.wait_for(lambda s: "nothing else." in s and "idle" in s, "answer")
        assert "› what is here?" in screen
        assert "✓ List ." in screen  # the tool block
        assert "The workspace holds README.md and nothing else." in screen
        assert "openai:" in screen and "EXECUTE" in screen

        tmux.keys("run the slow thing")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "… Run sleep 60" in s, "running tool")
        tmux.keys("Escape")
        screen = tmux.wait_for(lambda s: "aborted" in s, "aborted state")
        assert "● aborted" in screen
        tmux.keys("C-q")
        assert tmux.wait_exited("the TUI did not quit on Ctrl+Q") == 0
    assert len(server.requests) == 3


def test_inline_mode_keeps_the_scrollback_and_leaves_the_conversation_in_it(
    tmp_path: Path, tmux: Tmux
) -> None:
    cli = Cli(tmp_path)
    (cli.workspace / "README.md").write_text("# demo\n")
    marker = f"printed before agentloop {uuid.uuid4().hex[:8]}"
    before = [marker, *(f"earlier output {n}" for n in range(40))]  # more than the pane shows
    printed = "printf '%s\\n' " + " ".join(_quote(line) for line in before)
    with running_fake_openai(ANSWERS) as server:
        tmux.start(f"{printed}; {_agentloop(cli, server, 'tui', '--inline')}")
        screen = tmux.wait_for(lambda s: "/help for keys" in s, "inline TUI")
        assert marker not in screen and marker in tmux.screen(history=True)  # scrolled off
        assert "earlier output 39" in screen  # the app is drawn below the shell's output
        tmux.keys("what is here?")
        tmux.keys("Enter")
        screen = tmux.wait_for(lambda s: "nothing else." in s and "idle" in s, "answer")
        assert "› what is here?" in screen and "✓ List ." in screen
        assert "The workspace holds README.md and nothing else." in screen
        tmux.keys("C-q")
        assert tmux.wait_exited("the inline TUI did not quit on Ctrl+Q") == 0
    assert len(server.requests) == 2

    lines = [line.rstrip() for line in tmux.screen(history=True).splitlines()]
    # What the terminal held before is all there, in order: nothing was cleared or drawn over.
    first = lines.index(marker)
    assert lines[first : first + len(before)] == before
    # Below the app's last frame (kept: inline_no_clear), the conversation as plain text, at
    # the left margin where the app's frame has its padding.
    last_frame = max(n for n, line in enumerate(lines) if "EXECUTE" in line)
    printed_at = lines.index("› what is here?")
    assert first + len(before) <= last_frame < printed_at
    assert lines[printed_at : printed_at + 3] == [
        "› what is here?",
        "  done: List . — README.md",
        "The workspace holds README.md and nothing else.",
    ]
    assert lines[printed_at + 3].startswith("session: ")


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"
