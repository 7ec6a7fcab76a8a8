"""An answer's text and reasoning on screen: finished blocks rendered once, the tail redrawn.

A streamed answer grows by a few characters a frame and may run to hundreds of thousands. Three
costs would grow with it: rendering the markdown again; laying out a widget per block (Textual
arranges and measures every child of a container on each layout, so a widget per block makes
each frame cost O(blocks) and the answer O(n²)); and keeping every rendered line (a ``Strip`` is
a dozen objects, and Python's full garbage collections, which come every few frames while
Textual draws, walk them all). A ``BlocksView`` is therefore one widget drawn with Textual's
line API: each finished block is rendered when it is finished and its height kept, the lines of
the last few blocks drawn are kept so the ones on screen are not rendered again, the tail is
rendered again when it changes, and Textual asks only for the lines on screen.

``TextView`` shows an answer's markdown (the blocks of ``MarkdownBlocks``). Its lines are what
one ``Static`` per block followed by a ``Static`` for the tail drew in a vertical layout: a
block whose markdown starts with a blank line has a blank line above it, one that ends with a
blank line a blank line below it, and the two between neighbours collapse into one, as Textual
collapses vertical margins.

``ThinkingView`` shows the model's reasoning, plain text that streams like the answer and may
be as long (the blocks of ``ThinkingPart``: whole lines). Plain text wraps line by line, so its
lines are exactly those of one ``Static`` of the whole text, selection included.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING, Any

from rich.markdown import Markdown
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.content import Content
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import Visual, visualize
from textual.widget import Widget

if TYPE_CHECKING:
    from collections.abc import Sequence

    from textual.geometry import Size
    from textual.selection import Selection

    from ._entries import AssistantEntry, TextPart, ThinkingPart

__all__ = ["CODE_THEME", "CURSOR", "BlocksView", "TextView", "ThinkingView", "markdown"]

CURSOR = "▌"
CODE_THEME = "monokai"


def markdown(text: str) -> Markdown:
    """A block of an answer, ready to render (the one place answers' markdown is parsed)."""
    return Markdown(text, code_theme=CODE_THEME)


def spacing(block: str) -> tuple[int, int]:
    """The blank lines above and below ``block``: one where the markdown has blank lines.

    A block with blank lines on both sides keeps only the one below, as the margins of the
    widgets this replaces did (in Textual CSS a ``margin-bottom`` rule replaces the whole margin,
    ``margin-top`` included); the screen stays as it was.
    """
    if block.endswith(("\n\n", "\n \n")):
        return 0, 1
    if block[:1] == "\n" or block.startswith(("\r\n", " \n")):
        return 1, 0
    return 0, 0


class BlocksView(Widget):
    """Text in finished blocks and an open tail, drawn with Textual's line API.

    Finished blocks are kept as their text and their height at the current width; the lines of
    the last few drawn are kept too, so the blocks on screen are not rendered again frame after
    frame. Lines are never kept for the whole text: each is a dozen objects the garbage
    collector walks on every full collection, which would make a frame's cost grow with the
    text again. A block scrolled back into view is rendered again, once.

    A subclass says which blocks are finished (``finished``), draws one (``draw_block``) and
    the tail (``draw_tail``), and may leave blank lines around blocks (``spacing``).

    Attributes:
        renders: how many renderables (blocks, tails) have been rendered into lines; a frame
            adds the blocks finished since the last one and the tail, however long the text.
    """

    def __init__(self, *, classes: str) -> None:
        super().__init__(classes=classes)
        self.renders = 0
        self._width = 0
        self._style: VisualStyle | None = None
        self._key: tuple[int, VisualStyle, RichStyle] | None = None  # what the lines are drawn for
        self._blank = Strip.blank(0)  # a line of the margins between blocks
        self._starts: list[int] = []  # the first line of each finished block measured so far
        self._heights: list[int] = []  # and its number of lines
        self._end = 0  # the line after the last of them
        self._below = 0  # the blank line below the last of them, unless the next takes it
        self._drawn: dict[int, list[Strip]] = {}  # lines of the blocks drawn last, oldest first
        self._tail: list[Strip] | None = None  # None: the tail changed since it was drawn

    # ---------------------------------------------------------------- what a subclass says

    def finished(self) -> Sequence[str]:
        """The finished blocks shown (the list may grow; a block never changes)."""
        raise NotImplementedError

    def draw_block(self, index: int, width: int) -> list[Strip]:
        """The lines of finished block ``index`` (with ``draw``)."""
        raise NotImplementedError

    def draw_tail(self, width: int) -> list[Strip]:
        """The lines of the open tail (with ``draw``)."""
        raise NotImplementedError

    def spacing(self, block: str) -> tuple[int, int]:
        """The blank lines above and below ``block``."""
        return 0, 0

    # ---------------------------------------------------------------- state

    @property
    def lines_kept(self) -> int:
        """How many rendered lines are kept: a few screens' worth, however long the text."""
        return sum(len(lines) for lines in self._drawn.values()) + len(self._tail or ())

    def on_mount(self) -> None:
        self.sync()

    def sync(self) -> None:
        """The text changed: draw the new blocks and the tail on the next frame."""
        self._tail = None
        self.refresh(layout=True)

    def forget(self) -> None:
        """Other blocks are shown (the text folded or unfolded): measure all again."""
        self._key = None
        self._width = 0
        self.refresh(layout=True)

    def forget_lines(self) -> None:
        """The blocks look different (a selection): draw them again, their heights unchanged."""
        self._drawn.clear()
        self._tail = None
        self.refresh()

    # ---------------------------------------------------------------- lines

    def draw(self, renderable: Any, width: int) -> list[Strip]:
        """``renderable`` rendered into lines ``width`` cells wide, in the widget's style."""
        self.renders += 1
        visual = visualize(self, renderable)
        return Visual.to_strips(self, visual, width, None, self.visual_style)

    def _block(self, index: int) -> list[Strip]:
        """The lines of finished block ``index``, drawn now unless drawn lately."""
        drawn = self._drawn
        lines = drawn.pop(index, None)
        if lines is None:
            lines = self.draw_block(index, self._width)
        drawn[index] = lines
        keep = 2 * self.app.size.height + 8  # more blocks than a screen can show
        while len(drawn) > keep:
            del drawn[next(iter(drawn))]
        return lines

    def _catch_up(self, width: int) -> None:
        """Measure what is missing at ``width``: everything after a resize, else the news."""
        style = self.visual_style  # the same object until the widget's styles change
        if width != self._width or style is not self._style:
            self._width, self._style = width, style
            key = (width, style, self.link_style)
            if key != self._key:  # a resize or a new look (a theme): all is measured again
                self._key = key
                # What the container of one widget per block drew in the margins between them.
                background = RichStyle.from_color(bgcolor=self.background_colors[1].rich_color)
                self._blank = Strip.blank(width, background)
                self._starts, self._heights, self._drawn = [], [], {}
                self._end = self._below = 0
                self._tail = None
        blocks = self.finished()
        if len(self._starts) < len(blocks):
            for index in range(len(self._starts), len(blocks)):
                above, below = self.spacing(blocks[index])
                start = self._end + (max(self._below, above) if index else above)
                height = len(self._block(index))
                self._starts.append(start)
                self._heights.append(height)
                self._end = start + height
                self._below = below
            self._tail = None
        if self._tail is None:
            self._tail = [self._blank] * self._below + self.draw_tail(width)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if width <= 0:
            return 0
        self._catch_up(width)
        assert self._tail is not None
        return self._end + len(self._tail)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if width <= 0:
            return Strip.blank(0)
        self._catch_up(width)
        assert self._tail is not None
        if y >= self._end:
            tail = self._tail
            return tail[y - self._end] if y - self._end < len(tail) else self._blank
        index = bisect_right(self._starts, y) - 1
        if index < 0 or y >= self._starts[index] + self._heights[index]:
            return self._blank  # between two blocks
        return self._block(index)[y - self._starts[index]]


class TextView(BlocksView):
    """An answer's text part: its finished markdown blocks measured once, then the open tail."""

    ALLOW_SELECT = False  # as the Static widgets it replaces: their Rich text is not selectable

    def __init__(self, part: TextPart, entry: AssistantEntry) -> None:
        super().__init__(classes="text")
        self.part = part
        self.entry = entry

    def finished(self) -> Sequence[str]:
        return self.part.markdown.blocks

    def spacing(self, block: str) -> tuple[int, int]:
        return spacing(block)

    def draw_block(self, index: int, width: int) -> list[Strip]:
        return self.draw(markdown(self.part.markdown.blocks[index]), width)

    def draw_tail(self, width: int) -> list[Strip]:
        tail = self.part.markdown.tail
        if self.entry.streaming:
            return self.draw(markdown(tail + CURSOR) if tail.strip() else Text(CURSOR), width)
        if tail.strip():
            return self.draw(markdown(tail), width)
        return []


class ThinkingView(BlocksView):
    """The model's reasoning, plain text (dimmed and in italics by the app's CSS); one line
    once folded. What one ``Static`` of the whole text drew, but each finished block of the
    ``ThinkingPart`` is rendered once and only the tail again as the reasoning streams.

    Its text can be selected, as the ``Static``'s could: the lines of a block carry the line
    numbers of the whole text, which the screen reads back for a selection.
    """

    def __init__(self, part: ThinkingPart, entry: AssistantEntry) -> None:
        super().__init__(classes="thinking")
        self.part = part
        self.entry = entry
        self._shown: tuple[bool, int, bool] | None = None  # what the lines were drawn from

    def sync(self) -> None:
        part = self.part
        shown = (part.collapsed, part.size, self._cursor)
        if shown == self._shown:
            return  # another part of the answer changed: nothing to draw again
        if self._shown is not None and self._shown[0] != part.collapsed:
            self.forget()
        self._shown = shown
        super().sync()

    @property
    def _cursor(self) -> bool:
        return self.entry.streaming and not self.part.done

    def summary(self) -> str:
        """The folded line."""
        lines = self.part.lines or 1
        return f"▸ thinking ({lines} line{'s' if lines != 1 else ''}) — Ctrl+T shows it"

    def finished(self) -> Sequence[str]:
        return () if self.part.collapsed else self.part.blocks

    def draw_block(self, index: int, width: int) -> list[Strip]:
        block = self.part.blocks[index]
        return self._plain(block[:-1], self.part.firsts[index], width)  # its lines, not a blank

    def draw_tail(self, width: int) -> list[Strip]:
        part = self.part
        if part.collapsed:
            return self._plain(self.summary(), 0, width)
        return self._plain(part.tail + (CURSOR if self._cursor else ""), part.tail_first, width)

    def _plain(self, text: str, first: int, width: int) -> list[Strip]:
        """The lines of ``text``, lines ``first`` onwards of what is shown, selection included."""
        content = Content(text)
        selection = self.text_selection
        if selection is not None:
            style = VisualStyle.from_styles(self.screen.get_component_styles("screen--selection"))
            offset = 0
            for y, line in enumerate(text.split("\n"), first):
                span = selection.get_span(y)
                if span is not None:  # as the Static did it: line by line, within the line
                    start, end = span
                    end = len(line) if end < 0 else min(end, len(line))
                    content = content.stylize(style, offset + min(start, end), offset + end)
                offset += len(line) + 1
        lines = self.draw(content, width)
        return [_renumbered(line, first) for line in lines] if first else lines

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        text = self.summary() if self.part.collapsed else self.part.text
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.forget_lines()


def _renumbered(line: Strip, first: int) -> Strip:
    """``line`` of a block whose first line is line ``first`` of the text: the offsets a
    selection is made of (column, line; kept in the style of each piece) moved down."""
    segments = []
    for segment in line:
        style = segment.style
        offset = style.meta.get("offset") if style is not None else None
        if style is not None and offset is not None:
            x, y = offset
            style += RichStyle.from_meta({"offset": (x, y + first)})
            segment = Segment(segment.text, style, segment.control)
        segments.append(segment)
    return Strip(segments, line.cell_length)
