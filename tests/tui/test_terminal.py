"""One real terminal: tmux runs ``agentloop`` (the TUI) against a loopback OpenAI-compatible
server; keys are typed with ``send-keys`` and the screen read with ``capture-pane``.

tmux must be installed (CI installs it); without it this test fails, saying so.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from tests.coding._cli_helpers import AGENTLOOP, Cli
from tests.coding._fake_openai import running_fake_openai

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

TMUX = shutil.which("tmux")


class Tmux:
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run([TMUX, *args], capture_output=True, text=True, timeout=30, check=True)
        return done.stdout

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.name, *keys)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.name)

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


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    if TMUX is None:
        pytest.fail("tmux is not installed: the real-terminal test needs it (apt-get install tmux)")
    session = Tmux(f"agentloop-{uuid.uuid4().hex[:8]}")
    yield session
    subprocess.run([TMUX, "kill-session", "-t", session.name], capture_output=True, check=False)


def test_the_tui_in_a_real_terminal_streams_shows_tools_and_aborts(
    tmp_path: Path, tmux: Tmux
) -> None:
    cli = Cli(tmp_path)
    (cli.workspace / "README.md").write_text("# demo\n")
    answers: list[dict[str, Any]] = [
        {"tool_calls": [("list_dir", {})]},
        {"text": "The workspace holds **README.md** and nothing else."},
        {"tool_calls": [("bash", {"command": "sleep 60"})]},
    ]
    with running_fake_openai(answers) as server:
        env = {
            **cli.env,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": server.base_url,
            "AGENTLOOP_APPROVAL": "bypassed",
            "TERM": "xterm-256color",
        }
        exports = " ".join(f"{k}={_quote(v)}" for k, v in env.items())
        command = f"cd {_quote(str(cli.workspace))} && env -i {exports} {AGENTLOOP}"
        tmux.run("new-session", "-d", "-s", tmux.name, "-x", "110", "-y", "32", command)
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
        deadline = time.monotonic() + 20
        while "agentloop" in tmux.run(
            "list-panes", "-t", tmux.name, "-F", "#{pane_current_command}"
        ):
            assert time.monotonic() < deadline, "the TUI did not quit on Ctrl+Q"
            time.sleep(0.1)
    assert len(server.requests) == 3


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"
