"""The README's code runs as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

import agentloop as al

if TYPE_CHECKING:
    import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_first_agent_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    block = next(b for b in python_blocks() if "async def main" in b)
    exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "2 + 3 = 5" in out
    assert "AgentEnd" in out


def test_the_provider_example_streams_through_the_loop() -> None:
    block = next(b for b in python_blocks() if "shouting_model" in b)
    namespace: dict[str, Any] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    config = al.loop.AgentLoopConfig(
        model=al.ModelSpec(provider="shout", model_id="v1"), stream_fn=namespace["shouting_model"]
    )

    async def main() -> al.AgentResult:
        return await al.loop.run_loop(
            [al.UserMessage.from_text("hello there")], al.loop.AgentContext(), config
        )

    for backend in ("asyncio", "trio"):
        result = anyio.run(main, backend=backend)
        assert result.text == "HELLO THERE "
        assert result.stop_reason is al.StopReason.STOP
