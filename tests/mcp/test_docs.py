"""docs/mcp.md runs as written: its Python blocks are executed and their output checked."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import agentloop_mcp as mcp

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "mcp.md"
SERVER = ROOT / "docs" / "examples" / "weather_server.py"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(), flags=re.S)


def run(block: str) -> dict[str, Any]:
    """Execute a block, with tracebacks pointing at its lines in the page."""
    page = PAGE.read_text()
    first_line = page[: page.index(block)].count("\n")
    namespace: dict[str, Any] = {"__name__": "docs_mcp"}
    exec(compile("\n" * first_line + block, str(PAGE), "exec"), namespace)
    return namespace


@pytest.fixture(autouse=True)
def from_the_repository_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_the_page_shows_the_example_server_as_it_is() -> None:
    assert blocks("python")[0] == SERVER.read_text()


def test_the_first_example_runs_and_prints_what_the_page_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run(blocks("python")[1])
    assert capsys.readouterr().out == blocks("text")[0]


def test_specs_read_from_configuration() -> None:
    namespace = run(blocks("python")[2])
    assert [spec.name for spec in namespace["specs"]] == ["files", "search"]


def test_the_group_example_runs_and_prints_what_the_page_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run(blocks("python")[3])
    assert capsys.readouterr().out == blocks("text")[1]


def test_the_serving_example_defines_a_tool_a_server_can_offer() -> None:
    namespace = run(blocks("python")[4])
    server = mcp.build_server([namespace["shout"]])
    assert server.name == "agentloop"
    assert namespace["shout"]("hi") == "HI"


def test_every_python_block_is_tested() -> None:
    assert len(blocks("python")) == 5
