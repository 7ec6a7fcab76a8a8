"""The demo (``python examples/demo.py``) runs end to end offline, under both backends."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop import AssistantMessage, StopReason, ToolResultMessage, UserMessage

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.py"
_spec = importlib.util.spec_from_file_location("agentloop_demo", DEMO)
assert _spec is not None and _spec.loader is not None
demo = importlib.util.module_from_spec(_spec)
sys.modules["agentloop_demo"] = demo
_spec.loader.exec_module(demo)

pytestmark = pytest.mark.anyio

CANCELLED = "tool call cancelled: user requested steering interrupt"


async def test_demo_offline_prints_the_steering_interrupt_and_the_answer() -> None:
    out: list[str] = []
    agent = await demo.main(offline=True, write=out.append)
    text = "".join(out)
    lines = text.splitlines()
    assert lines[0] == "(scripted model, no network)"
    # The model's text streamed inline, in several pieces, on one line.
    assert "  assistant: Let me check the weather and the clock in Paris." in lines
    assert sum(1 for piece in out if piece and "\n" not in piece) > 4
    # Both tools started before either ended; the steering landed between the two ends.
    starts = [i for i, line in enumerate(lines) if line.startswith("  tool start")]
    ends = [i for i, line in enumerate(lines) if line.startswith("  tool end")]
    steer = next(i for i, line in enumerate(lines) if line.startswith("  >> steering"))
    assert len(starts) == 2
    assert len(ends) == 2
    assert max(starts) < min(ends) < steer < max(ends)
    assert CANCELLED in lines[max(ends)]
    assert "turn 0 end: steering_interrupt" in lines
    assert f"  steering: {demo.STEERING}" in lines
    assert f"final answer: {demo.FINAL_ANSWER}" in lines
    # The history is what the printout says.
    kinds = [type(m) for m in agent.messages]
    assert kinds == [
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        ToolResultMessage,
        UserMessage,
        AssistantMessage,
    ]
    final = agent.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert final.stop_reason is StopReason.STOP
    assert final.text == demo.FINAL_ANSWER


async def test_demo_prefers_a_configured_provider_unless_offline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AGENTLOOP_DEMO_MODEL", raising=False)
    assert demo.real_model() is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert demo.real_model() == "openai:gpt-4o-mini"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert demo.real_model() == "anthropic:claude-3-5-haiku-latest"
    # --offline wins: no request is made, the scripted model answers.
    out: list[str] = []
    await demo.main(offline=True, write=out.append)
    assert "".join(out).startswith("(scripted model, no network)")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo_command_line(backend: str) -> None:
    done = subprocess.run(
        [sys.executable, str(DEMO), "--offline", "--backend", backend],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    printed = done.stdout
    assert "steering_interrupt" in printed
    assert CANCELLED in printed
    assert f"final answer: {demo.FINAL_ANSWER}" in printed
