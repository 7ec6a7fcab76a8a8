"""Agent runs on a real Temporal server (the session's dev server), with in-process workers."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from temporalio.client import WorkflowFailureError

from agentloop import (
    Agent,
    AgentEnd,
    AgentStart,
    AlreadyRunning,
    MessageStart,
    MessageUpdate,
    NetworkError,
    StopReason,
    StreamRetry,
    ToolExecutionEnd,
    ToolExecutionStart,
    Usage,
    tool,
)
from agentloop.multi import SubAgentTool
from agentloop.stream import TextDelta
from agentloop.testing import (
    FunctionStream,
    ScriptedStream,
    events_for,
    reply_text,
    reply_tool_calls,
)
from agentloop_temporal import ApprovalRequested, EventHub, RunEvent

from ._support import (
    MODEL,
    add,
    agent_for,
    assert_paired,
    connect,
    in_process_worker,
    keep_history,
    new_queue,
    results,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agentloop import ModelSpec, StreamOptions
    from agentloop.stream import AssistantMessageEvent, LlmContext
    from agentloop_temporal.testing import DevServer

pytestmark = pytest.mark.anyio


def after_results(*replies: Any) -> FunctionStream:
    """A model whose answer is ``replies[n]``, n the number of answers in its context (so a
    retried call, on whichever worker, gets the same answer)."""

    def answer(context: LlmContext) -> Any:
        turns = sum(1 for m in context.messages if type(m).__name__ == "AssistantMessage")
        return replies[min(turns, len(replies) - 1)]

    return FunctionStream(answer)


async def test_a_run_with_tools_completes_and_streams_its_events(
    temporal_server: DevServer,
) -> None:
    client = await connect(temporal_server.address)
    queue, hub = new_queue(), EventHub()
    model = after_results(
        reply_tool_calls(("add", {"a": 2, "b": 3}), ("add", {"a": 4, "b": 5})),
        reply_text("5 and 9"),
    )
    events: list[RunEvent] = []
    async with in_process_worker(client, queue, model, [add], hub):
        agent = agent_for(client, queue, hub)
        async with agent.stream("add things") as stream:
            async for event in stream:
                events.append(event)
            result = await stream.run.result()
        history = await keep_history(stream.run.handle, "tools")
    assert result.output == "5 and 9"
    assert result.stop_reason is StopReason.STOP
    assert [r.text for r in results(result.messages)] == ["5", "9"]
    assert_paired(result.messages)
    # The events of an in-process run, in its order: one start, one end, paired tool events.
    assert type(events[0]) is AgentStart
    assert type(events[-1]) is AgentEnd
    assert events[-1].messages == result.messages
    starts = [e.call_id for e in events if isinstance(e, ToolExecutionStart)]
    ends = [e.call_id for e in events if isinstance(e, ToolExecutionEnd)]
    assert sorted(starts) == sorted(ends) == ["call_1", "call_2"]
    opened = [i for i, e in enumerate(events) if type(e) is MessageStart]
    updates = [i for i, e in enumerate(events) if type(e) is MessageUpdate]
    assert updates and all(any(o < u for o in opened) for u in updates)
    text = "".join(
        e.event.delta for e in events if type(e) is MessageUpdate and type(e.event) is TextDelta
    )
    assert text == "5 and 9"
    # Each model call and each tool call is an activity, scheduled once.
    for name, count in [("agentloop.model_call", 2), ("agentloop.tool_call", 2)]:
        assert history.count(f'"name": "{name}"') == count


async def test_steering_and_follow_up_signals_take_effect(temporal_server: DevServer) -> None:
    client = await connect(temporal_server.address)
    queue = new_queue()
    started = {"a": anyio.Event(), "b": anyio.Event()}
    release_a = anyio.Event()
    cancelled_b = anyio.Event()

    @tool
    async def slow(name: str) -> str:
        """Wait for the test."""
        started[name].set()
        try:
            if name == "a":
                await release_a.wait()
            else:
                await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled_b.set()
            raise
        return f"{name} done"

    model = after_results(
        reply_tool_calls(("slow", {"name": "a"}), ("slow", {"name": "b"})),
        reply_text("steered"),
        reply_text("followed up"),
    )
    async with in_process_worker(client, queue, model, [slow]):
        agent = agent_for(client, queue)
        run = await agent.start("go")
        with anyio.fail_after(20):
            await started["a"].wait()
            await started["b"].wait()
        await run.follow_up("and then?")
        await run.steer("stop the slow one")
        state = await run.state()
        assert [m.text for m in state.steering] == ["stop the slow one"]  # type: ignore[union-attr]
        release_a.set()
        with anyio.fail_after(20):
            result = await run.result()
            await cancelled_b.wait()  # the steered call's activity was cancelled on the worker
        await keep_history(run.handle, "steer_follow_up")
    texts = [(type(m).__name__, getattr(m, "text", "")) for m in result.messages]
    assert texts == [
        ("UserMessage", "go"),
        ("AssistantMessage", ""),
        ("ToolResultMessage", "a done"),
        (
            "ToolResultMessage",
            "tool call cancelled: user requested steering interrupt: 'stop the slow one'",
        ),
        ("UserMessage", "stop the slow one"),
        ("AssistantMessage", "steered"),
        ("UserMessage", "and then?"),
        ("AssistantMessage", "followed up"),
    ]
    assert_paired(result.messages)


async def test_an_approval_is_answered_through_an_update(temporal_server: DevServer) -> None:
    client = await connect(temporal_server.address)
    queue, hub = new_queue(), EventHub()
    ran: list[str] = []

    @tool(requires_approval=True)
    async def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    model = after_results(
        reply_tool_calls(("delete", {"path": "a.txt"}), ("delete", {"path": "b.txt"})),
        reply_text("done"),
    )
    asked: list[str] = []
    async with in_process_worker(client, queue, model, [delete, add], hub):
        agent = agent_for(client, queue, hub, tool_execution="sequential")
        async with agent.stream("clean up") as events:
            async for event in events:
                if isinstance(event, ApprovalRequested):
                    asked.append(event.call.id)
                    state = await events.run.state()
                    assert [c.id for c in state.pending_approvals] == [event.call.id]
                    if event.call.arguments["path"] == "a.txt":
                        await agent.approve(event.call.id, arguments={"path": "A.txt"})
                    else:
                        with pytest.raises(LookupError, match="no tool call 'nope'"):
                            await agent.reject("nope")
                        await agent.reject(event.call.id, "not that one")
            result = await events.run.result()
        await keep_history(events.run.handle, "approval")
    assert asked == ["call_1", "call_2"]
    assert ran == ["A.txt"]
    assert [r.text for r in results(result.messages)] == [
        "deleted A.txt",
        "tool call rejected: not that one",
    ]
    assert result.output == "done"


async def test_abort_cancels_the_run_promptly(temporal_server: DevServer) -> None:
    client = await connect(temporal_server.address)
    queue = new_queue()
    started, cancelled = anyio.Event(), anyio.Event()

    @tool
    async def wait_forever() -> str:
        """Never returns."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    model = after_results(reply_tool_calls(("wait_forever", {})), reply_text("unreachable"))
    async with in_process_worker(client, queue, model, [wait_forever]):
        agent = agent_for(client, queue)
        run = await agent.start("wait")
        with anyio.fail_after(20):
            await started.wait()
        began = time.monotonic()
        await agent.abort()
        with anyio.fail_after(20):
            result = await run.result()
        took = time.monotonic() - began
        with anyio.fail_after(20):
            await cancelled.wait()  # the tool's activity learns at its next heartbeat
        await keep_history(run.handle, "abort")
    assert result.stop_reason is StopReason.ABORTED
    assert took < 2.0, took
    assert [r.text for r in results(result.messages)] == [
        "tool call aborted: the run was cancelled"
    ]
    assert_paired(result.messages)


