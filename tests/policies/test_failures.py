"""Policies that raise, checked through real runs.

A policy fails closed (the call is rejected, or the run ends with an error naming it) unless it
sets ``fail_open = True``, in which case its failure is reported and counts as Continue/Allow.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agentloop import AgentToolResult, StopReason, ToolCall
from agentloop.testing import reply_text, reply_tool_calls
from agentloop_policies import (
    Budget,
    LoopDetection,
    PiiRedactor,
    PromptInjectionGuard,
    Sandbox,
    ToolAllowList,
    ToolDenyList,
)

from ._helpers import Recorder, dispatch_ctx, policy_ctx, run, seen_by_model, tool_results

pytestmark = pytest.mark.anyio


class Exploding:
    """A policy for any slot that always raises (and fails open)."""

    name = "exploding"
    fail_open = True

    def __init__(self) -> None:
        self.calls = 0

    def evaluate(self, ctx: Any) -> Any:
        self.calls += 1
        raise RuntimeError("policy bug")


async def test_fail_open_policies_that_raise_in_every_slot_do_not_end_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    boom = Exploding()
    echo = Recorder("echo", reply="mail ann@example.com")
    script = [reply_tool_calls(("echo", {"text": "hi"})), reply_text("done")]
    with caplog.at_level(logging.ERROR):
        result, stream = await run(
            script,
            tools=[echo],
            pre_turn_policies=[boom, Budget(max_tokens=10**6)],
            pre_dispatch_policies=[boom],
            post_turn_policies=[boom, PiiRedactor()],
            post_loop_policies=[boom],
        )
    # pre-turn twice, pre-dispatch once, post-turn twice, post-loop once.
    assert boom.calls == 6
    assert echo.ran == [{"text": "hi"}]  # the pre-dispatch failure counted as Allow
    assert result.stop_reason is StopReason.STOP
    assert result.stopped_by is None
    assert result.text == "done"
    # The policies after the broken one still ran: the redactor did its work.
    assert "ann@example.com" not in seen_by_model(stream, 1)
    assert caplog.text.count("exploding") >= 6
    assert "policy bug" in caplog.text


async def test_a_fail_open_policy_that_raises_does_not_hide_a_later_deny(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bash = Recorder("bash")
    script = [reply_tool_calls(("bash", {})), reply_text("done")]
    with caplog.at_level(logging.ERROR):
        result, _ = await run(
            script, tools=[bash], pre_dispatch_policies=[Exploding(), ToolDenyList("bash")]
        )
    assert bash.ran == []
    assert "blocked by policy" in tool_results(result)[0].text


class Weird:
    """A tool whose calls carry arguments no policy should choke on."""

    def __init__(self) -> None:
        self.name = "weird"
        self.label = "weird"
        self.description = "takes anything"
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {"path": {"format": "path"}, "file": {"type": "array"}},
        }
        self.requires_approval = False
        self.read_only = False

    async def execute(self, call_id: str, arguments: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult.text("")


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"path": None},
        {"path": 3},
        {"path": ["a", 1, None]},
        {"path": {"nested": "x"}},
        {"file": [[["deep"]]]},
        {"path": "\ud800"},
        [1, 2],
        "a string",
        None,
    ],
)
def test_ready_made_policies_never_raise_on_odd_arguments(arguments: Any, tmp_path: Any) -> None:
    weird = Weird()
    ctx = dispatch_ctx("weird", arguments, tool=weird)
    for policy in (Sandbox([tmp_path]), ToolDenyList("x"), ToolAllowList("weird")):
        policy.evaluate(ctx)
    message = reply_tool_calls(ToolCall(id="c", name="weird", arguments=arguments))
    turn_ctx = policy_ctx(message=message, messages=[message, message])
    LoopDetection(threshold=2).evaluate(turn_ctx)
    PromptInjectionGuard().evaluate(turn_ctx)
    PiiRedactor().evaluate(turn_ctx)
