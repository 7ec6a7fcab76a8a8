"""Tool blocks, inline diffs, approval and plan mode in the app (PRD §17 criteria 21, 26–30)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import agentloop as al
from agentloop.testing import reply_text, reply_tool_calls
from agentloop_tui import AgentApp, AssistantEntry
from agentloop_tui._approval import ApprovalScreen
from agentloop_tui._widgets import AnswerView, ToolBlock

from ._helpers import Pause, PausingModel, make_app, screen_text, settle, text_of

if TYPE_CHECKING:
    from pathlib import Path

    from textual.pilot import Pilot

pytestmark = pytest.mark.anyio

WRITE = ("write_file", {"path": "hello.py", "content": 'print("hello")\n'})
EDIT = ("edit_file", {"path": "hello.py", "old": "hello", "new": "hello, world"})


async def _approve(pilot: Pilot[Any], app: AgentApp, key: str) -> ApprovalScreen:
    """Wait for the approval dialog, then answer it with ``key``."""
    while not isinstance(app.screen, ApprovalScreen):
        await pilot.pause()
    screen = app.screen
    await settle(pilot)
    await pilot.press(key)
    return screen


async def test_criterion_28_tool_blocks_fold_to_one_line_and_open_on_demand(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("first line of a\nsecond\n")
    (tmp_path / "b.txt").write_text("first line of b\n")
    calls = reply_tool_calls(("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"}))
    now = [0.0]
    app = make_app(tmp_path, PausingModel([calls, reply_text("ok")]), clock=lambda: now[0])
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"read", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        first, second = app.query(ToolBlock)
        # New blocks start open...
        assert first.entry.expanded and "second" in text_of(first)
        now[0] = 3.0
        app.tick()  # ...and fold three seconds later, to a one-line summary.
        await settle(pilot)
        assert not first.entry.expanded and not second.entry.expanded
        line = text_of(first).strip()
        assert line.startswith("▸ ✓ Read a.txt — 1") and line.endswith("first line of a")
        assert first.outer_size.height == 1
        # Shift+Left selects the newest block, F2 opens it; Shift+Right moves on.
        await pilot.press("shift+left")
        await settle(pilot)
        assert second.has_class("-selected") and not first.has_class("-selected")
        await pilot.press("f2")
        await settle(pilot)
        assert second.entry.expanded and not first.entry.expanded
        await pilot.press("shift+right", "f2")
        await settle(pilot)
        assert first.has_class("-selected") and first.entry.expanded
        assert "second" in text_of(first)


async def test_criterion_21_a_file_edit_shows_as_an_inline_diff(tmp_path: Path) -> None:
    (tmp_path / "hello.py").write_text('print("hello")\n')
    model = PausingModel([reply_tool_calls(EDIT), reply_text("done")])
    app = make_app(tmp_path, model, auto_collapse=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        assert app.session is not None
        app.session.approval_mode = "bypassed"
        await pilot.press(*"edit", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        block = app.query_one(ToolBlock)
        shown = text_of(block)
        assert "hello.py  +1 -1" in shown
        assert '1 - print("hello")' in shown and '1 + print("hello, world")' in shown
        assert block.entry.diff is not None


async def test_criterion_29_smart_approval_asks_only_for_tools_that_need_it(
    tmp_path: Path,
) -> None:
    model = PausingModel([reply_tool_calls(("list_dir", {}), WRITE), reply_text("done")])
    app = make_app(tmp_path, model, auto_collapse=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        assert app.session is not None and app.session.approval_mode.value == "smart"
        await pilot.press(*"write it", "enter")
        while not isinstance(app.screen, ApprovalScreen):
            await pilot.pause()
        await settle(pilot)
        assert "new file hello.py" in screen_text(app) and '+ print("hello")' in screen_text(app)
        dialog = await _approve(pilot, app, "y")
        assert dialog.tool == "write_file"  # list_dir (read-only) ran without a question
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert (tmp_path / "hello.py").read_text() == 'print("hello")\n'
        statuses = [(b.entry.name, b.entry.status) for b in app.query(ToolBlock)]
        assert statuses == [("list_dir", "done"), ("write_file", "done")]


async def test_the_dialog_shows_the_change_and_no_refuses(tmp_path: Path) -> None:
    (tmp_path / "hello.py").write_text('print("hello")\n')
    model = PausingModel([reply_tool_calls(EDIT), reply_text("fine")])
    app = make_app(tmp_path, model, auto_collapse=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"edit", "enter")
        while not isinstance(app.screen, ApprovalScreen):
            await pilot.pause()
        await settle(pilot)
        shown = screen_text(app)
        assert "Allow Edit hello.py?" in shown and 'print("hello, world")' in shown
        assert "always allow edit_file (this session)" in shown
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert (tmp_path / "hello.py").read_text() == 'print("hello")\n'
        (block,) = app.query(ToolBlock)
        assert block.entry.status == "error"


async def test_criterion_30_always_trusts_the_tool_for_the_session(tmp_path: Path) -> None:
    second = ("write_file", {"path": "two.py", "content": "2\n"})
    other = ("bash", {"command": "true"})
    model = PausingModel(
        [
            reply_tool_calls(WRITE),
            reply_text("one"),
            reply_tool_calls(second),
            reply_text("two"),
            reply_tool_calls(other),
            reply_text("three"),
        ]
    )
    app = make_app(tmp_path, model, auto_collapse=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        assert app.session is not None
        await pilot.press(*"one", "enter")
        await _approve(pilot, app, "a")
        await app.workers.wait_for_complete()
        assert "write_file" in app.session.approvals.trusted
        await pilot.press(*"two", "enter")
        await app.workers.wait_for_complete()  # no dialog this time
        assert (tmp_path / "two.py").read_text() == "2\n"
        await pilot.press(*"three", "enter")
        dialog = await _approve(pilot, app, "escape")  # another tool is still asked about
        assert dialog.tool == "bash"
        await app.workers.wait_for_complete()
        assert app.session.approvals.trusted == {"write_file"}


async def test_hash_approve_switches_modes(tmp_path: Path) -> None:
    model = PausingModel([reply_tool_calls(WRITE), reply_text("done")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        assert app.session is not None
        for word, mode in (("on", "enabled"), ("smart", "smart"), ("off", "bypassed")):
            await pilot.press(*f"#approve {word}", "enter")
            await app.workers.wait_for_complete()
            assert app.session.approval_mode.value == mode
            await settle(pilot)
            assert f"approve {mode}" in text_of(app.query_one("#status"))
        await pilot.press(*"write", "enter")  # bypassed: no dialog
        await app.workers.wait_for_complete()
        assert (tmp_path / "hello.py").exists()


async def test_approval_fails_closed_when_the_dialog_cannot_open(tmp_path: Path) -> None:
    model = PausingModel([reply_tool_calls(WRITE), reply_text("done")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()

        def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("no screen")

        app.push_screen = broken  # type: ignore[assignment, method-assign]
        await pilot.press(*"write", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert not (tmp_path / "hello.py").exists()
        (block,) = app.query(ToolBlock)
        assert block.entry.status == "error"


async def test_abort_while_the_dialog_is_open_closes_it_and_refuses(tmp_path: Path) -> None:
    model = PausingModel([reply_tool_calls(WRITE), reply_text("done")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"write", "enter")
        while not isinstance(app.screen, ApprovalScreen):
            await pilot.pause()
        await pilot.press("ctrl+c")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        assert str(app.view.status.state) == "aborted"
        assert not (tmp_path / "hello.py").exists()


async def test_criterion_26_plan_mode_offers_read_only_tools_and_labels_the_plan(
    tmp_path: Path,
) -> None:
    model = PausingModel([reply_text("1. Add hello.py\n2. Run it")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await pilot.press("shift+tab")
        await settle(pilot)
        assert app.session is not None and app.session.mode == "plan"
        assert "PLAN" in text_of(app.query_one("#status"))
        await pilot.press(*"plan it", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        offered = {t.name for t in model.contexts[0].tools}
        assert offered == {"read_file", "list_dir", "glob", "grep"}
        view = app.query_one(AnswerView)
        assert view.has_class("-plan") and view.border_title == "PLAN"
        assert "PLAN" in screen_text(app)
        assert app.session.plan == "1. Add hello.py\n2. Run it"


async def test_criterion_27_leaving_plan_mode_restores_the_tools_and_carries_out_the_plan(
    tmp_path: Path,
) -> None:
    plan = "1. Write hello.py"
    model = PausingModel([reply_text(plan), reply_tool_calls(WRITE), reply_text("Done.")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        assert app.session is not None
        app.session.approval_mode = "bypassed"
        await pilot.press(*"/plan", "enter")
        await app.workers.wait_for_complete()
        await pilot.press(*"make a plan", "enter")
        await app.workers.wait_for_complete()
        await pilot.press("shift+tab")  # back to execute: the plan is sent
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert app.session.mode == "execute" and "EXECUTE" in text_of(app.query_one("#status"))
        executing = model.contexts[1]
        offered = {t.name for t in executing.tools}
        assert {"write_file", "edit_file", "bash"} <= offered
        sent = executing.messages[-1]
        assert isinstance(sent, al.UserMessage) and plan in al.extract_text(sent.content)
        assert (tmp_path / "hello.py").exists()
        answers = [e for e in app.view.entries if isinstance(e, AssistantEntry)]
        assert [a.plan for a in answers] == [True, False, False]


async def test_leaving_plan_mode_mid_run_queues_the_plan(tmp_path: Path) -> None:
    model = PausingModel([reply_text("1. a"), Pause(reply_text("still planning"), after=3)])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        assert app.session is not None
        await pilot.press("shift+tab", *"plan", "enter")
        await app.workers.wait_for_complete()
        await pilot.press(*"again", "enter")
        await model.paused.wait()
        await pilot.press("shift+tab")
        await settle(pilot)
        assert "follow-up: Carry out this plan" in text_of(app.query_one("#queue"))
        model.resume()
        await app.workers.wait_for_complete()
        assert app.session.mode == "execute"
