"""ApprovalGate: modes, session trust, rewrites, and every failure of ``ask`` as a rejection."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from agentloop import Agent, AgentTool, StopReason, ToolCall, tool
from agentloop.policy import Approved, ApprovedWith, Rejected
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from agentloop_policies import ALWAYS_ALLOW, ApprovalAnswer, ApprovalGate, ApprovalMode, Sandbox

from ._helpers import MODEL, Recorder, real, run, seen_by_model, tool_results

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool
def read(path: str) -> str:
    """Read a file."""
    return path


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=f"id-{name}", name=name, arguments=arguments)


class Asker:
    """An ``ask`` that records what it was asked and answers from a script."""

    def __init__(self, *answers: ApprovalAnswer) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    async def __call__(self, call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        self.asked.append(call.name)
        return self.answers.pop(0)


async def test_smart_asks_only_for_tools_that_require_approval() -> None:
    ask = Asker(Rejected(reason="no"))
    gate = ApprovalGate(ask)
    assert gate.mode is ApprovalMode.SMART
    assert isinstance(await gate(call("read", path="x"), read), Approved)
    decision = await gate(call("delete", path="x"), delete)
    assert decision == Rejected(reason="no")
    assert ask.asked == ["delete"]


async def test_enabled_asks_for_every_tool() -> None:
    ask = Asker(True, False)
    gate = ApprovalGate(ask, mode="enabled")
    assert isinstance(await gate(call("read"), read), Approved)
    assert isinstance(await gate(call("delete"), delete), Rejected)
    assert ask.asked == ["read", "delete"]


async def test_bypassed_never_asks() -> None:
    gate = ApprovalGate(mode=ApprovalMode.BYPASSED)
    assert isinstance(await gate(call("delete"), delete), Approved)


async def test_unknown_tools_are_not_asked_about() -> None:
    ask = Asker()
    gate = ApprovalGate(ask, mode="enabled")
    assert isinstance(await gate(call("ghost"), None), Approved)
    assert ask.asked == []


async def test_always_allow_trusts_the_tool_for_the_session() -> None:
    ask = Asker(ALWAYS_ALLOW)
    gate = ApprovalGate(ask)
    assert isinstance(await gate(call("delete", path="a"), delete), Approved)
    assert gate.trusted == {"delete"}
    assert isinstance(await gate(call("delete", path="b"), delete), Approved)
    assert ask.asked == ["delete"]
    gate.distrust("delete")
    assert gate.needs_approval(call("delete"), delete)
    gate.trust("delete")
    gate.clear_trust()
    assert gate.trusted == frozenset()


async def test_trust_applies_in_enabled_mode_too() -> None:
    gate = ApprovalGate(Asker(), mode="enabled", trusted=["read"])
    assert not gate.needs_approval(call("read"), read)


async def test_approved_with_passes_through() -> None:
    gate = ApprovalGate(Asker(ApprovedWith(arguments={"path": "safe"})))
    assert await gate(call("delete", path="x"), delete) == ApprovedWith(arguments={"path": "safe"})


async def test_raising_ask_is_a_rejection(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        raise RuntimeError("ui crashed")

    with caplog.at_level(logging.ERROR, logger="agentloop.policies.approval"):
        decision = await ApprovalGate(broken)(call("delete"), delete)
    assert isinstance(decision, Rejected)
    assert "failed" in decision.reason
    assert "ui crashed" in caplog.text


async def test_invalid_answer_is_a_rejection(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="agentloop.policies.approval"):
        decision = await ApprovalGate(Asker("yes"))(call("delete"), delete)  # type: ignore[arg-type]
    assert isinstance(decision, Rejected)
    assert "'yes'" in caplog.text


async def test_hanging_ask_times_out_as_a_rejection() -> None:
    async def hang(call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    decision = await ApprovalGate(hang, timeout=0.05)(call("delete"), delete)
    assert isinstance(decision, Rejected)
    assert "0.05 seconds" in decision.reason


async def test_slow_person_within_the_timeout_is_heard() -> None:
    answered = anyio.Event()

    async def person(call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        await answered.wait()
        return True

    gate = ApprovalGate(person, timeout=None)
    decisions: list[Any] = []
    async with anyio.create_task_group() as tg:

        async def ask() -> None:
            decisions.append(await gate(call("delete"), delete))

        tg.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        assert decisions == []
        answered.set()
    assert decisions == [Approved()]


async def test_cancellation_of_the_run_propagates() -> None:
    started = anyio.Event()
    outcome: list[Any] = []

    async def waiting(call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    gate = ApprovalGate(waiting, timeout=60)
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            with anyio.CancelScope() as scope:
                outcome.append(await gate(call("delete"), delete))
            outcome.append(("cancelled", scope.cancelled_caught))

        tg.start_soon(run)
        await started.wait()
        tg.cancel_scope.cancel()
    # The task group's cancellation went through the gate: no decision was made up.
    assert outcome == []


def test_configuration_errors() -> None:
    with pytest.raises(ValueError, match="needs an ask"):
        ApprovalGate()
    with pytest.raises(ValueError, match="ApprovalMode"):
        ApprovalGate(Asker(), mode="sometimes")
    with pytest.raises(ValueError, match="timeout"):
        ApprovalGate(Asker(), timeout=-1)
    gate = ApprovalGate(mode="bypassed")
    with pytest.raises(ValueError, match="needs an ask"):
        gate.mode = ApprovalMode.SMART
    gate = ApprovalGate(Asker())
    gate.mode = "bypassed"
    assert gate.mode is ApprovalMode.BYPASSED
    assert "bypassed" in repr(gate)


# ------------------------------------------------------------------ through a real run


async def test_smart_mode_in_a_run_asks_only_about_risky_tools() -> None:
    remove, look = Recorder("remove", requires_approval=True), Recorder("look")
    ask = Asker(Rejected(reason="the user said no"))
    script = [reply_tool_calls(("remove", {"path": "a"}), ("look", {})), reply_text("ok")]
    result, stream = await run(script, tools=[remove, look], approval=ApprovalGate(ask))
    assert ask.asked == ["remove"]
    assert remove.ran == []
    assert look.ran == [{}]
    rejected = tool_results(result)[0]
    assert rejected.is_error
    assert "the user said no" in rejected.text
    assert "the user said no" in seen_by_model(stream, 1)
    assert result.text == "ok"


async def test_enabled_and_bypassed_modes_in_a_run() -> None:
    look = Recorder("look")
    ask = Asker(False)
    script = [reply_tool_calls(("look", {})), reply_text("ok")]
    result, _ = await run(script, tools=[look], approval=ApprovalGate(ask, mode="enabled"))
    assert ask.asked == ["look"]
    assert look.ran == []
    assert tool_results(result)[0].is_error

    remove = Recorder("remove", requires_approval=True)
    script = [reply_tool_calls(("remove", {})), reply_text("ok")]
    await run(script, tools=[remove], approval=ApprovalGate(mode="bypassed"))
    assert remove.ran == [{}]


async def test_approval_timeout_in_a_run_is_a_rejection_and_the_run_goes_on() -> None:
    async def nobody_answers(call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    remove = Recorder("remove", requires_approval=True)
    script = [reply_tool_calls(("remove", {})), reply_text("gave up")]
    result, _ = await run(
        script, tools=[remove], approval=ApprovalGate(nobody_answers, timeout=0.05)
    )
    assert remove.ran == []
    (rejected,) = tool_results(result)
    assert rejected.is_error
    assert "No approval came within 0.05 seconds" in rejected.text
    assert result.text == "gave up"
    assert result.error is None


async def test_a_raising_ask_in_a_run_is_a_rejection(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        raise KeyError("dialog")

    remove = Recorder("remove", requires_approval=True)
    script = [reply_tool_calls(("remove", {})), reply_text("ok")]
    with caplog.at_level(logging.ERROR):
        result, _ = await run(script, tools=[remove], approval=ApprovalGate(broken))
    assert remove.ran == []
    assert "approval request for this tool call failed" in tool_results(result)[0].text
    assert result.text == "ok"
    assert "KeyError" in caplog.text


async def test_rewritten_arguments_are_checked_again_by_the_sandbox(tmp_path: Path) -> None:
    answers = Asker(
        ApprovedWith(arguments={"path": "/etc/shadow"}),
        ApprovedWith(arguments={"path": "notes.txt"}),
    )
    remove = Recorder("remove", requires_approval=True)
    script = [
        reply_tool_calls(("remove", {"path": "a.txt"}), ("remove", {"path": "b.txt"})),
        reply_text("ok"),
    ]
    result, _ = await run(
        script,
        tools=[remove],
        tool_execution="sequential",
        pre_dispatch_policies=[Sandbox([tmp_path])],
        approval=ApprovalGate(answers),
    )
    escaped, fine = tool_results(result)
    assert escaped.is_error
    assert "outside the allowed directories" in escaped.text
    assert not fine.is_error
    assert remove.ran == [{"path": real(tmp_path, "notes.txt")}]


async def test_session_trust_lasts_across_prompts_of_an_agent() -> None:
    remove = Recorder("remove", requires_approval=True)
    ask = Asker(ALWAYS_ALLOW)
    gate = ApprovalGate(ask)
    agent = Agent(
        model=MODEL,
        stream_fn=ScriptedStream(
            [
                reply_tool_calls(("remove", {"path": "a"})),
                reply_text("one"),
                reply_tool_calls(("remove", {"path": "b"})),
                reply_text("two"),
            ]
        ),
        tools=[remove],
        approval=gate,
    )
    assert (await agent.prompt("first")).text == "one"
    assert (await agent.prompt("second")).text == "two"
    assert ask.asked == ["remove"]
    assert remove.ran == [{"path": "a"}, {"path": "b"}]
    assert gate.trusted == {"remove"}


async def test_aborting_the_run_while_a_person_is_asked_cancels_the_question() -> None:
    asked = anyio.Event()
    cancelled: list[bool] = []

    async def person(call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        asked.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise
        raise AssertionError("unreachable")

    remove = Recorder("remove", requires_approval=True)
    agent = Agent(
        model=MODEL,
        stream_fn=ScriptedStream([reply_tool_calls(("remove", {})), reply_text("never")]),
        tools=[remove],
        approval=ApprovalGate(person, timeout=60),
    )
    results: list[Any] = []
    async with anyio.create_task_group() as tg:

        async def prompt() -> None:
            results.append(await agent.prompt("go", raise_on_error=False))

        tg.start_soon(prompt)
        await asked.wait()
        agent.abort()
    (result,) = results
    assert result.stop_reason is StopReason.ABORTED
    assert cancelled == [True]
    assert remove.ran == []
    # No made-up rejection: the call ended as cancelled, not as "not approved".
    assert all("approval" not in r.text for r in tool_results(result))
