"""Slash commands, the external editor, the context gauge, sessions and the first-run wizard
(PRD §17 criteria 23–25)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from rich.color import Color
from rich.console import Console

import agentloop as al
from agentloop.context import estimate_tokens
from agentloop.sessions import JsonlSessionStore
from agentloop.testing import reply_text
from agentloop_coding import CodingSession, Config
from agentloop_tui import AgentApp, UserEntry, edit_prompt, print_transcript
from agentloop_tui._commands import Command, parse
from agentloop_tui._screens import HelpScreen, SessionPicker
from agentloop_tui._setup import apply_setup, needs_setup
from agentloop_tui._wizard import Setup, SetupScreen

from ._helpers import SYSTEM, Pause, PausingModel, make_app, screen_text, settle, text_of

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from pathlib import Path

pytestmark = pytest.mark.anyio


def _notices(app: AgentApp) -> list[str]:
    return [e.text for e in app.view.entries if e.kind == "notice"]  # type: ignore[union-attr]


async def _command(pilot: Any, app: AgentApp, line: str) -> None:
    await pilot.press(*line, "enter")
    await app.workers.wait_for_complete()
    await settle(pilot)


def test_command_lines_are_parsed() -> None:
    assert parse("/model openai:gpt-4.1") == Command("model", "openai:gpt-4.1")
    assert parse("  /help ") is not None and parse("/help").name == "help"  # type: ignore[union-attr]
    assert parse("#approve off").argument == "off"  # type: ignore[union-attr]
    assert parse("fix /tmp/x") is None and parse("//not a command") is None


async def test_criterion_23_the_gauge_fills_per_turn_green_yellow_red(tmp_path: Path) -> None:
    words = "word " * 120
    history: list[al.AgentMessage] = []
    totals = []
    for prompt in ("one", "two", "three"):
        history += [al.UserMessage.from_text(prompt), reply_text(words)]
        totals.append(estimate_tokens(history, system_prompt=SYSTEM))
    per_turn = totals[0]
    window = int(totals[1] / 0.72)  # two exchanges fill 72 % of it
    assert totals[0] / window < 0.6 and totals[2] / window > 0.85
    model = PausingModel([reply_text(words), Pause(reply_text(words), after=20), reply_text(words)])
    app = make_app(tmp_path, model, context_window=window)
    async with app.run_test(size=(110, 24)) as pilot:
        await app.ready.wait()
        status = app.view.status
        assert status.gauge == "green"
        await _command(pilot, app, "one")
        assert status.context_tokens == per_turn and status.gauge == "green"
        assert _bar_colour(app) == Color.parse("green").number
        gauge = text_of(app.query_one("#status"))
        assert f"{per_turn / window:.0%}" in gauge
        await pilot.press(*"two", "enter")
        await model.paused.wait()
        await settle(pilot)
        assert status.context_tokens == per_turn  # not per delta: only at the turn's end
        model.resume()
        await app.workers.wait_for_complete()
        assert str(status.gauge) == "yellow"  # 0.6 <= fill <= 0.85
        await settle(pilot)
        assert _bar_colour(app) == Color.parse("yellow").number
        await _command(pilot, app, "three")
        assert str(status.gauge) == "red"
        assert status.context_fraction is not None and status.context_fraction > 0.85
        assert _bar_colour(app) == Color.parse("red").number


def _bar_colour(app: AgentApp) -> int | None:
    """The colour number of the gauge's filled cells on the status bar."""
    for segment in app.query_one("#status").render_line(0):
        if "█" in segment.text and segment.style and segment.style.color:
            return segment.style.color.number
    return None


@contextlib.contextmanager
def _recording_suspend(log: list[str]) -> Iterator[None]:
    log.append("suspend")
    yield
    log.append("resume")


