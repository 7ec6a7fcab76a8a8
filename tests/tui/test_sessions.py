"""Resuming (issue 38, defect 5): ``--resume`` continues the latest session with a conversation
in it, not one opened and closed without a prompt; the picker lists only sessions with
something in them, each with when, its first prompt as a title, its message count and model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentloop.sessions import JsonlSessionStore
from agentloop.testing import reply_text
from agentloop_coding import Config
from agentloop_tui._main import _latest_here

from ._helpers import PausingModel, make_app, screen_text, settle

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


async def _session(workspace: Path, store: JsonlSessionStore, config: Config, *prompts: str) -> str:
    """Open the app on a new recorded session, send ``prompts``, close it; returns its id."""
    model = PausingModel([reply_text(f"answer to {p}") for p in prompts])
    app = make_app(workspace, model, store=store, config=config)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready.wait()
        for prompt in prompts:
            await pilot.press(*prompt, "enter")
            await app.workers.wait_for_complete()
        assert app.session is not None and app.session.session_id is not None
        return app.session.session_id


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, JsonlSessionStore, Config]:
    workspace = tmp_path / "work"
    workspace.mkdir()
    store_dir = tmp_path / "sessions"
    return workspace, JsonlSessionStore(store_dir), Config(sessions_dir=str(store_dir))


async def test_resume_takes_the_latest_session_with_a_conversation(
    stored: tuple[Path, JsonlSessionStore, Config],
) -> None:
    workspace, store, config = stored
    talked = await _session(workspace, store, config, "fix the parser")
    await _session(workspace, store, config)  # opened and closed without a prompt
    assert await _latest_here(config, str(workspace.resolve())) == talked


async def test_resume_with_only_empty_sessions_says_so(
    stored: tuple[Path, JsonlSessionStore, Config],
) -> None:
    from agentloop_coding import ConfigError

    workspace, store, config = stored
    await _session(workspace, store, config)
    with pytest.raises(ConfigError, match="no stored session with a conversation"):
        await _latest_here(config, str(workspace.resolve()))


async def test_the_picker_shows_when_the_first_prompt_the_count_and_the_model(
    stored: tuple[Path, JsonlSessionStore, Config],
) -> None:
    workspace, store, config = stored
    talked = await _session(workspace, store, config, "fix the parser", "and test it")
    empty = await _session(workspace, store, config)
    app = make_app(workspace, PausingModel([]), store=store, config=config)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"/sessions", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        ids = [info.id for info in app.screen.sessions]  # type: ignore[attr-defined]
        assert talked in ids and empty not in ids and app.session.session_id not in ids  # type: ignore[union-attr]
        await settle(pilot)
        shown = screen_text(app)
        row = next(line for line in shown.splitlines() if "fix the parser" in line)
        assert "just now" in row and "4 messages" in row and "scripted:demo" in row
        assert talked not in row  # a title, not a bare id
