"""Real terminals (tmux, see ``_tmux``): full screen and inline, which Textual's Pilot cannot
run; a failing editor; quitting while a command runs; the bare command's flags."""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING

from tests.coding._cli_helpers import Cli
from tests.coding._fake_openai import running_fake_openai

from ._tmux import ANSWERS, READY, Tmux, agentloop, quote, tmux

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["tmux"]  # the fixture, used by name


def _workspace(tmp_path: Path) -> Cli:
    cli = Cli(tmp_path)
    (cli.workspace / "README.md").write_text("# demo\n")
    return cli


def test_the_tui_in_a_real_terminal_streams_shows_tools_and_aborts(
    tmp_path: Path, tmux: Tmux
) -> None:
    cli = _workspace(tmp_path)
    answers = [*ANSWERS, {"tool_calls": [("bash", {"command": "sleep 60"})]}]
    with running_fake_openai(answers) as server:
        tmux.start(agentloop(cli, server))
        tmux.wait_for(lambda s: READY in s, "TUI")
        tmux.keys("what is here?")
        tmux.keys("Enter")
        screen = tmux.wait_for(lambda s: "nothing else." in s and "idle" in s, "answer")
        assert "› what is here?" in screen
        assert "✓ List ." in screen  # the tool block
        assert "The workspace holds README.md and nothing else." in screen
        assert "openai:" in screen and "EXECUTE" in screen

        tmux.keys("run the slow thing")
        tmux.keys("Enter")
        screen = tmux.wait_for(lambda s: "… bash: sleep 60" in s, "running tool")
        assert "esc to interrupt" in screen
        tmux.keys("Escape")
        screen = tmux.wait_for(lambda s: "aborted" in s, "aborted state")
        assert "● aborted" in screen
        tmux.keys("C-q")
        assert tmux.wait_exited("the TUI did not quit on Ctrl+Q") == 0
    assert len(server.requests) == 3


def test_inline_mode_puts_finished_messages_into_the_terminals_scrollback(
    tmp_path: Path, tmux: Tmux
) -> None:
    cli = _workspace(tmp_path)
    marker = f"printed before agentloop {uuid.uuid4().hex[:8]}"
    before = [marker, *(f"earlier output {n}" for n in range(40))]  # more than the pane shows
    printed = "printf '%s\\n' " + " ".join(quote(line) for line in before)
    with running_fake_openai(ANSWERS) as server:
        # The bare command with a flag: the TUI's (issue 38: no argparse error).
        tmux.start(f"{printed}; {agentloop(cli, server, '--inline')}")
        screen = tmux.wait_for(lambda s: READY in s, "inline TUI")
        assert marker not in screen and marker in tmux.screen(history=True)  # scrolled off
        assert "earlier output 39" in screen  # the app is drawn below the shell's output
        tmux.keys("what is here?")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "nothing else." in s and "idle" in s, "answer")
        # While the app still runs, the finished messages are the terminal's own output, above
        # the app: in its scrollback, in order, at the left margin.
        lines = [line.rstrip() for line in tmux.screen(history=True).splitlines()]
        asked = lines.index("› what is here?")
        assert lines[asked + 1 : asked + 3] == [
            "  ✓ List . — README.md",
            "The workspace holds README.md and nothing else.",
        ]
        app_top = max(n for n, line in enumerate(lines) if "╭" in line)  # the prompt's box
        assert asked < app_top
        tmux.keys("C-q")
        assert tmux.wait_exited("the inline TUI did not quit on Ctrl+Q") == 0
    assert len(server.requests) == 2

    lines = [line.rstrip() for line in tmux.screen(history=True).splitlines()]
    # What the terminal held before is all there, in order: nothing was cleared or drawn over.
    first = lines.index(marker)
    assert lines[first : first + len(before)] == before
    asked = lines.index("› what is here?")
    assert lines.count("› what is here?") == 1  # printed once, not again at the end
    assert first + len(before) <= asked
    assert not any("EXECUTE" in line for line in lines)  # the app left nothing behind
    assert any(line.startswith("session: ") for line in lines[asked:])


def test_a_failing_editor_leaves_the_app_working(tmp_path: Path, tmux: Tmux) -> None:
    cli = _workspace(tmp_path)
    with running_fake_openai(ANSWERS) as server:
        tmux.start(agentloop(cli, server, EDITOR="false"))
        tmux.wait_for(lambda s: READY in s, "TUI")
        tmux.keys("/editor")
        tmux.keys("Enter")
        screen = tmux.wait_for(lambda s: "exited with status 1" in s, "the editor's failure")
        assert "EXECUTE" in screen  # drawn again: the app has the terminal back
        tmux.keys("what is here?")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "nothing else." in s, "answer")
        tmux.keys("C-q")
        assert tmux.wait_exited("the TUI did not quit on Ctrl+Q after /editor") == 0


def test_quitting_while_a_command_runs_leaves_no_process(tmp_path: Path, tmux: Tmux) -> None:
    cli = _workspace(tmp_path)
    pid_file = cli.workspace / "sleep.pid"
    command = f"echo $$ > {pid_file}; exec sleep 60"
    with running_fake_openai([{"tool_calls": [("bash", {"command": command})]}]) as server:
        tmux.start(agentloop(cli, server, "-m", "openai:gpt-4.1"))  # bare, with -m
        tmux.wait_for(lambda s: READY in s, "TUI")
        tmux.keys("sleep")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "… bash:" in s, "running command")
        pid = int(pid_file.read_text())
        tmux.keys("C-q")
        assert tmux.wait_exited("the TUI did not quit while a command ran") == 0
    assert not os.path.exists(f"/proc/{pid}") or _zombie_or_gone(pid)
    assert "\x1b" not in tmux.screen()  # a clean terminal: nothing half-drawn left in it


def _zombie_or_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except FileNotFoundError:
        return True
