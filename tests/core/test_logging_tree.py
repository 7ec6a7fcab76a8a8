"""Every logger of every package sits in the documented tree; a good run logs nothing at INFO."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    ROOT / "agentloop",
    ROOT / "providers",
    ROOT / "policies",
    ROOT / "integrations",
    ROOT / "coding",
    ROOT / "tui",
    ROOT / "eval",
]
DOCUMENTED = re.findall(r"`(agentloop(?:\.[a-z_]+)*)`", (ROOT / "docs" / "logging.md").read_text())
NAME = re.compile(r"getLogger\(\s*f?[\"']([^\"']+)[\"']")


def logger_names() -> list[tuple[str, str]]:
    found = []
    for source in SOURCES:
        for path in sorted(source.rglob("*.py")) if source.is_dir() else []:
            if "tests" in path.parts:
                continue
            for name in NAME.findall(path.read_text()):
                found.append((str(path.relative_to(ROOT)), name))
    return found


def test_every_logger_is_in_the_documented_tree() -> None:
    names = logger_names()
    assert len(names) > 10
    outside = []
    for where, name in names:
        if name.startswith(("httpx", "httpcore", "hpack")):
            continue  # the HTTP libraries' own loggers, which the providers keep free of keys
        base = name.split("{")[0].rstrip(".")
        branch = ".".join(base.split(".")[:2])
        if not base.startswith("agentloop") or branch not in DOCUMENTED:
            outside.append((where, name))
    assert outside == []


@pytest.mark.anyio
async def test_a_run_that_goes_well_logs_nothing_at_info(caplog: pytest.LogCaptureFixture) -> None:
    @al.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    model = ScriptedStream(
        [reply_tool_calls(("add", {"a": 1, "b": 2})), reply_text("three " * 200)], chunk_size=2
    )
    agent = al.Agent(model=al.ModelSpec(provider="t", model_id="m"), stream_fn=model, tools=[add])
    with caplog.at_level(logging.INFO, logger="agentloop"):
        result = await agent.prompt("add")
    assert result.output.startswith("three")
    assert [r for r in caplog.records if r.name.startswith("agentloop")] == []
