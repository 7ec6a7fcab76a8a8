"""Input the Pilot tests left out: the mouse wheel over the conversation (it scrolls; scrolling
up stops following the answer, scrolling back to the bottom follows it again) and one-key copy
as the terminal receives it (an OSC 52 sequence carrying the text in base64)."""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Any

import pytest
from textual import events

from agentloop.testing import reply_text

from ._helpers import Pause, PausingModel, make_app, settle

if TYPE_CHECKING:
    from pathlib import Path

    from textual.app import App
    from textual.pilot import Pilot
    from textual.widget import Widget

pytestmark = pytest.mark.anyio

OSC_52 = re.compile(r"\x1b\]52;c;([A-Za-z0-9+/=]*)\x07")


def paragraphs(label: str, count: int) -> str:
    return "\n\n".join(f"{label} paragraph {i}." for i in range(count))


async def wheel(pilot: Pilot[Any], widget: Widget, *, down: bool, times: int = 1) -> None:
    """Turn the mouse wheel over the middle of ``widget``, as the terminal driver reports it:
    a mouse event posted to the app, which finds the widget under the pointer."""
    region = widget.region
    x, y = region.x + region.width // 2, region.y + region.height // 2
    cls = events.MouseScrollDown if down else events.MouseScrollUp
    for _ in range(times):
        event = cls(None, x, y, 0, 0, 0, False, False, False, screen_x=x, screen_y=y)
        pilot.app.post_message(event)
    await pilot.pause()


def at_bottom(widget: Widget) -> bool:
    return widget.scroll_y == widget.max_scroll_y


async def test_the_mouse_wheel_scrolls_and_following_stops_until_back_at_the_bottom(
    tmp_path: Path,
) -> None:
    first, second = paragraphs("First", 40), paragraphs("Second", 20)
    model = PausingModel([Pause(reply_text(first), after=40), reply_text(second)], chunk_size=8)
    app = make_app(tmp_path, model, context_window=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"long", "enter")
        await model.paused.wait()  # half the answer streamed
        await settle(pilot)
        conversation = app.conversation
        assert conversation.max_scroll_y > 0 and at_bottom(conversation)  # following it
        bottom = conversation.scroll_y

        await wheel(pilot, conversation, down=False, times=2)
        scrolled = conversation.scroll_y
        assert scrolled < bottom  # the wheel scrolled the conversation up

        model.resume()  # the rest of the answer streams in while the user reads above
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert conversation.max_scroll_y > bottom  # the answer grew ...
        assert conversation.scroll_y == scrolled  # ... and the view stayed where the user was

        await wheel(pilot, conversation, down=True)
        assert scrolled < conversation.scroll_y < conversation.max_scroll_y  # down, not yet back
        for _ in range(50):
            if at_bottom(conversation):
                break
            await wheel(pilot, conversation, down=True, times=4)
        assert at_bottom(conversation)  # back at the bottom by wheel alone
        end_of_first = conversation.max_scroll_y

        await pilot.press(*"more", "enter")  # the next answer is followed again
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert conversation.max_scroll_y > end_of_first
        assert at_bottom(conversation)


async def test_the_wheel_over_the_conversation_leaves_the_prompt_alone(tmp_path: Path) -> None:
    model = PausingModel([reply_text(paragraphs("Only", 60))])
    app = make_app(tmp_path, model, context_window=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"long", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        conversation = app.conversation
        await wheel(pilot, conversation, down=False, times=3)
        assert conversation.scroll_y < conversation.max_scroll_y
        assert app.focused is app.prompt  # scrolling does not take the focus from the prompt
        await wheel(pilot, app.prompt, down=False, times=3)
        before = conversation.scroll_y
        await pilot.pause()
        assert conversation.scroll_y == before  # the wheel acts on what is under the pointer


class Terminal:
    """What the app writes to its terminal driver (Textual's headless driver drops it)."""

    def __init__(self, app: App[Any], monkeypatch: pytest.MonkeyPatch) -> None:
        driver = app._driver
        assert driver is not None
        self.written: list[str] = []
        write = driver.write

        def recording(data: str) -> None:
            self.written.append(data)
            write(data)

        monkeypatch.setattr(driver, "write", recording)

    def copied(self) -> list[str]:
        """The texts OSC 52 sequences put on the clipboard, in order."""
        found = OSC_52.findall("".join(self.written))
        return [base64.b64decode(b64, validate=True).decode("utf-8") for b64 in found]


ANSWER = "Voilà — the fix:\n\n```python\nprint('café ✓')\n```\n\nThat is all."


async def test_one_key_copy_writes_osc_52_with_the_text_in_base64(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(tmp_path, PausingModel([reply_text(ANSWER)]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        terminal = Terminal(app, monkeypatch)
        await pilot.press("ctrl+y")  # nothing to copy yet: nothing is sent to the terminal
        await pilot.pause()
        assert terminal.copied() == []

        await pilot.press(*"fix it", "enter")
        await app.workers.wait_for_complete()
        await pilot.press("ctrl+y")
        await pilot.pause()
        assert terminal.copied() == [ANSWER]
        expected = base64.b64encode(ANSWER.encode("utf-8")).decode("ascii")
        assert f"\x1b]52;c;{expected}\a" in "".join(terminal.written)  # the exact bytes

        await pilot.press("alt+y")
        await pilot.pause()
        assert terminal.copied() == [ANSWER, "print('café ✓')\n"]
        assert app.clipboard == "print('café ✓')\n"
