"""SVG snapshots of the key screens (pytest-textual-snapshot): animations off, a fixed terminal
size, a scripted model that stops where the screen is taken.

After a deliberate change of the look: ``pytest tests/tui/test_snapshots.py --snapshot-update``
and review the SVG files under ``__snapshots__`` (open them in a browser).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio.lowlevel
import pytest

from agentloop import UserMessage
from agentloop.context import estimate_tokens
from agentloop.testing import reply_text, reply_tool_calls
from agentloop_tui._approval import ApprovalScreen

from ._helpers import SYSTEM, Pause, PausingModel, make_app, settle

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from textual.pilot import Pilot

    from agentloop_tui import AgentApp

SIZE = (100, 30)
ANSWER = (
    "Here is the fix:\n\n```python\ndef greet(name: str) -> str:\n"
    '    return f"hello, {name}"\n```\n\nThen run the tests with `pytest -q`, and'
)


def _workspace(tmp_path: Path) -> Path:
    (tmp_path / "greet.py").write_text('def greet():\n    return "hello"\n')
    (tmp_path / "notes.txt").write_text("buy milk\nbuy bread\n")
    return tmp_path


def _send(text: str, *, wait: Callable[[AgentApp], Any] | None = None) -> Any:
    async def run_before(pilot: Pilot[Any]) -> None:
        app: AgentApp = pilot.app  # type: ignore[assignment]
        await app.ready.wait()
        await pilot.press(*text, "enter")
        if wait is None:
            await app.workers.wait_for_complete()
        else:
            await wait(app)
        await settle(pilot)

    return run_before


def test_streaming(snap_compare: Any, tmp_path: Path) -> None:
    model = PausingModel([Pause(reply_text(ANSWER + " done."), after=32)])

    async def paused(app: AgentApp) -> None:
        await model.paused.wait()

    app = make_app(_workspace(tmp_path), model)
    assert snap_compare(app, terminal_size=SIZE, run_before=_send("fix greet", wait=paused))


def _two_reads() -> PausingModel:
    calls = reply_tool_calls(("read_file", {"path": "notes.txt"}), ("list_dir", {}))
    return PausingModel([calls, reply_text("You need milk and bread.")])


def test_tool_blocks_expanded(snap_compare: Any, tmp_path: Path) -> None:
    app = make_app(_workspace(tmp_path), _two_reads(), clock=lambda: 0.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=_send("what do I need?"))


def test_tool_blocks_collapsed_one_selected(snap_compare: Any, tmp_path: Path) -> None:
    app = make_app(_workspace(tmp_path), _two_reads(), auto_collapse=0.0)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _send("what do I need?")(pilot)
        app.tick()
        await pilot.press("shift+left")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_diff(snap_compare: Any, tmp_path: Path) -> None:
    edit = ("edit_file", {"path": "greet.py", "old": '"hello"', "new": '"hello, world"'})
    model = PausingModel([reply_tool_calls(edit), reply_text("Changed the greeting.")])
    app = make_app(_workspace(tmp_path), model, clock=lambda: 0.0)

    async def run_before(pilot: Pilot[Any]) -> None:
        await app.ready.wait()
        assert app.session is not None
        app.session.approval_mode = "bypassed"
        await _send("greet the world")(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_approval_modal(snap_compare: Any, tmp_path: Path) -> None:
    write = ("write_file", {"path": "hello.py", "content": 'print("hello")\n'})
    model = PausingModel([reply_tool_calls(write), reply_text("done")])
    app = make_app(_workspace(tmp_path), model)

    async def dialog(app: AgentApp) -> None:
        while not isinstance(app.screen, ApprovalScreen):
            await anyio.lowlevel.checkpoint()

    assert snap_compare(app, terminal_size=SIZE, run_before=_send("say hello", wait=dialog))


def test_plan_mode(snap_compare: Any, tmp_path: Path) -> None:
    plan = "1. Read `greet.py`\n2. Add a `name` parameter\n3. Run the tests"
    app = make_app(_workspace(tmp_path), PausingModel([reply_text(plan)]))

    async def run_before(pilot: Pilot[Any]) -> None:
        await app.ready.wait()
        await pilot.press("shift+tab")
        await _send("plan the change")(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize(("colour", "fill"), [("green", 0.3), ("yellow", 0.7), ("red", 0.95)])
def test_gauge(snap_compare: Any, tmp_path: Path, colour: str, fill: float) -> None:
    answer = reply_text("A short answer.")
    tokens = estimate_tokens([UserMessage.from_text("hi"), answer], system_prompt=SYSTEM)
    app = make_app(tmp_path, PausingModel([answer]), context_window=int(tokens / fill))

    async def run_before(pilot: Pilot[Any]) -> None:
        await _send("hi")(pilot)
        assert app.view.status.gauge == colour

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_aborted(snap_compare: Any, tmp_path: Path) -> None:
    model = PausingModel([Pause(reply_text(ANSWER), after=20)])

    async def abort(app: AgentApp) -> None:
        await model.paused.wait()
        app.action_abort()
        await app.workers.wait_for_complete()

    app = make_app(_workspace(tmp_path), model)
    assert snap_compare(app, terminal_size=SIZE, run_before=_send("fix greet", wait=abort))


def test_first_screen(snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What an idle app shows before the first prompt: the model, the workspace (under the
    # home directory, written ~/...), the keys.
    monkeypatch.setenv("HOME", str(tmp_path))
    project = tmp_path / "project"
    project.mkdir()
    app = make_app(_workspace(project), PausingModel([]))

    async def run_before(pilot: Pilot[Any]) -> None:
        await app.ready.wait()
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_approval_of_a_big_file(snap_compare: Any, tmp_path: Path) -> None:
    content = "".join(f"line_{n} = {n}\n" for n in range(2100))
    write = ("write_file", {"path": "constants.py", "content": content})
    model = PausingModel([reply_tool_calls(write), reply_text("done")])
    app = make_app(_workspace(tmp_path), model)

    async def dialog(app: AgentApp) -> None:
        while not isinstance(app.screen, ApprovalScreen):
            await anyio.lowlevel.checkpoint()

    assert snap_compare(app, terminal_size=SIZE, run_before=_send("write them", wait=dialog))
