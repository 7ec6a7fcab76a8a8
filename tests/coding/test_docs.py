"""docs/coding.md as written: its commands parse, its example prints what the page shows.

Every Python block of the page also runs in tests/docs/test_examples.py (against fake provider
APIs); the commands themselves are run for real by test_cli.py and test_acp.py.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from agentloop_coding import load_script
from agentloop_coding.cli import build_parser

if TYPE_CHECKING:
    import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "coding.md"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", PAGE.read_text(), flags=re.M | re.S)


def commands() -> list[list[str]]:
    out = []
    for block in blocks("bash"):
        for line in block.splitlines():
            line = line.split("#", 1)[0].split("|")[-1].strip()
            if line.startswith("agentloop "):
                out.append(shlex.split(line)[1:])
    return out


def test_every_command_on_the_page_parses() -> None:
    found = commands()
    assert len(found) >= 7
    parser = build_parser()
    for argv in found:
        if argv and argv[0] == "tui":
            from agentloop_tui._main import build_parser as tui_parser

            tui_parser().parse_args(argv[1:])
        elif not argv or argv[0].startswith("-"):
            from agentloop_tui._main import build_parser as tui_parser

            tui_parser().parse_args(argv)  # agentloop alone, or with flags: the TUI
        else:
            parser.parse_args(argv)  # exits (a test failure) on an unknown command or flag


def test_the_edit_example_prints_the_diff_the_page_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    example = next(b for b in blocks("python") if "show_diffs" in b)
    exec(compile(example, str(PAGE), "exec"), {"__name__": "docs_coding"})
    assert capsys.readouterr().out == blocks("text")[0]


def test_the_script_example_is_a_valid_script(tmp_path: Path) -> None:
    (script,) = [b for b in blocks("json") if "replies" in b]
    path = tmp_path / "replies.json"
    path.write_text(script)
    assert load_script(path).remaining == 2
    zed = json.loads(next(b for b in blocks("json") if "agent_servers" in b))
    assert zed["agent_servers"]["agentloop"]["args"] == ["acp"]


def test_the_configuration_examples_are_valid(tmp_path: Path) -> None:
    from agentloop_coding import load_config

    found = blocks("toml")
    assert len(found) >= 2
    for block in found:
        user = tmp_path / "config.toml"
        user.write_text(block)
        load_config(tmp_path, environ={}, user_file=user)  # raises on an unknown or bad key
