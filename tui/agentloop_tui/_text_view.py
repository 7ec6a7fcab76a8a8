"""An answer's text on screen: finished markdown blocks rendered once, the open tail redrawn.

A streamed answer grows by a few characters a frame and may run to hundreds of thousands. Two
costs would grow with it: rendering the markdown again, and laying out a widget per block
(Textual arranges and measures every child of a container on each layout, so a widget per
block makes each frame cost O(blocks) and the answer O(n²)). ``TextView`` is therefore one
widget drawn with Textual's line API: each finished block of ``MarkdownBlocks`` is rendered into
lines once and kept, the tail is rendered again when it changes, its height is a count of those
lines, and Textual asks it only for the lines on screen.

The lines are what one ``Static`` per block followed by a ``Static`` for the tail drew in a
vertical layout: a block whose markdown starts with a blank line has a blank line above it, one
that ends with a blank line a blank line below it, and the two between neighbours collapse into
one, as Textual collapses vertical margins.
"""

from __future__ import annotations

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
    """An answer's text part: finished blocks as lines rendered once, then the open tail.

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
        self._lines: list[Strip] = []  # the finished blocks, margins between them included
        self._done = 0  # finished blocks in _lines
        self._below = 0  # the blank line below the last of them, unless the next takes it
        self._tail: list[Strip] | None = None  # None: the tail changed since it was drawn

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

    def _catch_up(self, width: int) -> None:
        """Render what is missing at ``width``: everything after a resize, else the news."""
        style = self.visual_style  # the same object until the widget's styles change
        if width != self._width or style is not self._style:
            self._width, self._style = width, style
            key = (width, style, self.link_style)
            if key != self._key:  # a resize or a new look (a theme): all is drawn again, once
                self._key = key
                # What the container of one widget per block drew in the margins between them.
                background = RichStyle.from_color(bgcolor=self.background_colors[1].rich_color)
                self._blank = Strip.blank(width, background)
                self._lines, self._done, self._below, self._tail = [], 0, 0, None
        blocks = self.part.markdown.blocks
        if self._done < len(blocks):
            blank = self._blank
            lines = self._lines
            for block in blocks[self._done :]:
                above, below = spacing(block)
                gap = above if not self._done else max(self._below, above)
                lines.extend([blank] * gap)
                lines.extend(self._draw(markdown(block), width))
                self._done += 1
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
        return len(self._lines) + len(self._tail)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if width <= 0:
            return Strip.blank(0)
        self._catch_up(width)
        assert self._tail is not None
        lines = self._lines
        if y < len(lines):
            return lines[y]
        y -= len(lines)
        if y < len(self._tail):
            return self._tail[y]
        return self._blank
