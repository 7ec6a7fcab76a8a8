"""Following the output (issue 38, defect 2): after any scrolling the view follows again once
back at the bottom, a sent prompt always shows what comes next, End and a "new output below"
marker bring the newest output back, and quick page presses all count."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from textual import events

from agentloop.testing import reply_text

from ._helpers import Pause, PausingModel, make_app, screen_text, settle

if TYPE_CHECKING:
    from pathlib import Path

    from textual.widget import Widget

pytestmark = pytest.mark.anyio


def paragraphs(label: str, count: int) -> str:
    return "\n\n".join(f"{label} paragraph {i}." for i in range(count))


def at_bottom(widget: Widget) -> bool:
    return widget.scroll_y == widget.max_scroll_y


async def _send(pilot: Any, text: str) -> None:
    await pilot.press(*text, "enter")
    await pilot.app.workers.wait_for_complete()
    await settle(pilot)


async def test_page_down_back_to_the_bottom_follows_the_next_answer(tmp_path: Path) -> None:
    model = PausingModel([reply_text(paragraphs("First", 80)), reply_text(paragraphs("Next", 80))])
    app = make_app(tmp_path, model, context_window=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await _send(pilot, "long")
        conversation = app.query_one("#conversation")
        assert at_bottom(conversation)
        await pilot.press("pageup")
        await pilot.press("pagedown", "pagedown")  # the second one, at the bottom, moves nothing
        await pilot.pause()
        assert at_bottom(conversation)
        await _send(pilot, "again")
        # The prompt, its answer's end: in view, as the bottom of the conversation.
        assert at_bottom(conversation)
        assert "Next paragraph 79." in screen_text(app)


async def test_sending_jumps_to_the_bottom_and_follows(tmp_path: Path) -> None:
    model = PausingModel([reply_text(paragraphs("First", 80)), reply_text(paragraphs("Next", 80))])
    app = make_app(tmp_path, model, context_window=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await _send(pilot, "long")
        conversation = app.query_one("#conversation")
        for _ in range(5):
            await pilot.press("pageup")
        await pilot.pause()
        assert not at_bottom(conversation)
        await _send(pilot, "and now?")  # sent while scrolled up: the answer is what matters
        assert at_bottom(conversation) and "Next paragraph 79." in screen_text(app)


async def test_new_output_below_is_marked_and_end_shows_it(tmp_path: Path) -> None:
    model = PausingModel([Pause(reply_text(paragraphs("Streamed", 80)), after=40)], chunk_size=8)
    app = make_app(tmp_path, model, context_window=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"long", "enter")
        await model.paused.wait()
        await settle(pilot)
        conversation = app.query_one("#conversation")
        await pilot.press("pageup")
        await pilot.pause()
        assert "new output below" not in screen_text(app)  # nothing new yet
        model.resume()
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert not at_bottom(conversation)  # the user's place is kept ...
        assert "new output below" in screen_text(app)  # ... and they are told there is more
        await pilot.press("end")  # at the end of the (empty) prompt: the newest output
        await settle(pilot)
        assert at_bottom(conversation) and "new output below" not in screen_text(app)
        assert "Streamed paragraph 79." in screen_text(app)


async def test_quick_page_presses_are_not_dropped(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([reply_text(paragraphs("Long", 400))]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await _send(pilot, "long")
        conversation = app.query_one("#conversation")
        page = conversation.scrollable_content_region.height
        bottom = conversation.scroll_y
        assert bottom > 30 * page
        for _ in range(30):  # as a terminal delivers a held key: all at once, no frame between
            app.post_message(events.Key("pageup", None))
        await pilot.pause()
        await pilot.pause()
        assert conversation.scroll_y == bottom - 30 * page
        for _ in range(30):
            app.post_message(events.Key("pagedown", None))
        await pilot.pause()
        await pilot.pause()
        assert at_bottom(conversation)
