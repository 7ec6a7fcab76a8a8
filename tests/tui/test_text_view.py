"""A frame late in a long answer does the work of a frame early in it: counted, not timed.

The benchmark (``benchmarks/bench_tui.py``) times it; here the operations whose number would
grow with the answer are counted, so the test fails if a frame's cost becomes O(answer) again:
markdown rendered (only the blocks finished since the last frame and the open tail), lines drawn
(only those on screen) and widgets under the answer (Textual arranges and measures every one of
them on each layout). The same holds for the model's reasoning streamed before the answer: text
wrapped into lines (only the paragraphs ended since the last frame and the open tail).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, strategies as st
from textual.content import Content
from textual.geometry import Region

import agentloop as al
from agentloop.stream import TextDelta, TextStart, ThinkingDelta, ThinkingEnd, ThinkingStart
from agentloop.testing import ScriptedStream
from agentloop_tui import _text_view
from agentloop_tui._entries import ThinkingPart
from agentloop_tui._text_view import TextView, ThinkingView
from agentloop_tui._widgets import AnswerView

from ._helpers import make_app, text_of

if TYPE_CHECKING:
    from pathlib import Path

    from textual.pilot import Pilot
    from textual.strip import Strip
    from textual.widget import Widget

    from agentloop_tui import AgentApp

pytestmark = pytest.mark.anyio

SIZE = (100, 30)
SECTION = (
    "## Step\n\nThe function below reads the file and returns its lines.\n\n"
    "- open the file\n- read it\n\n"
    "```python\ndef read_lines(path: str) -> list[str]:\n"
    "    with open(path) as file:\n"
    "        return [line.rstrip() for line in file]\n```\n\n"
)
BLOCKS_PER_SECTION = 4


class Counts:
    """What one frame did: blocks finished, markdown parsed, renderables rendered into lines,
    lines drawn; and what it left: widgets under the answer, rendered lines kept, cells of
    the spatial maps the conversation and the answer were filed in."""

    def __init__(
        self,
        *,
        finished: list[str],
        parsed: list[str],
        rendered: int,
        drawn: int,
        widgets: int,
        kept: int,
        filed: int,
    ) -> None:
        self.finished = finished
        self.parsed = parsed
        self.rendered = rendered
        self.drawn = drawn
        self.widgets = widgets
        self.kept = kept
        self.filed = filed


async def _frame(app: AgentApp, pilot: Pilot[Any], text: str, log: list[str]) -> Counts:
    """Stream ``text`` in 4-character deltas, then draw one frame; what did it cost?"""
    (view,) = app.query(TextView)
    blocks = view.part.markdown.blocks
    before, rendered, drawn = len(blocks), view.renders, _drawn(view)
    log.clear()
    for start in range(0, len(text), 4):
        app.view.feed(al.MessageUpdate(event=TextDelta(index=0, delta=text[start : start + 4])))
    app.flush()
    await pilot.pause()
    return Counts(
        finished=blocks[before:],
        parsed=list(log),
        rendered=view.renders - rendered,
        drawn=_drawn(view) - drawn,
        widgets=len(app.query_one(AnswerView).query("*")),
        kept=view.lines_kept,
        filed=sum(_filed(w) for w in (app.conversation, app.query_one(AnswerView))),
    )


def _filed(container: Widget) -> int:
    """Cells of the spatial map Textual keeps of ``container``'s children (filed per layout)."""
    arrangement = container.arrange(container.scrollable_content_region.size)
    return sum(len(values) for values in arrangement.spatial_map._map.values())