async def test_a_retried_model_call_voids_its_partial_output_in_the_stream(
    temporal_server: DevServer,
) -> None:
    client = await connect(temporal_server.address)
    queue, hub = new_queue(), EventHub()
    calls = 0

    async def flaky(
        model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        nonlocal calls
        calls += 1
        answer = events_for(reply_text("all of it"), chunk_size=4)
        for event in answer[:3] if calls == 1 else answer:
            yield event
        if calls == 1:
            raise NetworkError("connection reset")

    events: list[RunEvent] = []
    async with in_process_worker(client, queue, flaky, [], hub):
        agent = agent_for(client, queue, hub)
        async with agent.stream("say it") as stream:
            async for event in stream:
                events.append(event)
            result = await stream.run.result()
    assert calls == 2
    assert result.output == "all of it"
    kinds = [type(e).__name__ for e in events]
    retry = kinds.index("StreamRetry")
    marker = events[retry]
    assert isinstance(marker, StreamRetry)
    assert marker.attempt == 1
    before = [
        e.event.delta
        for e in events[:retry]
        if type(e) is MessageUpdate and type(e.event) is TextDelta
    ]
    after = [
        e.event.delta
        for e in events[retry:]
        if type(e) is MessageUpdate and type(e.event) is TextDelta
    ]
    assert "".join(before) == "all "  # the void partial output, which a display discards
    assert "".join(after) == "all of it"
    assert kinds.count("MessageStart") == 2 and kinds.count("MessageEnd") == 2


async def test_checkpoints_interoperate_with_agent(temporal_server: DevServer) -> None:
    client = await connect(temporal_server.address)
    queue = new_queue()
    local = Agent(model=MODEL, stream_fn=ScriptedStream([reply_text("four")]), tools=[add])
    await local.prompt("what is 2 + 2?")
    model = after_results(  # the history already holds one answer ("four")
        reply_text("unused"),
        reply_tool_calls(("add", {"a": 4, "b": 1})),
        reply_text("five"),
        reply_text("six"),
    )
    async with in_process_worker(client, queue, model, [add]):
        agent = agent_for(client, queue)
        output = await (await agent.start("plus one?", checkpoint=local.checkpoint())).output()
        assert output.checkpoint.tool_names == ["add"]
        assert output.checkpoint.messages[:2] == local.messages
        # The next run of the conversation starts where this one ended.
        again = await agent.prompt("and again?")
        assert again.output == "six"
    resumed = Agent.from_checkpoint(
        await agent.latest_checkpoint() or output.checkpoint,
        tools=[add],
        stream_fn=ScriptedStream([reply_text("seven")]),
    )
    assert [getattr(m, "text", "") for m in resumed.messages] == [
        "what is 2 + 2?",
        "four",
        "plus one?",
        "",
        "5",
        "five",
        "and again?",
        "six",
    ]
    assert resumed.usage == output.checkpoint.usage + again.usage
    assert (await resumed.prompt("and?")).output == "seven"
    assert_paired(resumed.messages)


async def test_one_run_at_a_time_per_conversation_and_a_missing_tool_fails_clearly(
    temporal_server: DevServer,
) -> None:
    client = await connect(temporal_server.address)
    queue = new_queue()
    started = anyio.Event()

    @tool
    async def hold() -> str:
        """Hold."""
        started.set()
        await anyio.sleep_forever()
        return ""

    model = after_results(reply_tool_calls(("hold", {})), reply_text("x"))
    async with in_process_worker(client, queue, model, [hold]):
        agent = agent_for(client, queue)
        await agent.start("one")
        with pytest.raises(AlreadyRunning):
            await agent.start("two")
        with anyio.fail_after(20):
            await started.wait()
        await agent.abort()
        await agent.wait_idle()
        lacking = agent_for(client, queue, tools=["hold", "teleport"])
        with pytest.raises(WorkflowFailureError) as failed:
            await lacking.prompt("go")
    assert "no tool named 'teleport'" in str(failed.value.cause.__cause__)


async def test_a_durable_runs_usage_counts_its_sub_agents_as_in_process(
    temporal_server: DevServer,
) -> None:
    # A parent with 2 model calls and a sub-agent with 1, 10 output tokens each: 30 either way.
    ten = Usage(input=5, output=10, total=15)

    def parent_model() -> FunctionStream:
        return after_results(
            reply_tool_calls(("helper", {"task": "go"}), usage=ten), reply_text("done", usage=ten)
        )

    def helper() -> SubAgentTool:
        child = Agent(model=MODEL, stream_fn=ScriptedStream([reply_text("helped", usage=ten)]))
        return SubAgentTool(lambda: child, name="helper", description="helps")

    local = Agent(model=MODEL, stream_fn=parent_model(), tools=[helper()])
    in_process = await local.prompt("start")
    client = await connect(temporal_server.address)
    queue = new_queue()
    async with in_process_worker(client, queue, parent_model(), [helper()]):
        durable = await agent_for(client, queue).prompt("start")
    assert [r.text for r in results(in_process.messages)] == ["helped"]
    assert [r.text for r in results(durable.messages)] == ["helped"]
    assert in_process.usage.output == 30
    assert durable.usage == in_process.usage
    assert durable.stop_reason is StopReason.STOP
