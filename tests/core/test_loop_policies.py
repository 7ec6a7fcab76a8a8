"""The four policy slots and their verdicts, through real runs."""

from __future__ import annotations

from typing import Any

import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import Recorder, config, paired, results_of

pytestmark = pytest.mark.anyio

ran: list[Any] = []


@al.tool
async def act(value: int) -> str:
    """Act."""
    ran.append(value)
    return str(value)


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def prompt() -> list[al.AgentMessage]:
    return [al.UserMessage.from_text("go")]


class Fixed:
    """A policy returning fixed verdicts in turn, then Continue/Allow."""

    def __init__(self, *verdicts: Any, default: Any = al.policy.CONTINUE) -> None:
        self.verdicts = list(verdicts)
        self.default = default
        self.seen: list[Any] = []

    def evaluate(self, ctx: Any) -> Any:
        self.seen.append(list(ctx.messages))  # the view is valid only during the call
        return self.verdicts.pop(0) if self.verdicts else self.default


class Raises:
    name = "broken"
    fail_open = True  # a convenience: its failures count as a pass

    def evaluate(self, ctx: Any) -> Any:
        raise RuntimeError("policy bug")


async def test_pre_turn_stop_and_inject() -> None:
    stop = Fixed(al.policy.CONTINUE, al.policy.Stop(reason="enough"))
    stream = ScriptedStream([reply_tool_calls(("act", {"value": 1})), reply_text("never")])
    rec = Recorder()
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(stream, tools=[act], pre_turn_policies=[stop]),
        on_event=rec,
    )
    assert result.stopped_by == "Fixed: enough"
    assert len(stream.calls) == 1
    assert rec.of(al.TurnEnd)[-1].message is None
    assert isinstance(rec.events[-1], al.AgentEnd)

    inject = Fixed(al.policy.Inject(messages=[al.UserMessage.from_text("remember the rules")]))
    stream = ScriptedStream([reply_text("ok")])
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(stream, pre_turn_policies=[inject])
    )
    sent = stream.calls[0].context.messages
    assert sent[-1].content[0].text == "remember the rules"  # type: ignore[union-attr]
    # The policy saw the committed context (the prompt), after the transformers.
    assert [m.content[0].text for m in inject.seen[0]] == ["go"]


async def test_pre_dispatch_skip_rewrite_and_stop() -> None:
    def verdict_for(ctx: al.policy.DispatchContext) -> al.policy.DispatchVerdict:
        value = ctx.call.arguments["value"]
        if value == 1:
            return al.policy.Skip(reason="not allowed")
        if value == 2:
            return al.policy.Rewrite(arguments={"value": 20})
        return al.policy.ALLOW

    class Policy:
        def evaluate(self, ctx: al.policy.DispatchContext) -> al.policy.DispatchVerdict:
            return verdict_for(ctx)

    script = [reply_tool_calls(*[("act", {"value": v}) for v in (1, 2, 3)]), reply_text("ok")]
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(script, tools=[act], pre_dispatch_policies=[Policy()]),
    )
    texts = [r.text for r in results_of(result.messages)]
    assert sorted(ran) == [3, 20]
    assert texts == ["tool call skipped: not allowed", "20", "3"]

    class StopOnThree:
        name = "guard"

        def evaluate(self, ctx: al.policy.DispatchContext) -> al.policy.DispatchVerdict:
            return (
                al.policy.Stop(reason="dangerous")
                if ctx.call.arguments["value"] == 3
                else al.policy.ALLOW
            )

    ran.clear()
    approvals: list[Any] = []

    async def approve(call: al.ToolCall, tool: al.AgentTool | None) -> al.policy.ApprovalDecision:
        approvals.append(call.arguments)
        return al.policy.APPROVED

    script = [reply_tool_calls(*[("act", {"value": v}) for v in (1, 2, 3)]), reply_text("never")]
    stream = ScriptedStream(script)
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(stream, tools=[act], pre_dispatch_policies=[StopOnThree()], approval=approve),
    )
    # Two passes: the Stop on the third call came before any approval was asked.
    assert approvals == []
    assert ran == []
    assert result.stopped_by == "guard: dangerous"
    assert all(r.is_error for r in results_of(result.messages))
    assert len(results_of(result.messages)) == 3
    assert len(stream.calls) == 1
    assert paired(result.messages)


