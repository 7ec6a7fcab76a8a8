"""The reasoning on screen: ``ThinkingView`` draws what one ``Static`` of the whole text drew
(the widget it replaces, kept here as the reference), line for line and style for style, however
the text was cut into blocks and deltas; its text is selected and copied as the ``Static``'s."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, strategies as st
from textual.app import App
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Static

from agentloop_tui import _text_view
from agentloop_tui._entries import AssistantEntry, ThinkingPart
from agentloop_tui._text_view import CURSOR, ThinkingView

if TYPE_CHECKING:
    from textual.app import ComposeResult
    from textual.widget import Widget

pytestmark = pytest.mark.anyio

CSS = Path(_text_view.__file__).with_name("app.tcss")
WIDTH = 40
TEXTS = [
    "",
    "One line, not ended",
    "One line, ended\n",
    "\n\nBlank lines first, then a line long enough to wrap at forty cells, twice or more.\n",
    "Paragraph one\non two lines.\n\n\n\nParagraph two,   spaced  \tand tabbed,\n\n  indented\nend",
    "".join(f"line {n} of a list without blank lines between them\n" for n in range(12)),
]

STATES = [(True, False, False), (False, True, False), (False, True, True)]
"""Streaming (with the cursor), done and shown, done and folded."""


def _part(text: str, *, chunk: int, max_lines: int, done: bool, collapsed: bool) -> ThinkingPart:
    part = ThinkingPart(max_lines=max_lines)
    for start in range(0, len(text), chunk):
        part.append(text[start : start + chunk])
    part.done, part.collapsed = done, collapsed
    return part


def _as_static(text: str, *, cursor: bool, collapsed: bool) -> str:
    """What the ``Static`` this replaces was given (``ThinkingView.sync`` before blocks)."""
    if collapsed:
        lines = len(text.splitlines()) or 1
        return f"▸ thinking ({lines} line{'s' if lines != 1 else ''}) — Ctrl+T shows it"
    return text + (CURSOR if cursor else "")


class Side(App[None]):
    """Each case twice: as the ``ThinkingView`` and as the ``Static`` it replaces."""

    CSS_PATH = CSS

    def __init__(self, cases: list[tuple[ThinkingView, str]]) -> None:
        super().__init__()
        self.cases = cases

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            for view, text in self.cases:
                yield view
                yield Static(text, classes="thinking", markup=False)


def _lines(widget: Widget) -> list[list[tuple[str, Any]]]:
    """Every line of ``widget``, as its pieces of text and their styles (selection offsets
    included), pieces of the same style joined."""
    region = Region(0, 0, widget.size.width, widget.size.height)
    return [[(s.text, s.style) for s in strip.simplify()] for strip in widget.render_lines(region)]


@pytest.mark.parametrize(("chunk", "max_lines"), [(1, 40), (3, 2), (1000, 1)])
async def test_it_draws_what_a_static_of_the_whole_text_drew(chunk: int, max_lines: int) -> None:
    cases: list[tuple[ThinkingView, str]] = []
    for text in TEXTS:
        for streaming, done, collapsed in STATES:
            entry = AssistantEntry()
            entry.streaming = streaming
            part = _part(text, chunk=chunk, max_lines=max_lines, done=done, collapsed=collapsed)
            view = ThinkingView(part, entry)
            cases.append((view, _as_static(text, cursor=streaming, collapsed=collapsed)))
    app = Side(cases)
    async with app.run_test(size=(WIDTH + 2, 30)) as pilot:
        await pilot.pause()
        views = list(app.query(ThinkingView))
        statics = list(app.query(Static))
        assert len(views) == len(statics) == len(cases)
        for view, static in zip(views, statics, strict=True):
            assert view.size == static.size
            assert _lines(view) == _lines(static), static.content


async def test_its_text_is_selected_and_copied_as_the_statics_was() -> None:
    text = "".join(f"reasoning line {n}, which goes on\n\n" for n in range(30)) + "and the end"
    entry = AssistantEntry()
    view = ThinkingView(_part(text, chunk=7, max_lines=40, done=False, collapsed=False), entry)
    app = Side([(view, text + CURSOR)])
    async with app.run_test(size=(WIDTH + 2, 200)) as pilot:
        await pilot.pause()
        static = app.query_one(Static)
        copied, drawn = [], []
        for widget in (view, static):
            before = _lines(widget)
            # From the 8th column of line 40 to the 5th of line 50: blocks below the first,
            # whose lines the screen must read as lines of the whole text.
            await pilot.mouse_down(widget, offset=(7, 40))
            await pilot.hover(widget, offset=(4, 50))
            await pilot.mouse_up(widget, offset=(4, 50))
            await pilot.pause()
            assert app.screen.selections.keys() == {widget}
            copied.append(app.screen.get_selected_text())
            drawn.append(_lines(widget))
            assert drawn[-1] != before  # the selection is shown
            app.screen.clear_selection()
            await pilot.pause()
            assert _lines(widget) == before
        lines = text.split("\n")
        assert copied[0] == copied[1] == "\n".join([lines[40][7:], *lines[41:50], lines[50][:5]])
        assert drawn[0] == drawn[1]


@given(
    text=st.text(alphabet="ab \n\t", max_size=80),
    cuts=st.lists(st.integers(min_value=0, max_value=80)),
    max_lines=st.integers(min_value=1, max_value=4),
)
def test_the_reasoning_is_kept_in_blocks_of_whole_lines(
    text: str, cuts: list[int], max_lines: int
) -> None:
    part = ThinkingPart(max_lines=max_lines)
    start = 0
    for cut in sorted(c % (len(text) + 1) for c in cuts):
        part.append(text[start:cut])
        start = cut
    part.append(text[start:])
    assert "".join(part.blocks) + part.tail == part.text == text
    assert part.size == len(text) and part.lines == len(text.splitlines())
    assert all(block.endswith("\n") for block in part.blocks)
    assert part.tail.count("\n") < max_lines  # the tail, drawn every frame, stays short
    firsts = [sum(b.count("\n") for b in part.blocks[:i]) for i in range(len(part.blocks))]
    assert part.firsts == firsts
    assert part.tail_first == sum(b.count("\n") for b in part.blocks)
