"""The demo (``python -m agentloop.demo``) runs end to end offline, under both backends."""

from __future__ import annotations

import pytest

from agentloop import AssistantMessage, StopReason, ToolResultMessage, UserMessage, demo

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
    assert demo._real_model() is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    found = demo._real_model()
    assert found is not None
    assert found[0].provider == "openai"
    assert type(found[1]).__name__ == "OpenAIChatProvider"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    found = demo._real_model()
    assert found is not None
    assert found[0].provider == "anthropic"
    assert type(found[1]).__name__ == "AnthropicProvider"
    # --offline wins: no request is made, the scripted model answers.
    out: list[str] = []
    await demo.main(offline=True, write=out.append)
    assert "".join(out).startswith("(scripted model, no network)")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo_command_line(backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    demo._cli(["--offline", "--backend", backend])
    printed = capsys.readouterr().out
    assert "steering_interrupt" in printed
    assert CANCELLED in printed
    assert f"final answer: {demo.FINAL_ANSWER}" in printed
