"""The smaller things a daily user hits (issue 38, defect 7): F2 acts on the newest block, a
failed call's retries come before its error, Tab keeps the focus, a resumed cancelled call
shows as cancelled, an unknown thinking level is an error, the bare command takes flags."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

import pytest

import agentloop as al
from agentloop.stream import TextDelta, TextStart
from agentloop.testing import reply_text, reply_tool_calls
from tests.coding._cli_helpers import AGENTLOOP

from ._helpers import PausingModel, make_app, screen_text, settle

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


def _notices(app: object) -> list[tuple[str, str]]:
    return [(e.level, e.text) for e in app.view.entries if e.kind == "notice"]  # type: ignore[attr-defined]


async def test_f2_acts_on_the_newest_block_once_new_ones_arrive(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    model = PausingModel(
        [
            reply_tool_calls(("read_file", {"path": "a.txt"})),
            reply_text("read a"),
            reply_tool_calls(("read_file", {"path": "b.txt"})),
            reply_text("read b"),
        ]
    )
    app = make_app(tmp_path, model, auto_collapse=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"read a", "enter")
        await app.workers.wait_for_complete()
        await pilot.press("f2")  # folds the one block there is
        first = app.view.tool_entries()[0]
        assert not first.expanded
        await pilot.press(*"read b", "enter")
        await app.workers.wait_for_complete()
        await pilot.press("f2")  # the newest block now, not the one F2 last acted on
        second = app.view.tool_entries()[1]
        assert not second.expanded and not first.expanded


async def test_retries_come_before_the_error_they_led_to(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([]))
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        app.on_agent_event(al.MessageStart(message=al.AssistantMessage()))
        app.on_agent_event(al.MessageUpdate(event=TextStart(index=0)))
        app.on_agent_event(al.MessageUpdate(event=TextDelta(index=0, delta="half an ans")))
        for attempt in (1, 2, 3):
            retry = al.StreamRetry(
                attempt=attempt, delay=0.5, kind=al.ErrorKind.OTHER, message="HTTP 500"
            )
            app.on_agent_event(retry)
        failed = al.AssistantMessage(stop_reason=al.StopReason.ERROR, error_message="HTTP 500")
        app.on_agent_event(al.MessageEnd(message=failed))
        await settle(pilot)
        lines = screen_text(app).splitlines()
        retries = [n for n, line in enumerate(lines) if "retrying (attempt" in line]
        error = next(n for n, line in enumerate(lines) if "✗ HTTP 500" in line)
        assert len(retries) == 3 and max(retries) < error  # in the order they happened
        assert "half an ans" not in screen_text(app)  # what streamed before is void


async def test_tab_keeps_the_focus_in_the_prompt(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([reply_text("ok")]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"ab", "tab", *"cd")
        assert app.focused is app.prompt
        assert app.prompt.text.replace(" ", "") == "abcd"  # nothing typed was lost


async def test_a_key_typed_with_the_focus_elsewhere_goes_to_the_prompt(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        app.set_focus(None)  # a click elsewhere
        await pilot.press(*"hey")
        assert app.focused is app.prompt and app.prompt.text == "hey"


async def test_a_resumed_cancelled_call_shows_as_cancelled(tmp_path: Path) -> None:
    from agentloop.sessions import JsonlSessionStore
    from agentloop_coding import Config

    store = JsonlSessionStore(tmp_path / "sessions")
    call = al.ToolCall(id="c1", name="bash", arguments={"command": "sleep 60"})
    cancelled = "tool call cancelled: user requested steering interrupt: 'stop'"
    history: list[al.AgentMessage] = [
        al.UserMessage.from_text("sleep"),
        al.AssistantMessage(content=[call], stop_reason=al.StopReason.TOOL_USE),
        al.ToolResultMessage(
            tool_call_id="c1", tool_name="bash", content=[al.Text(text=cancelled)], is_error=True
        ),
    ]
    info = await store.create(model="scripted:demo", metadata={})
    await store.append(info.id, history)
    app = make_app(tmp_path, PausingModel([]), store=store, config=Config())
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await app.open_session(resume=info.id)
        await settle(pilot)
        (entry,) = app.view.tool_entries()
        assert entry.status == "cancelled"
        assert "⊘" in screen_text(app) and "✗" not in screen_text(app)


async def test_an_unknown_thinking_level_is_an_error(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        assert app.session is not None
        before = app.session.agent.model.thinking_level
        await pilot.press(*"/thinking turbo", "enter")
        await app.workers.wait_for_complete()
        level, said = _notices(app)[-1]
        assert level == "error" and "turbo" in said and "high" in said
        assert app.session.agent.model.thinking_level is before
        await settle(pilot)
        assert "turbo" in screen_text(app)


@pytest.mark.parametrize("flags", [["--inline"], ["-m", "openai:gpt-4.1"], ["--resume"]])
def test_the_bare_command_passes_its_flags_to_the_tui(flags: list[str]) -> None:
    # Without a terminal the TUI says it needs one: the flags reached it (no argparse error).
    done = subprocess.run(
        [AGENTLOOP, *flags],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "needs a terminal" in done.stderr and "unrecognized" not in done.stderr