async def test_criterion_24_the_editor_is_opened_with_the_app_suspended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "seen.txt"
    script = tmp_path / "editor.py"
    script.write_text(
        "import pathlib, sys\n"
        f"pathlib.Path({str(seen)!r}).write_text(sys.argv[1])\n"
        "pathlib.Path(sys.argv[1]).write_text('from the editor\\nline two\\n')\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    log: list[str] = []

    def editor(initial: str) -> str | None:
        log.append("editor")
        return edit_prompt(initial)

    model = PausingModel([reply_text("got it")])
    app = make_app(tmp_path, model, editor=editor)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        monkeypatch.setattr(app, "suspend", lambda: _recording_suspend(log))
        await _command(pilot, app, "/editor")
        assert log == ["suspend", "editor", "resume"]
        sent = model.contexts[0].messages[-1]
        assert al.extract_text(sent.content) == "from the editor\nline two"
        temp = seen.read_text()
        assert temp.endswith(".md")
        assert not await anyio.Path(temp).exists()  # the temporary file is gone


async def test_criterion_25_an_empty_file_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", "true")  # leaves the file as it was: empty
    monkeypatch.delenv("VISUAL", raising=False)
    model = PausingModel([reply_text("never")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await _command(pilot, app, "/editor")
        assert model.contexts == [] and not any(isinstance(e, UserEntry) for e in app.view.entries)
        assert "nothing sent" in _notices(app)[-1]


def test_the_editor_comes_from_editor_then_visual_then_vi(tmp_path: Path) -> None:
    from agentloop_tui._editor import editor_command

    assert editor_command({"EDITOR": "nano -w", "VISUAL": "code"}) == ["nano", "-w"]
    assert editor_command({"VISUAL": "code --wait"}) == ["code", "--wait"]
    assert editor_command({}) == ["vi"]
    ran: list[list[str]] = []

    def run(command: Sequence[str]) -> int:
        ran.append(list(command))
        return 0

    assert edit_prompt("draft", environ={}, run=run) == "draft"
    assert ran[0][0] == "vi"


async def test_model_thinking_usage_system_and_compact(tmp_path: Path) -> None:
    model = PausingModel([reply_text("x " * 300), reply_text("y " * 300), reply_text("z")])
    app = make_app(tmp_path, model, context_window=100_000)
    async with app.run_test(size=(110, 30)) as pilot:
        await app.ready.wait()
        session = app.session
        assert session is not None
        await _command(pilot, app, "/thinking high")
        assert session.agent.model.thinking_level is al.ThinkingLevel.HIGH
        await _command(pilot, app, "/thinking")
        assert "off|minimal|low|medium|high|extra_high" in _notices(app)[-1]
        await _command(pilot, app, "/model nosuchprovider:x")
        assert "error" in _notices(app)[-1] and session.model == "scripted:demo"
        await _command(pilot, app, "/system Be terse.")
        assert session.agent.system_prompt == "Be terse."
        await _command(pilot, app, "/system")
        assert _notices(app)[-1] == "Be terse."
        await _command(pilot, app, "first")
        await _command(pilot, app, "second")
        await _command(pilot, app, "/usage")
        assert "tokens:" in _notices(app)[-1] and "cost $" in _notices(app)[-1]
        before = app.view.status.context_tokens
        await _command(pilot, app, "/compact 200")
        assert len(session.agent.messages) < 4
        assert app.view.status.context_tokens < before
        assert any("context compacted" in n for n in _notices(app))
        await _command(pilot, app, "/nonsense")
        assert "unknown command /nonsense" in _notices(app)[-1]


async def test_help_and_quit(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([]))
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        await _command(pilot, app, "/help")
        assert isinstance(app.screen, HelpScreen) and "Alt+Enter" in screen_text(app)
        await pilot.press("escape")
        await _command(pilot, app, "/quit")
    assert app.return_value == 0


async def test_ctrl_q_quits_even_while_running(tmp_path: Path) -> None:
    model = PausingModel([Pause(reply_text("slow"), after=2)])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"go", "enter")
        await model.paused.wait()
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert app.return_value == 0
    assert app.session is not None and not app.session.agent.is_running


async def test_sessions_are_recorded_reset_and_resumed_from_the_picker(tmp_path: Path) -> None:
    store_dir = tmp_path / "sessions"
    store = JsonlSessionStore(store_dir)
    config = Config(sessions_dir=str(store_dir))
    model = PausingModel([reply_text("first answer"), reply_text("second answer")])
    workspace = tmp_path / "work"
    workspace.mkdir()
    app = make_app(workspace, model, store=store, config=config)
    async with app.run_test(size=(110, 30)) as pilot:
        await app.ready.wait()
        assert app.session is not None
        first_id = app.session.session_id
        await _command(pilot, app, "remember me")
        await _command(pilot, app, "/reset")
        assert app.session.session_id != first_id
        assert not any(isinstance(e, UserEntry) for e in app.view.entries)
        await _command(pilot, app, "another")
        await _command(pilot, app, "/sessions")
        assert isinstance(app.screen, SessionPicker)
        ids = [info.id for info in app.screen.sessions]
        assert first_id in ids
        picker = app.screen.query_one("#choices")
        picker.highlighted = ids.index(first_id)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert app.session.session_id == first_id
        users = [e.text for e in app.view.entries if isinstance(e, UserEntry)]
        assert users == ["remember me"]
        assert "first answer" in screen_text(app)


async def test_the_first_run_wizard_asks_for_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    asked: list[str | None] = []

    async def start(*, resume: str | None = None, model: str | None = None) -> CodingSession:
        asked.append(model)
        spec = al.ModelSpec(provider="scripted", model_id="demo")
        return await CodingSession.start(
            workspace=tmp_path, record=False, model=spec, stream_fn=PausingModel([])
        )

    app = AgentApp(start, needs_setup=True, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)
        app.screen.query_one("#provider").value = "openai"  # type: ignore[attr-defined]
        await pilot.pause()
        assert app.screen.query_one("#model").value == "gpt-4.1"  # type: ignore[attr-defined]
        app.screen.query_one("#model").value = "gpt-test"  # type: ignore[attr-defined]
        app.screen.query_one("#key").value = "sk-test"  # type: ignore[attr-defined]
        await pilot.click("#start")
        await app.ready.wait()
        await app.workers.wait_for_complete()
        assert asked == ["openai:gpt-test"]
        assert os.environ["OPENAI_API_KEY"] == "sk-test"


def test_setup_saves_the_model_only_in_a_new_config_file(tmp_path: Path) -> None:
    env: dict[str, str] = {"XDG_CONFIG_HOME": str(tmp_path)}
    assert needs_setup(None, env) and not needs_setup("openai:x", env)
    said = apply_setup(Setup(provider="openai", model="m1", api_key="k", remember=True), env)
    config = tmp_path / "agentloop" / "config.toml"
    assert config.read_text() == 'model = "openai:m1"\n' and env["OPENAI_API_KEY"] == "k"
    assert any("saved" in line for line in said)
    apply_setup(Setup(provider="openai", model="m2", remember=True), env)
    assert config.read_text() == 'model = "openai:m1"\n'  # the user's own file is left alone
    assert not needs_setup(None, env)  # a key in the environment picks a default model


async def test_the_transcript_keeps_the_conversation_for_the_scrollback(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([reply_text("The **answer**.")]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await _command(pilot, app, "the question")
    out = io.StringIO()
    print_transcript(app.view, Console(file=out, width=60))
    text = out.getvalue()
    assert "› the question" in text and "The answer." in text
