"""Streamed markdown cut into blocks: the same blocks whatever the chunking, bounded tails."""

from __future__ import annotations

from hypothesis import given, strategies as st

from agentloop_tui import MarkdownBlocks

DOC = (
    "# Title\n\nA paragraph\non two lines.\n\n"
    "```python\ndef f():\n    return 1\n```\n\n"
    "- a list\n- of items\n\n~~~\nplain fence\n~~~\nLast words"
)


def _feed(text: str, cuts: list[int], **options: int) -> MarkdownBlocks:
    blocks = MarkdownBlocks(**options)
    start = 0
    for cut in sorted(c % (len(text) + 1) for c in cuts):
        blocks.append(text[start:cut])
        start = max(start, cut)
    blocks.append(text[start:])
    return blocks


def test_blocks_end_at_blank_lines_and_closing_fences() -> None:
    blocks = _feed(DOC, [])
    assert blocks.blocks == [
        "# Title\n\n",
        "A paragraph\non two lines.\n\n",
        "```python\ndef f():\n    return 1\n```\n",
        "\n- a list\n- of items\n\n",
        "~~~\nplain fence\n~~~\n",
    ]
    assert blocks.tail == "Last words"
    assert blocks.close() == 1 and blocks.blocks[-1] == "Last words" and blocks.tail == ""
    assert blocks.text == DOC


def test_a_blank_line_inside_a_code_block_does_not_end_it() -> None:
    blocks = _feed("```\na\n\nb\n```\n", [])
    assert blocks.blocks == ["```\na\n\nb\n```\n"]


def test_the_tail_is_the_only_text_still_open() -> None:
    blocks = MarkdownBlocks()
    assert blocks.append("Hello ") == 0 and blocks.tail == "Hello "
    assert blocks.append("world\n\nNext") == 1
    assert blocks.blocks == ["Hello world\n\n"] and blocks.tail == "Next"
    assert blocks.in_code is False
    blocks.append("\n```js\nlet x")
    assert blocks.in_code and blocks.tail == "```js\nlet x"


def test_a_long_code_block_is_cut_into_fenced_pieces_that_render_alone() -> None:
    code = "".join(f"x = {i}\n" for i in range(100))
    blocks = _feed(f"```python\n{code}```\n", [], max_lines=10)
    assert len(blocks.blocks) == 12
    for piece in blocks.blocks:
        assert piece.startswith("```python\n") and piece.endswith("```\n")
        assert len(piece.splitlines()) <= 11
    body = "".join("".join(p.splitlines(keepends=True)[1:-1]) for p in blocks.blocks)
    assert body == code
    assert blocks.text == f"```python\n{code}```\n"  # what was streamed, for copying


def test_a_long_paragraph_is_cut_too_so_the_tail_stays_bounded() -> None:
    blocks = MarkdownBlocks(max_lines=5)
    for i in range(1000):
        blocks.append(f"line {i}\n")
        assert len(blocks.tail.splitlines()) < 5
    assert len(blocks) == sum(len(f"line {i}\n") for i in range(1000))


@given(st.lists(st.integers(min_value=0, max_value=len(DOC)), max_size=30))
def test_any_chunking_gives_the_same_blocks(cuts: list[int]) -> None:
    whole = _feed(DOC, [])
    chunked = _feed(DOC, cuts)
    assert chunked.blocks == whole.blocks and chunked.tail == whole.tail
    assert chunked.text == DOC
