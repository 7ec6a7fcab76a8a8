"""The approval dialog (issue 38, defect 6): a new file of thousands of lines is shown as what
fits, with how many more lines there are, the keys, and "no, and tell it what to do instead";
and commands are allowed by their start ("always allow `git status`"), never more than that."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from rich.syntax import Syntax

import agentloop as al
from agentloop.testing import reply_text, reply_tool_calls

from ._helpers import PausingModel, make_app, screen_text, settle

if TYPE_CHECKING:
    from pathlib import Path

    from textual.pilot import Pilot

pytestmark = pytest.mark.anyio

BIG = "".join(f"line_{n} = {n}  # a generated constant\n" for n in range(2100))


async def _dialog(pilot: Pilot[Any]) -> Any:
    while type(pilot.app.screen).__name__ != "ApprovalScreen":
        await pilot.pause()
    await settle(pilot)
    return pilot.app.screen


@pytest.fixture
def lexed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many lines each syntax highlighting went through."""
    seen: list[int] = []
    highlight = Syntax.highlight

    def counting(self: Syntax, code: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(code.count("\n") + 1)
        return highlight(self, code, *args, **kwargs)

    monkeypatch.setattr(Syntax, "highlight", counting)
    return seen


async def test_a_big_new_file_shows_what_fits_and_how_much_more(
    tmp_path: Path, lexed: list[int]
) -> None:
    write = ("write_file", {"path": "constants.py", "content": BIG})
    model = PausingModel([reply_tool_calls(write), reply_text("written")])
    app = make_app(tmp_path, model, auto_collapse=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"write them", "enter")
        await _dialog(pilot)
        shown = screen_text(app)
        assert "line_0 = 0" in shown and "line_2099" not in shown
        assert "more lines" in shown  # … 2,0xx more lines
        assert max(lexed) <= 30  # only what the dialog shows was highlighted, not 2,100 lines
        for key in ("y yes", "a always allow write_file", "n no", "t no, tell it what to do"):
            assert key in shown
        lexed.clear()
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert (tmp_path / "constants.py").read_text() == BIG
        assert max(lexed, default=0) <= 300  # the tool block's diff is bounded too
        assert "more lines" in screen_text(app)


async def test_no_and_what_to_do_instead_reaches_the_model(tmp_path: Path) -> None:
    write = ("write_file", {"path": "x.py", "content": "import os\n"})
    model = PausingModel([reply_tool_calls(write), reply_text("I will use pathlib.")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"write x", "enter")
        await _dialog(pilot)
        await pilot.press("t", *"use pathlib, not os", "enter")
        await app.workers.wait_for_complete()
    assert not (tmp_path / "x.py").exists()
    result = model.contexts[-1].messages[-1]
    assert isinstance(result, al.ToolResultMessage) and result.is_error
    assert "use pathlib, not os" in al.extract_text(result.content)


def _bash(command: str) -> al.AssistantMessage:
    return reply_tool_calls(("bash", {"command": command}))


async def test_always_allow_a_command_prefix(tmp_path: Path) -> None:
    model = PausingModel(
        [
            _bash("git status -s"),
            reply_text("one"),
            _bash("git status --porcelain"),  # same start: runs without a question
            reply_text("two"),
            _bash("git status; touch pwned"),  # more than the start says: asked
            reply_text("three"),
            _bash("git log -1"),  # another start: asked
            reply_text("four"),
        ]
    )
    app = make_app(tmp_path, model)
    async with app.run_test(size=(110, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"status", "enter")
        dialog = await _dialog(pilot)
        assert "always allow `git status`" in screen_text(app)
        await pilot.press("a")
        await app.workers.wait_for_complete()
        await pilot.press(*"again", "enter")
        await app.workers.wait_for_complete()  # no dialog
        assert type(app.screen).__name__ != "ApprovalScreen"
        await pilot.press(*"sneaky", "enter")
        dialog = await _dialog(pilot)
        assert "git status; touch pwned" in screen_text(app)
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await pilot.press(*"log", "enter")
        dialog = await _dialog(pilot)
        await pilot.press("n")
        await app.workers.wait_for_complete()
        assert dialog.tool == "bash"
        assert app.session is not None and "bash" not in app.session.approvals.trusted
        assert app.session.commands.prefixes == ["git status"]
    assert not (tmp_path / "pwned").exists()


def test_a_command_is_allowed_by_its_start_only_when_it_is_plain_words() -> None:
    from agentloop_coding import CommandTrust
    from agentloop_tui._approval import command_prefix

    assert command_prefix("git status -s") == "git status"
    assert command_prefix("pytest -x tests") == "pytest"
    assert command_prefix("npm test") == "npm test"
    for risky in ("echo $HOME", "ls > out", "a && b", "cat 'x y'", "rm *", "x\ny", "`id`"):
        assert command_prefix(risky) is None, risky
    rules = CommandTrust()  # what "always" adds to: the session's own trust (session.commands)
    rules.trust("git status")
    assert rules.allows("git status") and rules.allows("git status --short src/")
    for refused in (
        "git statusx",
        "git log",
        "git status; rm -rf ~",
        "git status && curl x",
        "git status | sh",
        "git status $(id)",
        "git status > /etc/passwd",
        "git status\nrm -rf ~",
    ):
        assert not rules.allows(refused), refused


@pytest.mark.parametrize("size", [(50, 16), (80, 24)])
async def test_every_key_shows_on_a_small_terminal(tmp_path: Path, size: tuple[int, int]) -> None:
    write = ("write_file", {"path": "constants.py", "content": BIG})
    model = PausingModel([reply_tool_calls(write), reply_text("written")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=size) as pilot:
        await app.ready.wait()
        await pilot.press(*"write them", "enter")
        await _dialog(pilot)
        shown = screen_text(app)
        for key in ("y yes", "a always allow", "n no", "t no, tell it"):
            assert key in shown, key
        await pilot.press("n")
        await app.workers.wait_for_complete()
