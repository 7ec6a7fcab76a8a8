"""An answer's text on screen: finished markdown blocks rendered once, the open tail redrawn.

A streamed answer grows by a few characters a frame and may run to hundreds of thousands. Three
costs would grow with it: rendering the markdown again; laying out a widget per block (Textual
arranges and measures every child of a container on each layout, so a widget per block makes
each frame cost O(blocks) and the answer O(n²)); and keeping every rendered line (a ``Strip`` is
a dozen objects, and Python's full garbage collections, which come every few frames while
Textual draws, walk them all). ``TextView`` is therefore one widget drawn with Textual's line
API: each finished block of ``MarkdownBlocks`` is rendered when it is finished and its height
kept, the lines of the last few blocks drawn are kept so the ones on screen are not rendered
again, the tail is rendered again when it changes, and Textual asks only for the lines on screen.

The lines are what one ``Static`` per block followed by a ``Static`` for the tail drew in a
vertical layout: a block whose markdown starts with a blank line has a blank line above it, one
that ends with a blank line a blank line below it, and the two between neighbours collapse into
one, as Textual collapses vertical margins.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING, Any

from rich.markdown import Markdown
from rich.style import Style as RichStyle
from rich.text import Text
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.geometry import Size
    from textual.style import Style as VisualStyle

    from ._entries import AssistantEntry, TextPart

__all__ = ["CODE_THEME", "CURSOR", "TextView", "markdown"]

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


class TextView(Widget):
    """An answer's text part: finished blocks measured once, then the open tail.

    Finished blocks are kept as their markdown and their height at the current width; the lines
    of the last few drawn are kept too, so the blocks on screen are not rendered again frame
    after frame. Lines are never kept for the whole answer: each is a dozen objects the garbage
    collector walks on every full collection, which would make a frame's cost grow with the
    answer again. A block scrolled back into view is rendered again, once.

    Attributes:
        renders: how many renderables (blocks, tails) have been rendered into lines; a frame
            adds the blocks finished since the last one and the tail, however long the answer.
    """

    ALLOW_SELECT = False  # as the Static widgets it replaces: their Rich text is not selectable

    def __init__(self, part: TextPart, entry: AssistantEntry) -> None:
        super().__init__(classes="text")
        self.part = part
        self.entry = entry
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

    @property
    def lines_kept(self) -> int:
        """How many rendered lines are kept: a few screens' worth, however long the answer."""
        return sum(len(lines) for lines in self._drawn.values()) + len(self._tail or ())

    def on_mount(self) -> None:
        self.sync()

    def sync(self) -> None:
        """The part or the entry changed: draw the new blocks and the tail on the next frame."""
        self._tail = None
        self.refresh(layout=True)

    # ---------------------------------------------------------------- lines

    def _draw(self, renderable: Any, width: int) -> list[Strip]:
        self.renders += 1
        visual = visualize(self, renderable)
        return Visual.to_strips(self, visual, width, None, self.visual_style)

    def _block(self, index: int) -> list[Strip]:
        """The lines of finished block ``index``, drawn now unless drawn lately."""
        drawn = self._drawn
        lines = drawn.pop(index, None)
        if lines is None:
            lines = self._draw(markdown(self.part.markdown.blocks[index]), self._width)
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
        blocks = self.part.markdown.blocks
        if len(self._starts) < len(blocks):
            for index in range(len(self._starts), len(blocks)):
                above, below = spacing(blocks[index])
                start = self._end + (max(self._below, above) if index else above)
                height = len(self._block(index))
                self._starts.append(start)
                self._heights.append(height)
                self._end = start + height
                self._below = below
            self._tail = None
        if self._tail is None:
            self._tail = [self._blank] * self._below + self._render_tail(width)

    def _render_tail(self, width: int) -> list[Strip]:
        tail = self.part.markdown.tail
        if self.entry.streaming:
            return self._draw(markdown(tail + CURSOR) if tail.strip() else Text(CURSOR), width)
        if tail.strip():
            return self._draw(markdown(tail), width)
        return []

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