def _on_screen(container: Widget) -> None:
    """The spatial map finds the children on screen wherever the container is scrolled."""
    arrangement = container.arrange(container.scrollable_content_region.size)
    bottom = arrangement.total_region.bottom
    for y in (0, bottom // 3, bottom // 2, bottom - SIZE[1], bottom - 1):
        region = Region(0, y, SIZE[0], SIZE[1])
        found = {p.widget for p in arrangement.get_visible_placements(region)}
        expected = {p.widget for p in arrangement.placements if region.overlaps(p.region)}
        assert found == expected


def _drawn(view: TextView) -> int:
    return getattr(view, "lines_drawn", 0)


async def test_a_frame_costs_the_same_after_hundreds_of_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered: list[str] = []
    original = _text_view.markdown

    def counting(text: str) -> Any:
        rendered.append(text)
        return original(text)

    def render_line(self: TextView, y: int) -> Strip:
        self.lines_drawn = getattr(self, "lines_drawn", 0) + 1  # type: ignore[attr-defined]
        return drawing(self, y)

    drawing = TextView.render_line
    monkeypatch.setattr(_text_view, "markdown", counting)
    monkeypatch.setattr(TextView, "render_line", render_line)
    app = make_app(tmp_path, ScriptedStream([]), auto_collapse=None)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready.wait()
        app.on_agent_event(al.MessageStart(message=al.AssistantMessage()))
        app.on_agent_event(al.MessageUpdate(event=TextStart(index=0)))
        app.flush()
        await pilot.pause()
        await _frame(app, pilot, SECTION * 3, rendered)
        early = [await _frame(app, pilot, SECTION, rendered) for _ in range(2)]

        await _frame(app, pilot, SECTION * 150, rendered)  # 600 blocks more, drawn once
        late = [await _frame(app, pilot, SECTION, rendered) for _ in range(2)]

        (view,) = app.query(TextView)
        assert len(view.part.markdown.blocks) > 150 * BLOCKS_PER_SECTION
        for counts in early + late:
            # The blocks this frame finished, once each, and the tail (here just the cursor):
            # nothing older is parsed or rendered again.
            assert len(counts.finished) == BLOCKS_PER_SECTION
            assert counts.parsed == counts.finished
            assert counts.rendered == len(counts.finished) + 1
            # Only the lines on screen are drawn, however many the answer has.
            assert 0 < counts.drawn <= SIZE[1]
        # No widget per block: Textual lays out every widget of the answer on every frame.
        assert [c.widgets for c in late] == [c.widgets for c in early]
        # Rendered lines are kept for a few screens, not for the answer: the garbage collector
        # walks every one of them on each full collection.
        assert view.size.height > 2000
        assert all(c.kept < view.size.height // 10 for c in late)
        # The conversation and the answer (2000 lines tall) are filed in a few dozen cells of
        # the spatial maps rebuilt on every layout, not in one per 20 lines.
        assert all(c.filed <= 100 for c in late)
        _on_screen(app.conversation)
        _on_screen(app.query_one(AnswerView))


REASONING = (
    "The caller strips each line, so read_lines need not strip them again.\n"
    "Check the tests before changing it; they pin the trailing newline.\n\n"
)


def _wrapped(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ``Content`` wrapped into lines from now on (to draw it or to measure its height),
    as its text: what Textual did for every text widget on the screen."""
    log: list[str] = []
    render_strips, get_height = Content.render_strips, Content.get_height

    def rendering(self: Content, *args: Any, **kwargs: Any) -> list[Strip]:
        log.append(self.plain)
        return render_strips(self, *args, **kwargs)

    def measuring(self: Content, *args: Any, **kwargs: Any) -> int:
        log.append(self.plain)
        return get_height(self, *args, **kwargs)

    monkeypatch.setattr(Content, "render_strips", rendering)
    monkeypatch.setattr(Content, "get_height", measuring)
    return log


async def _reasoning_frame(
    app: AgentApp, pilot: Pilot[Any], text: str, log: list[str], *, answer: bool = False
) -> list[str]:
    """Stream ``text`` as reasoning (or as the answer after it) in 4-character deltas, then
    draw one frame; returns the texts wrapped into lines."""
    log.clear()
    for start in range(0, len(text), 4):
        piece = text[start : start + 4]
        delta = TextDelta(index=1, delta=piece) if answer else ThinkingDelta(index=0, delta=piece)
        app.view.feed(al.MessageUpdate(event=delta))
    app.flush()
    await pilot.pause()
    return list(log)


async def test_a_reasoning_frame_renders_only_its_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapped = _wrapped(monkeypatch)
    joined: list[int] = []
    joining_all: Any = vars(ThinkingPart)["text"].fget

    def joining(part: ThinkingPart) -> str:
        joined.append(1)
        return str(joining_all(part))

    monkeypatch.setattr(ThinkingPart, "text", property(joining))
    drawn: list[int] = []
    drawing = ThinkingView.render_line

    def render_line(self: ThinkingView, y: int) -> Strip:
        drawn.append(y)
        return drawing(self, y)

    monkeypatch.setattr(ThinkingView, "render_line", render_line)
    app = make_app(tmp_path, ScriptedStream([]), auto_collapse=None)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready.wait()
        app.on_agent_event(al.MessageStart(message=al.AssistantMessage()))
        app.on_agent_event(al.MessageUpdate(event=ThinkingStart(index=0)))
        app.flush()
        await pilot.pause()
        await _reasoning_frame(app, pilot, REASONING * 3, wrapped)
        (view,) = app.query(ThinkingView)
        early = [await _reasoning_frame(app, pilot, REASONING, wrapped) for _ in range(2)]
        await _reasoning_frame(app, pilot, REASONING * 1500, wrapped)  # 4500 lines more
        joined.clear()
        drawn.clear()
        late = [await _reasoning_frame(app, pilot, REASONING, wrapped) for _ in range(2)]

        assert view.size.height > 4500
        for frame in early + late:
            # What this frame streamed, at most: nothing before it is wrapped again.
            assert sum(len(text) for text in frame if "strips" in text) <= len(REASONING) + 1
            # The paragraph it ended (its lines: the blank one ends it), once, and the tail,
            # here just the cursor.
            assert [text for text in frame if "strips" in text] == [REASONING[:-1]]
            assert frame.count(_text_view.CURSOR) == 1
        assert sorted(map(len, late[-1])) == sorted(map(len, early[-1]))
        assert joined == []  # the reasoning is never joined into one string while it streams
        assert 0 < len(drawn) <= 2 * SIZE[1]  # only the lines on screen, in two frames
        assert view.lines_kept < view.size.height // 10

        # Once over, it folds to one line; the answer after it costs the reasoning nothing.
        app.on_agent_event(al.MessageUpdate(event=ThinkingEnd(index=0)))
        app.on_agent_event(al.MessageUpdate(event=TextStart(index=1)))
        await _reasoning_frame(app, pilot, SECTION * 3, wrapped, answer=True)  # past the screen
        lines = 3 * (3 + 2 + 1500 + 2)
        assert view.size.height == 1 and f"thinking ({lines} lines)" in text_of(view)
        frames = [await _reasoning_frame(app, pilot, SECTION, wrapped, answer=True) for _ in "ab"]
        assert all("thinking (" not in text for frame in frames for text in frame)
        assert joined == []


@given(
    text=st.text(alphabet="ab \n", max_size=300),
    cuts=st.lists(st.integers(0, 300), max_size=20),
    max_lines=st.integers(1, 5),
)
def test_reasoning_split_into_blocks_keeps_the_text_and_its_lines(
    text: str, cuts: list[int], max_lines: int
) -> None:
    part = ThinkingPart(max_lines=max_lines)
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    for start, end in itertools.pairwise(bounds):
        part.append(text[start:end])
    assert part.text == "".join(part.blocks) + part.tail == text
    assert part.lines == len(text.splitlines())
    assert part.size == len(text)
    firsts = [sum(b.count("\n") for b in part.blocks[:i]) for i in range(len(part.blocks))]
    assert part.firsts == firsts
