"""Steering interrupts a running tool (issue 38, defect 3): Enter while a ``bash sleep 60`` runs
kills the command at once (its process is gone, checked by process id), and the agent reads the
message next."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio
import pytest

import agentloop as al
from agentloop.testing import reply_text, reply_tool_calls

from ._helpers import PausingModel, make_app, settle, wait_until

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


async def _ended(pid: int) -> None:
    """Wait for process ``pid`` to end (its pidfd becomes readable; no polling)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # already gone
    try:
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


async def test_steering_kills_a_running_command_at_once(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleep.pid"
    # exec: the shell becomes the sleep, so the recorded id is the process that must die.
    command = f"echo $$ > {pid_file}; exec sleep 60"
    model = PausingModel(
        [reply_tool_calls(("bash", {"command": command})), reply_text("Stopped, as asked.")]
    )
    app = make_app(tmp_path, model)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        assert app.session is not None
        app.session.approval_mode = "bypassed"
        await pilot.press(*"sleep a while", "enter")
        await wait_until(pilot, lambda: pid_file.exists() and pid_file.read_text().strip() != "")
        pid = int(pid_file.read_text())
        assert _alive(pid)

        await pilot.press(*"stop that, do something else", "enter")  # Enter while it runs
        with anyio.fail_after(10):  # the command would run 60 s
            await _ended(pid)
        await app.workers.wait_for_complete()
        await settle(pilot)

    assert not _alive(pid)
    (tool,) = app.view.tool_entries()
    assert tool.status == "cancelled"
    assert "steering interrupt: 'stop that, do something else'" in tool.output
    # The model was asked again with the steering message after the cancelled call.
    last = model.contexts[-1].messages
    assert isinstance(last[-1], al.UserMessage)
    assert al.extract_text(last[-1].content) == "stop that, do something else"
    assert app.session.agent.steering_interrupt == "now"