async def test_approved_with_rewrites_reenter_pre_dispatch() -> None:
    class NoBig:
        def evaluate(self, ctx: al.policy.DispatchContext) -> al.policy.DispatchVerdict:
            return (
                al.policy.Skip(reason="too big")
                if ctx.call.arguments["value"] > 100
                else al.policy.ALLOW
            )

    async def approve(call: al.ToolCall, tool: al.AgentTool | None) -> al.policy.ApprovalDecision:
        return al.policy.ApprovedWith(arguments={"value": 1000})

    script = [reply_tool_calls(("act", {"value": 1})), reply_text("ok")]
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(script, tools=[act], pre_dispatch_policies=[NoBig()], approval=approve),
    )
    assert ran == []
    assert results_of(result.messages)[0].text == "tool call skipped: too big"


async def test_post_turn_replace_inject_and_stop() -> None:
    class Redact:
        def evaluate(self, ctx: al.policy.PolicyContext) -> al.policy.PolicyVerdict:
            if not ctx.tool_results:
                return al.policy.CONTINUE
            replaced = [
                al.ToolResultMessage(
                    tool_call_id=r.tool_call_id,
                    tool_name=r.tool_name,
                    content=[al.Text(text="[redacted]")],
                )
                for r in ctx.tool_results
            ]
            return al.policy.Replace(tool_results=replaced)

    class WrongReplace:
        def evaluate(self, ctx: al.policy.PolicyContext) -> al.policy.PolicyVerdict:
            return al.policy.Replace(tool_results=[])

    stream = ScriptedStream([reply_tool_calls(("act", {"value": 7})), reply_text("ok")])
    rec = Recorder()
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(stream, tools=[act], post_turn_policies=[Redact(), WrongReplace()]),
        on_event=rec,
    )
    assert ran == [7]
    assert results_of(result.messages)[0].text == "[redacted]"
    sent = stream.calls[1].context.messages
    assert sent[-1].content[0].text == "[redacted]"  # type: ignore[union-attr]
    # Events show what the tool really returned; the history what the model saw.
    assert rec.of(al.ToolExecutionEnd)[0].result.content[0].text == "7"

    inject = Fixed(al.policy.Inject(messages=[al.UserMessage.from_text("one more thing")]))
    stream = ScriptedStream([reply_text("first"), reply_text("second")])
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(stream, post_turn_policies=[inject])
    )
    assert result.text == "second"

    stop = Fixed(al.policy.Stop(reason="budget"))
    stream = ScriptedStream([reply_tool_calls(("act", {"value": 1})), reply_text("never")])
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(stream, tools=[act], post_turn_policies=[stop])
    )
    assert result.stopped_by == "Fixed: budget"
    assert len(stream.calls) == 1
    assert paired(result.messages)


async def test_post_loop_inject_continues_and_stop_ends() -> None:
    post = Fixed(al.policy.Inject(messages=[al.UserMessage.from_text("check your work")]))
    stream = ScriptedStream([reply_text("draft"), reply_text("checked")])
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(stream, post_loop_policies=[post])
    )
    assert result.text == "checked"
    assert len(post.seen) == 2


async def test_raising_fail_open_policies_count_as_pass() -> None:
    stream = ScriptedStream([reply_tool_calls(("act", {"value": 5})), reply_text("fine")])
    rec = Recorder()
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(
            stream,
            tools=[act],
            pre_turn_policies=[Raises()],
            pre_dispatch_policies=[Raises()],
            post_turn_policies=[Raises()],
            post_loop_policies=[Raises()],
        ),
        on_event=rec,
    )
    assert ran == [5]
    assert result.text == "fine"
    assert result.stopped_by is None
    assert isinstance(rec.events[-1], al.AgentEnd)
