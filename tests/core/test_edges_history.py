"""Per-prompt framework work does not grow with the history (without transformers).

Regression test for the core-edges issue, item 12. Time is measured in ``benchmarks/``
(``bench_history.py``); here the work is counted: how many messages the loop converts for the
model per prompt. Before, every prompt converted the whole history again.
"""

from __future__ import annotations

import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text

from ._helpers import MODEL

pytestmark = pytest.mark.anyio


def history(n: int) -> list[al.AgentMessage]:
    out: list[al.AgentMessage] = []
    for i in range(n // 2):
        out.append(al.UserMessage.from_text(f"q{i}"))
        out.append(al.AssistantMessage(content=[al.Text(text=f"a{i}")]))
    return out


@pytest.mark.parametrize("size", [10, 10_000])
async def test_a_prompt_converts_only_the_new_messages(size: int) -> None:
    converted = 0

    def convert(message: al.AgentMessage) -> al.LlmMessage | None:
        nonlocal converted
        converted += 1
        return al.loop.default_convert_to_llm(message)

    model = ScriptedStream([reply_text(f"r{i}") for i in range(4)])
    agent = al.Agent(model=MODEL, stream_fn=model, messages=history(size), convert_to_llm=convert)
    await agent.prompt("warm up")  # the first run may index the history once
    converted = 0
    for i in range(3):
        result = await agent.prompt(f"p{i}")
        assert result.text == f"r{i + 1}"
    assert converted == 6  # a prompt and an answer per run, whatever the history's length
    assert len(model.calls[-1].context.messages) == size + 8 - 1
    assert len(agent.messages) == size + 8


async def test_history_edits_between_runs_are_seen() -> None:
    model = ScriptedStream([reply_text("one"), reply_text("two"), reply_text("three")])
    agent = al.Agent(model=MODEL, stream_fn=model)
    await agent.prompt("a")
    agent.append_messages([al.UserMessage.from_text("appended")])
    await agent.prompt("b")
    sent = [m for m in model.calls[-1].context.messages if isinstance(m, al.UserMessage)]
    assert [m.content[0].text for m in sent] == ["a", "appended", "b"]  # type: ignore[union-attr]
    agent.replace_messages([al.UserMessage.from_text("fresh")])
    await agent.prompt("c")
    assert [type(m).__name__ for m in model.calls[-1].context.messages] == [
        "UserMessage",
        "UserMessage",
    ]
    assert len(agent.messages) == 3


class CountingCounter:
    """The default estimate, counting how many messages it was asked about."""

    def __init__(self) -> None:
        from agentloop.context import EstimatingCounter

        self.inner = EstimatingCounter()
        self.counted = 0

    def count(self, message: al.AgentMessage) -> int:
        self.counted += 1
        return self.inner.count(message)

    def count_text(self, text: str) -> int:
        return self.inner.count_text(text)


@pytest.mark.parametrize("size", [10, 10_000])
@pytest.mark.parametrize("budget", [None, 2_000])
async def test_a_sliding_window_does_work_only_for_new_messages(
    size: int, budget: int | None
) -> None:
    from agentloop.context import SlidingWindow

    converted = 0

    def convert(message: al.AgentMessage) -> al.LlmMessage | None:
        nonlocal converted
        converted += 1
        return al.loop.default_convert_to_llm(message)

    counter = CountingCounter()
    window = SlidingWindow(max_tokens=budget or 10**9, counter=counter)
    model = ScriptedStream([reply_text(f"r{i}") for i in range(4)])
    agent = al.Agent(
        model=MODEL,
        stream_fn=model,
        messages=history(size),
        convert_to_llm=convert,
        transform_context=window,
    )
    await agent.prompt("warm up")
    converted = counter.counted = 0
    for i in range(3):
        await agent.prompt(f"p{i}")
    assert converted == 6
    # The window counted each new message once (the prompt before its request, the answer at
    # the next request), whatever the history's length.
    assert counter.counted <= 7
    sent = model.calls[-1].context.messages
    if budget is None or size == 10:
        assert len(sent) == size + 8 - 1
    else:
        assert len(sent) < 400  # the window kept a suffix within the budget (of 10,000)
        assert sent[0].content[0].text == "q0"  # type: ignore[union-attr]  # the first question
