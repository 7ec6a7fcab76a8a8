"""Context overflow without a transformer, and continuing after an overflow error.

Regression tests for the core-edges issue, item 11.
"""

from __future__ import annotations

import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_error, reply_text

from ._helpers import NO_RETRY_DELAY

pytestmark = pytest.mark.anyio

WINDOW_MODEL = al.ModelSpec(provider="test", model_id="small", context_window=4000)
OVERFLOW = al.ErrorKind.CONTEXT_OVERFLOW


def long_history(turns: int) -> list[al.AgentMessage]:
    out: list[al.AgentMessage] = []
    for i in range(turns):
        out.append(al.UserMessage.from_text(f"question {i} " + "x" * 400))
        out.append(al.AssistantMessage(content=[al.Text(text=f"answer {i} " + "y" * 400)]))
    return out


async def test_overflow_recovery_without_a_transformer_trims_the_request() -> None:
    model = ScriptedStream([reply_error(OVERFLOW, "prompt is too long"), reply_text("fits now")])
    config = al.loop.AgentLoopConfig(
        model=WINDOW_MODEL, stream_fn=model, retry_strategy=NO_RETRY_DELAY
    )
    history = long_history(40)
    result = await al.loop.run_loop(
        [al.UserMessage.from_text("latest")], al.loop.AgentContext(messages=history), config
    )
    assert result.text == "fits now"
    first, second = (call.context.messages for call in model.calls)
    assert len(second) < len(first)  # the retry is not the identical request
    assert second[-1] == first[-1]  # the newest message is kept
    assert second[0] == first[0]  # and the first user message (the anchor)


async def test_overflow_with_nothing_to_trim_is_not_resent() -> None:
    model = ScriptedStream([reply_error(OVERFLOW, "prompt is too long"), reply_text("never")])
    config = al.loop.AgentLoopConfig(
        model=WINDOW_MODEL, stream_fn=model, retry_strategy=NO_RETRY_DELAY
    )
    result = await al.loop.run_loop(
        [al.UserMessage.from_text("one huge prompt")], al.loop.AgentContext(), config
    )
    assert len(model.calls) == 1
    assert result.error_kind is OVERFLOW
    with pytest.raises(al.ContextWindowOverflow):
        result.raise_for_error()


async def test_continue_after_an_overflow_error_retries_with_the_signal() -> None:
    signals: list[bool] = []

    def transform(
        messages: list[al.AgentMessage], ctx: al.loop.TransformContext
    ) -> list[al.AgentMessage]:
        signals.append(ctx.overflow)
        return messages[-1:] if ctx.overflow else messages

    model = ScriptedStream(
        [
            reply_error(OVERFLOW, "prompt is too long"),
            reply_error(OVERFLOW, "still too long"),
            reply_text("recovered"),
        ]
    )
    agent = al.Agent(
        model=WINDOW_MODEL,
        stream_fn=model,
        messages=long_history(3),
        transform_context=transform,
        retry_strategy=NO_RETRY_DELAY,
    )
    failed = await agent.prompt("latest", raise_on_error=False)
    assert failed.error_kind is OVERFLOW
    assert signals == [False, True]  # the run's own recovery attempt
    result = await agent.continue_run(raise_on_error=False)
    assert result.text == "recovered"
    assert signals == [False, True, True]  # the continued run starts with the signal set
    # The failed answers never reach the model again.
    last = model.calls[-1].context.messages
    assert not any(
        isinstance(m, al.AssistantMessage) and m.stop_reason is al.StopReason.ERROR for m in last
    )


async def test_continue_after_any_model_error_is_allowed() -> None:
    model = ScriptedStream([reply_error(al.ErrorKind.OTHER, "bad gateway"), reply_text("ok")])
    agent = al.Agent(model=WINDOW_MODEL, stream_fn=model, retry_strategy=NO_RETRY_DELAY)
    assert (await agent.prompt("hi", raise_on_error=False)).stop_reason is al.StopReason.ERROR
    result = await agent.continue_run(raise_on_error=False)
    assert result.text == "ok"
    sent = model.calls[-1].context.messages
    assert [type(m).__name__ for m in sent] == ["UserMessage"]
