"""docs/mcp.md runs as written, as one script (its Python blocks in order, in one namespace, from
an empty directory, as the docs' own runner does), and prints what the page says it prints."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest

import agentloop_mcp as mcp

from ._helpers import stdio_spec

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "mcp.md"
DEMO = Path(mcp.__file__).parent / "demo_server.py"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", PAGE.read_text(), flags=re.S | re.M)


def test_the_page_runs_and_prints_what_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing may depend on the current directory
    page = PAGE.read_text()
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for block in blocks("python"):
        first_line = page[: page.index(block)].count("\n")  # tracebacks point into the page
        exec(compile("\n" * first_line + block, str(PAGE), "exec"), namespace)
    assert capsys.readouterr().out == "".join(blocks("text"))
    assert [spec.name for spec in namespace["specs"]] == ["files", "search"]
    assert namespace["shout"]("hi") == "HI"
    assert mcp.build_server([namespace["shout"]]).name == "agentloop"


def test_the_page_shows_the_demo_server_as_it_ships() -> None:
    assert blocks("python")[0] == DEMO.read_text()


@pytest.mark.anyio
async def test_events_are_logged_on_the_logger_the_page_names(
    caplog: pytest.LogCaptureFixture,
) -> None:
    (named,) = re.findall(r"logged on the `([\w.]+)` logger", PAGE.read_text())
    events: list[mcp.McpEvent] = []
    with caplog.at_level(logging.INFO, logger=named):
        async with mcp.open_toolset(stdio_spec(), on_event=events.append):
            pass
    assert [type(e) for e in events] == [mcp.ServerConnected, mcp.ServerClosed]
    logged = [r.getMessage() for r in caplog.records if r.name == named]
    assert logged == [f"MCP {e}" for e in events]
