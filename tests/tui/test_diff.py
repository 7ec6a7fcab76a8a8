"""Inline diffs: parsed with line numbers, highlighted, new files all additions, deleted files
all deletions, side by side past a width (PRD §17 criteria 21 and 22)."""

from __future__ import annotations

from rich.console import Console, RenderableType

from agentloop_coding import unified_diff
from agentloop_tui import parse_diff, render_diff

OLD = 'def greet():\n    print("hello")\n\n\ngreet()\n'
NEW = 'def greet(name):\n    print("hello", name)\n\n\ngreet("world")\n'


def _lines(renderable: RenderableType, width: int = 100) -> list[list[tuple[str, str]]]:
    """Each rendered line as (text, style) segments."""
    console = Console(width=width, color_system="truecolor", force_terminal=True)
    rows = console.render_lines(renderable, console.options.update(width=width), pad=False)
    return [[(seg.text, str(seg.style or "")) for seg in row if seg.text] for row in rows]


def _text(row: list[tuple[str, str]]) -> str:
    return "".join(text for text, _ in row)


def test_a_diff_is_read_with_its_line_numbers() -> None:
    parsed = parse_diff(unified_diff(OLD, NEW, "greet.py"))
    assert parsed.old_path == parsed.new_path == "greet.py"
    assert (parsed.added, parsed.removed) == (3, 3)
    removed = [line for line in parsed.lines if line.kind == "removed"]
    added = [line for line in parsed.lines if line.kind == "added"]
    assert [line.old for line in removed] == [1, 2, 5]
    assert [line.new for line in added] == [1, 2, 5]
    assert added[0].text == "def greet(name):"


def test_criterion_21_edits_render_as_highlighted_unified_diffs() -> None:
    rows = _lines(render_diff(unified_diff(OLD, NEW, "greet.py")))
    assert "greet.py" in _text(rows[0]) and "+3" in _text(rows[0]) and "-3" in _text(rows[0])
    added = next(r for r in rows if "def greet(name):" in _text(r))
    removed = next(r for r in rows if "def greet():" in _text(r))
    assert "+" in _text(added) and "-" in _text(removed)
    # Green and red backgrounds, and the Python lexer's colours for the keyword.
    assert any("on #12361f" in style for _, style in added)
    assert any("on #3c1618" in style for _, style in removed)
    keyword = [style for text, style in added if text == "def"]
    plain = [style for text, style in added if text.strip() == "name"]
    assert keyword and plain and keyword[0] != plain[0]


def test_a_new_file_is_all_additions_and_a_deleted_file_all_deletions() -> None:
    created = parse_diff(unified_diff("", NEW, "new.py"))
    assert created.old_path is None and created.new_path == "new.py"
    assert created.removed == 0 and created.added == len(NEW.splitlines())
    assert "new file new.py" in _text(_lines(render_diff(created))[0])

    deleted_diff = "--- a/old.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a = 1\n-b = 2\n"
    deleted = parse_diff(deleted_diff)
    assert deleted.new_path is None and deleted.added == 0 and deleted.removed == 2
    rows = _lines(render_diff(deleted))
    assert "deleted old.py" in _text(rows[0])
    body = [r for r in rows[1:] if "=" in _text(r)]
    assert len(body) == 2 and all(any("on #3c1618" in s for _, s in r) for r in body)


def test_criterion_22_wide_terminals_show_old_and_new_side_by_side() -> None:
    diff = unified_diff(OLD, NEW, "greet.py")
    narrow = [_text(r) for r in _lines(render_diff(diff, width=100), 100)]
    wide = [_text(r) for r in _lines(render_diff(diff, width=180, side_by_side_width=160), 180)]
    both = [line for line in wide if "def greet():" in line and "def greet(name):" in line]
    assert len(both) == 1
    assert not any("def greet():" in line and "def greet(name):" in line for line in narrow)


def test_any_text_parses() -> None:
    for text in ("", "garbage\n", "@@ nonsense @@\n+x\n", "--- a\n+++ b\n\\ No newline\n"):
        parse_diff(text)
        _lines(render_diff(text))
