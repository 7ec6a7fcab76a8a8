"""Keys as real terminals send them (issue 38, defect 4), typed into tmux as raw bytes: the
kitty keyboard protocol's Shift+Enter, xterm's modifyOtherKeys Shift+Enter, tmux's own encoding,
legacy Alt+Enter (ESC CR), and Ctrl+J (a line feed, in every terminal). The newline key shown
is the one that works: Ctrl+J until the terminal proves it tells Shift+Enter apart."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.coding._cli_helpers import Cli
from tests.coding._fake_openai import running_fake_openai

from ._tmux import ANSWERS, READY, Tmux, agentloop, tmux

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["tmux"]

KITTY_SHIFT_ENTER = b"\x1b[13;2u"
XTERM_SHIFT_ENTER = b"\x1b[27;2;13~"  # modifyOtherKeys
LEGACY_ALT_ENTER = b"\x1b\r"
CTRL_J = b"\n"


def _prompt_lines(screen: str) -> list[str]:
    """The lines inside the prompt's box."""
    lines = screen.splitlines()
    top = max(n for n, line in enumerate(lines) if line.startswith("╭"))
    bottom = max(n for n, line in enumerate(lines) if line.startswith("╰"))
    return [line.strip("│ ").rstrip() for line in lines[top + 1 : bottom]]


def test_every_encoding_of_a_newline_adds_a_line_and_enter_sends(
    tmp_path: Path, tmux: Tmux
) -> None:
    cli = Cli(tmp_path)
    with running_fake_openai([{"text": "Four lines received."}]) as server:
        tmux.start(agentloop(cli, server))
        screen = tmux.wait_for(lambda s: READY in s, "TUI")
        # tmux answers neither keyboard query: nothing proves Shift+Enter works yet.
        assert "Ctrl+J new line" in screen and "Ctrl+J adds a line" in screen
        tmux.keys("-l", "one")
        tmux.send_bytes(CTRL_J)
        tmux.keys("-l", "two")
        tmux.send_bytes(XTERM_SHIFT_ENTER)
        tmux.keys("-l", "three")
        tmux.send_bytes(KITTY_SHIFT_ENTER)
        tmux.keys("-l", "four")
        screen = tmux.wait_for(lambda s: "four" in s, "the fourth line")
        assert _prompt_lines(screen) == ["one", "two", "three", "four"]  # nothing was sent
        assert not server.requests
        tmux.keys("Enter")
        screen = tmux.wait_for(lambda s: "Four lines received." in s, "answer")
        # The terminal sent Shift+Enter encoded: from now on that is the key shown.
        assert "Shift+Enter new line" in screen
    sent = server.requests[0]["messages"][-1]["content"]
    assert "one\ntwo\nthree\nfour" in str(sent)


def test_tmuxs_own_shift_enter_adds_a_line(tmp_path: Path, tmux: Tmux) -> None:
    cli = Cli(tmp_path)
    with running_fake_openai([{"text": "ok"}]) as server:
        tmux.start(agentloop(cli, server))
        tmux.wait_for(lambda s: READY in s, "TUI")
        tmux.keys("-l", "first")
        tmux.keys("S-Enter")  # as tmux encodes it for the pane
        tmux.keys("-l", "second")
        screen = tmux.wait_for(lambda s: "second" in s, "the second line")
        assert _prompt_lines(screen)[:2] == ["first", "second"] and not server.requests


def test_legacy_alt_enter_queues_a_follow_up_instead_of_steering(
    tmp_path: Path, tmux: Tmux
) -> None:
    cli = Cli(tmp_path)
    (cli.workspace / "README.md").write_text("# demo\n")
    answers = [{"tool_calls": [("bash", {"command": "sleep 5"})]}, *ANSWERS, {"text": "Done."}]
    with running_fake_openai(answers) as server:
        tmux.start(agentloop(cli, server))
        tmux.wait_for(lambda s: READY in s, "TUI")
        tmux.keys("-l", "wait a little")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "… bash: sleep 5" in s, "running command")
        tmux.keys("-l", "then list the files")
        tmux.send_bytes(LEGACY_ALT_ENTER)  # ESC CR: what Alt+Enter is without the protocols
        screen = tmux.wait_for(lambda s: "follow-up: then list the files" in s, "queued")
        assert "steer:" not in screen
        assert "… bash: sleep 5" in screen  # not interrupted: a follow-up waits its turn
        tmux.wait_for(lambda s: "nothing else." in s and "idle" in s, "the follow-up's answer", 40)
        tmux.keys("C-q")
        assert tmux.wait_exited("the TUI did not quit") == 0
