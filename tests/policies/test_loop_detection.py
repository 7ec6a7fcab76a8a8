"""LoopDetection: the counting, the nudge, then the stop (direct calls)."""

from __future__ import annotations

from typing import Any

import pytest

from agentloop import AgentMessage, AssistantMessage, UserMessage
from agentloop.policy import Continue, Inject, Stop
from agentloop.testing import reply_text, reply_tool_calls
from agentloop_policies import LoopDetection

from ._helpers import Recorder, policy_ctx, result, run, seen_by_model

pytestmark = pytest.mark.anyio


def turn(*calls: tuple[str, Any]) -> AssistantMessage:
    return reply_tool_calls(*calls)


def evaluate(policy: LoopDetection, history: list[AgentMessage], message: AssistantMessage) -> Any:
    return policy.evaluate(policy_ctx(messages=history, message=message))


def test_repeats_below_threshold_continue() -> None:
    policy = LoopDetection(threshold=3)
    history: list[AgentMessage] = [UserMessage.from_text("go"), turn(("f", {"a": 1})), result("r")]
    assert isinstance(evaluate(policy, history, turn(("f", {"a": 1}))), Continue)


def test_third_repeat_nudges_fourth_stops() -> None:
    policy = LoopDetection(threshold=3)
    history: list[AgentMessage] = [UserMessage.from_text("go")]
    for _ in range(2):
        history += [turn(("f", {"a": 1, "b": 2})), result("r")]
    third = turn(("f", {"b": 2, "a": 1}))  # key order does not matter
    verdict = evaluate(policy, history, third)
    assert isinstance(verdict, Inject)
    assert len(verdict.messages) == 1
    nudge = verdict.messages[0]
    assert isinstance(nudge, UserMessage)
    assert "'f'" in nudge.content[0].text  # type: ignore[union-attr]
    history += [third, result("r"), nudge]
    stop = evaluate(policy, history, turn(("f", {"a": 1, "b": 2})))
    assert isinstance(stop, Stop)
    assert "loop detected" in stop.reason


def test_obeying_the_nudge_continues() -> None:
    policy = LoopDetection(threshold=2)
    first = turn(("f", {}))
    second = turn(("f", {}))
    verdict = evaluate(policy, [first, result("r")], second)
    assert isinstance(verdict, Inject)
    history: list[AgentMessage] = [first, result("r"), second, result("r"), *verdict.messages]
    assert isinstance(evaluate(policy, history, turn(("g", {}))), Continue)


def test_different_arguments_are_different_calls() -> None:
    policy = LoopDetection(threshold=2)
    history: list[AgentMessage] = [turn(("f", {"a": 1})), result("r")]
    assert isinstance(evaluate(policy, history, turn(("f", {"a": 2}))), Continue)
    assert isinstance(evaluate(policy, history, turn(("f", {"a": 1.0}))), Continue)
    assert isinstance(evaluate(policy, history, turn(("g", {"a": 1}))), Continue)


def test_repeats_within_one_batch_count() -> None:
    policy = LoopDetection(threshold=3)
    verdict = evaluate(policy, [], turn(("f", {}), ("f", {}), ("f", {})))
    assert isinstance(verdict, Inject)


def test_window_forgets_old_calls() -> None:
    policy = LoopDetection(threshold=3, window=4)
    history: list[AgentMessage] = []
    for name in ("f", "f", "a", "b", "c"):
        history += [turn((name, {})), result("r")]
    # Only the last four calls (a, b, c and this f) are in the window.
    assert isinstance(evaluate(policy, history, turn(("f", {}))), Continue)


def test_only_this_run_counts() -> None:
    policy = LoopDetection(threshold=2)
    earlier: list[AgentMessage] = [turn(("f", {})), result("r"), reply_text("done")]
    history = [*earlier, UserMessage.from_text("again")]
    ctx = policy_ctx(messages=history, new_messages=1, message=turn(("f", {})))
    assert isinstance(policy.evaluate(ctx), Continue)


def test_current_message_already_committed_is_not_counted_twice() -> None:
    policy = LoopDetection(threshold=2)
    current = turn(("f", {}))
    assert isinstance(evaluate(policy, [current], current), Continue)


def test_no_message_or_no_calls() -> None:
    policy = LoopDetection()
    assert isinstance(policy.evaluate(policy_ctx()), Continue)
    assert isinstance(evaluate(policy, [], reply_text("hi")), Continue)


def test_nudge_only_mode_nudges_again() -> None:
    policy = LoopDetection(threshold=2, stop=False)
    first, second = turn(("f", {})), turn(("f", {}))
    verdict = evaluate(policy, [first, result("r")], second)
    assert isinstance(verdict, Inject)
    history: list[AgentMessage] = [first, result("r"), second, result("r"), *verdict.messages]
    assert isinstance(evaluate(policy, history, turn(("f", {}))), Inject)


def test_custom_nudge() -> None:
    policy = LoopDetection(threshold=2, nudge="stop calling {tool}")
    verdict = evaluate(policy, [turn(("x", {})), result("r")], turn(("x", {})))
    assert isinstance(verdict, Inject)
    assert verdict.messages[0].content[0].text == "stop calling x"  # type: ignore[union-attr]


@pytest.mark.parametrize(("threshold", "window"), [(1, 10), (3, 2)])
def test_bad_settings(threshold: int, window: int) -> None:
    with pytest.raises(ValueError, match="threshold"):
        LoopDetection(threshold=threshold, window=window)


# ------------------------------------------------------------------ through a real run


async def test_a_run_stuck_in_a_loop_is_nudged_then_stopped() -> None:
    search = Recorder("search")
    same = ("search", {"text": "weather"})
    script = [reply_tool_calls(same) for _ in range(6)] + [reply_text("never")]
    result, stream = await run(
        script, tools=[search], post_turn_policies=[LoopDetection(threshold=3, window=10)]
    )
    nudge = LoopDetection().nudge_text("search")
    # Third identical call: nudge queued; the fourth model call sees it; fourth call: stop.
    assert len(stream.calls) == 4
    assert "several times in a row" not in seen_by_model(stream, 2)
    assert "several times in a row" in seen_by_model(stream, 3)
    assert len(search.ran) == 4
    assert result.stopped_by is not None
    assert result.stopped_by.startswith("LoopDetection: loop detected: 'search' was called 4")
    user_texts = [m.content[0].text for m in result.messages if isinstance(m, UserMessage)]  # type: ignore[union-attr]
    assert user_texts == ["go", nudge]


async def test_a_model_that_heeds_the_nudge_finishes() -> None:
    same = ("search", {"text": "weather"})
    script: list[object] = [reply_tool_calls(same) for _ in range(3)]
    script += [reply_tool_calls(("search", {"text": "forecast"})), reply_text("sunny")]
    result, _ = await run(
        script, tools=[Recorder("search")], post_turn_policies=[LoopDetection(threshold=3)]
    )
    assert result.stopped_by is None
    assert result.text == "sunny"
