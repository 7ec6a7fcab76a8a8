"""``/editor`` with an editor that fails (issue 38, defect 1): the app gives the terminal back
to itself whatever the editor did, and says what went wrong."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pytest
from textual.drivers.headless_driver import HeadlessDriver

from agentloop.testing import reply_text

from ._helpers import PausingModel, make_app, settle

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


def _notices(app: Any) -> list[str]:
    return [e.text for e in app.view.entries if e.kind == "notice"]


@pytest.fixture
def suspending(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The headless driver made to suspend as a terminal's does, recording it."""
    log: list[str] = []
    monkeypatch.setattr(HeadlessDriver, "can_suspend", property(lambda self: True))
    monkeypatch.setattr(
        HeadlessDriver, "suspend_application_mode", lambda self: log.append("suspend")
    )
    monkeypatch.setattr(
        HeadlessDriver, "resume_application_mode", lambda self: log.append("resume")
    )
    return log


@pytest.mark.parametrize(
    ("editor", "said"),
    [
        ("false", "exited with status 1"),  # vim's :cq, or any failing editor
        ("/nonexistent/editor-program", "cannot run the editor"),
        (f"{sys.executable} -c 'import sys; sys.exit(3)'", "exited with status 3"),
    ],
)
async def test_a_failing_editor_gives_the_terminal_back_and_says_why(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    suspending: list[str],
    editor: str,
    said: str,
) -> None:
    monkeypatch.setenv("EDITOR", editor)
    model = PausingModel([reply_text("still here")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"/editor", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert suspending == ["suspend", "resume"]  # the app took the terminal back
        assert said in _notices(app)[-1] and "error" in _notices(app)[-1]
        await pilot.press(*"hello", "enter")  # and it works as before
        await app.workers.wait_for_complete()
        assert [c.messages[-1].content[0].text for c in model.contexts] == ["hello"]


async def test_a_working_editor_sends_what_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suspending: list[str]
) -> None:
    script = tmp_path / "editor.py"
    script.write_text("import pathlib, sys\npathlib.Path(sys.argv[1]).write_text('edited')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    model = PausingModel([reply_text("ok")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"/editor", "enter")
        await app.workers.wait_for_complete()
        assert suspending == ["suspend", "resume"]
        assert model.contexts[0].messages[-1].content[0].text == "edited"
