"""What people used to other coding agents expect (issue 38): completion of commands and
``@`` paths, a history that survives restarts with Ctrl+R, Ctrl+C and Esc Esc, tool output's
head and tail with the time it ran, a model picker, and a first screen that says what to do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import agentloop as al
from agentloop.testing import reply_text, reply_tool_calls
from agentloop_tui import NoticeEntry, PromptHistory

from ._helpers import PausingModel, make_app, screen_text, settle, text_of

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


def _sent(model: PausingModel, call: int = -1) -> list[str]:
    """The texts of the last message the model got on call ``call``."""
    return [block.text for block in model.contexts[call].messages[-1].content]


async def test_slash_commands_are_offered_as_you_type(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([]))
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await pilot.press("/", "h")
        await settle(pilot)
        assert app.suggestions.display and "/help" in text_of(app.suggestions)
        assert "keys and commands" in text_of(app.suggestions)
        await pilot.press("tab")
        assert app.prompt.text == "/help" and not app.suggestions.display
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        assert type(app.screen).__name__ == "HelpScreen"


async def test_at_paths_complete_in_the_workspace_and_attach_the_file(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print('main')\n")
    (tmp_path / "src" / "util.py").write_text("X = 1\n")
    model = PausingModel([reply_text("seen")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"look at @sr", "tab")
        assert app.prompt.text == "look at @src/"
        await settle(pilot)
        assert "@src/main.py" in text_of(app.suggestions)  # the directory's entries next
        await pilot.press("m", "tab")
        assert app.prompt.text == "look at @src/main.py"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
    texts = _sent(model)
    assert texts[0] == "look at @src/main.py"
    assert texts[1] == "<file path=\"src/main.py\">\nprint('main')\n\n</file>"
    notices = [e.text for e in app.view.entries if isinstance(e, NoticeEntry)]
    assert "attached src/main.py (1 lines)" in notices


async def test_a_path_outside_the_workspace_is_not_attached(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret.txt").write_text("hunter2\n")
    model = PausingModel([reply_text("ok")])
    app = make_app(work, model)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"read @../secret.txt", "tab")
        assert app.prompt.text == "read @../secret.txt"  # nothing offered outside
        await pilot.press("enter")
        await app.workers.wait_for_complete()
    assert _sent(model) == ["read @../secret.txt"]
    assert "hunter2" not in str(model.contexts)


async def test_history_survives_a_restart_and_ctrl_r_searches_it(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    app = make_app(
        tmp_path, PausingModel([reply_text("1"), reply_text("2")]), history=PromptHistory(path)
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        for prompt in ("fix the flaky test", "write the changelog"):
            await pilot.press(*prompt, "enter")
            await app.workers.wait_for_complete()
    again = make_app(tmp_path, PausingModel([]), history=PromptHistory(path))
    async with again.run_test(size=(100, 30)) as pilot:
        await again.ready.wait()
        await pilot.press("up")
        assert again.prompt.text == "write the changelog"
        await pilot.press("ctrl+u", "ctrl+r")
        await pilot.pause()
        assert type(again.screen).__name__ == "HistorySearch"
        await pilot.press(*"flaky", "enter")
        await pilot.pause()
        assert again.prompt.text == "fix the flaky test"


async def test_ctrl_c_clears_the_prompt_then_quits_when_pressed_twice(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"half a thought", "ctrl+c")
        assert app.prompt.text == "" and app.is_running
        await pilot.press("ctrl+c")
        assert app.is_running  # once on an empty prompt: it says how to quit
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_value == 0


async def test_esc_twice_goes_back_to_edit_the_last_prompt(tmp_path: Path) -> None:
    model = PausingModel([reply_text("one"), reply_text("two"), reply_text("better")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        for prompt in ("first", "second, with a typo"):
            await pilot.press(*prompt, "enter")
            await app.workers.wait_for_complete()
        await pilot.press("escape", "escape")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert app.prompt.text == "second, with a typo"
        assert app.session is not None and len(app.session.agent.messages) == 2
        await pilot.press("ctrl+u", *"second, done right", "enter")
        await app.workers.wait_for_complete()
    texts = [al.extract_text(m.content) for m in model.contexts[-1].messages]
    assert texts == ["first", "one", "second, done right"]


async def test_tool_output_shows_its_head_and_tail_and_what_ran(tmp_path: Path) -> None:
    command = "seq 1 200; exit 1"
    model = PausingModel([reply_tool_calls(("bash", {"command": command})), reply_text("failed")])
    app = make_app(tmp_path, model, auto_collapse=None)
    async with app.run_test(size=(100, 60)) as pilot:
        await app.ready.wait()
        assert app.session is not None
        app.session.approval_mode = "bypassed"
        await pilot.press(*"count", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        (block,) = app.query("ToolBlock")
        shown = "\n".join(line.lstrip("▊ ") for line in text_of(block).splitlines())
        assert "bash: seq 1 200; exit 1 → exit 1" in shown.splitlines()[0]
        assert "\n1\n2\n" in shown and "200" in shown and "[exit code 1]" in shown
        assert "lines …" in shown and "\n100\n" not in shown  # the middle is left out
        await pilot.press("f2")
        await settle(pilot)
        assert text_of(block).lstrip("▊ ").startswith("▸ ✗ bash: seq 1 200; exit 1 → exit 1")


async def test_a_running_tool_shows_its_time_and_how_to_interrupt(tmp_path: Path) -> None:
    now = [100.0]
    model = PausingModel([reply_tool_calls(("bash", {"command": "sleep 30"})), reply_text("ok")])
    app = make_app(tmp_path, model, clock=lambda: now[0])
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        assert app.session is not None
        app.session.approval_mode = "bypassed"
        await pilot.press(*"wait", "enter")
        while not app.view.tool_entries():
            await pilot.pause()
        now[0] += 12.0
        app.tick()
        await settle(pilot)
        line = text_of(app.query_one("ToolBlock")).splitlines()[0]
        assert "… bash: sleep 30 · 12s · esc to interrupt" in line
        await pilot.press("escape")
        await app.workers.wait_for_complete()


async def test_model_opens_a_picker_with_windows_and_prices(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([]))
    async with app.run_test(size=(120, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"/model", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert type(app.screen).__name__ == "ModelPicker"
        await pilot.press(*"gpt-4.1-mini")
        await settle(pilot)
        shown = screen_text(app)
        assert "openai:gpt-4.1-mini" in shown and "k ctx" in shown and "per M" in shown
        choices: Any = app.screen.query_one("#choices")
        picked = choices.get_option_at_index(choices.highlighted).id
        await pilot.press("enter")
        await pilot.pause()
        assert app.session is not None and app.session.model == picked


async def test_the_first_screen_says_what_to_do(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([reply_text("hi")]))
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await settle(pilot)
        shown = screen_text(app)
        assert "scripted:demo" in shown and str(app.session.workspace.root) in shown  # type: ignore[union-attr]
        assert "Type a task" in shown and "Ctrl+J" in shown and "/help" in shown
        await pilot.press(*"hello", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert "Type a task" not in screen_text(app)
