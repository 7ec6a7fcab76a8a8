"""Agent: abort, wait_idle, reset, observable state, state setters and plan mode."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import pytest

from agentloop import (
    Agent,
    AgentEnd,
    AgentEvent,
    AgentMessage,
    AgentToolResult,
    AlreadyRunning,
    AssistantMessage,
    ErrorKind,
    MessageEnd,
    MessageUpdate,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolExecutionEnd,
    ToolResultMessage,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    UserMessage,
    tool,
)
from agentloop._agent_run import PLAN_MODE_INSTRUCTION
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.stream import AssistantMessageEvent, LlmContext, TextDelta, TextStart
from agentloop.testing import (
    FunctionStream,
    ScriptedStream,
    reply_error,
    reply_text,
    reply_tool_calls,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from agentloop.abc import OnUpdate

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="fake", model_id="fake-1")


class GateTool(Tool):
    """A tool that runs until its gate opens; records whether it was cancelled."""

    def __init__(self, name: str, *, read_only: bool = False) -> None:
        self.name = name
        self.label = name
        self.description = f"the {name} tool"
        self.parameters = {"type": "object", "properties": {}}
        self.read_only = read_only
        self.started = anyio.Event()
        self.gate = anyio.Event()
        self.cancelled = False

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        self.started.set()
        try:
            await self.gate.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        return AgentToolResult.text(f"{self.name} done")


def assert_well_paired(messages: Sequence[AgentMessage]) -> None:
    """Every tool call is followed, before the next assistant message, by exactly one result,
    and every result answers a call of the assistant message before it."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            assert not open_calls, f"calls without results: {open_calls}"
            open_calls = {c.id for c in message.tool_calls}
        elif isinstance(message, ToolResultMessage):
            assert message.tool_call_id in open_calls, f"orphan result {message.tool_call_id}"
            open_calls.remove(message.tool_call_id)
        elif isinstance(message, UserMessage):
            assert not open_calls, f"calls without results: {open_calls}"
    assert not open_calls, f"calls without results: {open_calls}"


def two_calls() -> AssistantMessage:
    return reply_tool_calls(
        ToolCall(id="a1", name="a", arguments={}), ToolCall(id="b1", name="b", arguments={})
    )


# --------------------------------------------------------------------------- abort


async def test_running_tool_calls_with_no_subscriber_to_see_the_calls_start_and_end() -> None:
    # Read from the running batch: an agent no one subscribes to makes no tool-call events.
    a, b = GateTool("a"), GateTool("b")
    agent = Agent(
        model=MODEL, stream_fn=ScriptedStream([two_calls(), reply_text("done")]), tools=[a, b]
    )
    assert agent.running_tool_calls == set()
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "go")
        await a.started.wait()
        await b.started.wait()
        assert agent.running_tool_calls == {"a1", "b1"}
        b.gate.set()
        await anyio.wait_all_tasks_blocked()  # b's call has ended; a's waits at its gate
        assert agent.running_tool_calls == {"a1"}
        a.gate.set()
    assert agent.running_tool_calls == set()
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.text == "done"


async def test_abort_mid_tool_leaves_a_consistent_history() -> None:
    a, b = GateTool("a"), GateTool("b")
    b.gate.set()
    stream = ScriptedStream([two_calls(), reply_text("after abort")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a, b])
    b_done = anyio.Event()
    events: list[AgentEvent] = []

    def watch(event: AgentEvent) -> None:
        events.append(event)
        if isinstance(event, ToolExecutionEnd) and event.call_id == "b1":
            b_done.set()

    agent.subscribe(watch)
    results: list[Any] = []

    async def run() -> None:
        results.append(await agent.prompt("go", raise_on_error=False))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await a.started.wait()
        await b_done.wait()
        assert agent.running_tool_calls == {"a1"}
        agent.abort()
    (result,) = results
    assert result.stop_reason is StopReason.ABORTED
    assert a.cancelled
    history = agent.messages
    assert_well_paired(history)
    tool_results = [m for m in history if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error) for r in tool_results] == [("a1", True), ("b1", False)]
    assert "aborted" in tool_results[0].text
    assert [t.reason for t in events if isinstance(t, TurnEnd)] == [TurnEndReason.ABORTED]
    # The agent is idle and usable, and the model sees the repaired, consistent history.
    assert not agent.is_running
    assert agent.running_tool_calls == set()
    again = await agent.prompt("carry on", raise_on_error=False)
    assert again.text == "after abort"
    sent = stream.calls[1].context.messages
    assert_well_paired(sent)
    assert [type(m) for m in sent] == [
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        ToolResultMessage,
        UserMessage,
    ]


async def test_abort_mid_stream_keeps_the_partial_answer() -> None:
    closed = anyio.Event()

    async def slow_model(
        model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        try:
            yield TextStart(index=0)
            yield TextDelta(index=0, delta="partial ")
            yield TextDelta(index=0, delta="answer")
            await anyio.sleep_forever()
        finally:
            closed.set()

    agent = Agent(model=MODEL, stream_fn=slow_model)
    seen: list[str] = []
    async with agent.stream("go") as events:
        async for event in events:
            if isinstance(event, MessageUpdate) and isinstance(event.event, TextDelta):
                seen.append(event.event.delta)
                if len(seen) == 2:
                    assert agent.streaming_message is not None
                    assert agent.streaming_message.text == "partial answer"
                    agent.abort()
    assert closed.is_set()  # the provider's stream was closed at once
    result = events.result
    assert result.stop_reason is StopReason.ABORTED
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.stop_reason is StopReason.ABORTED
    assert last.text == "partial answer"
    assert not agent.is_running
    assert agent.streaming_message is None


async def test_abort_from_a_subscriber_and_from_a_thread() -> None:
    a, b = GateTool("a"), GateTool("b")
    stream = ScriptedStream([two_calls(), two_calls()])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a, b])

    def abort_on_first_tool(event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionEnd):
            agent.abort()

    # From a subscriber: b ends (its gate is open), the subscriber aborts, a is cancelled.
    b.gate.set()
    handle = agent.subscribe(abort_on_first_tool)
    result = await agent.prompt("one", raise_on_error=False)
    assert result.stop_reason is StopReason.ABORTED
    assert a.cancelled
    agent.unsubscribe(handle)
    assert_well_paired(agent.messages)

    # From another thread, through the thread-safe helper.
    a2, b2 = GateTool("a"), GateTool("b")
    agent.set_tools([a2, b2])
    results: list[Any] = []

    async def run() -> None:
        results.append(await agent.prompt("two", raise_on_error=False))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await a2.started.wait()
        await b2.started.wait()
        await anyio.to_thread.run_sync(agent.abort_threadsafe)
    assert results[0].stop_reason is StopReason.ABORTED
    assert a2.cancelled
    assert b2.cancelled
    assert_well_paired(agent.messages)
    # Neither helper does anything while the agent is idle.
    agent.abort()
    await anyio.to_thread.run_sync(agent.abort_threadsafe)
    assert not agent.is_running


async def test_an_abort_at_the_end_of_a_turn_starts_no_other_turn() -> None:
    # Asked from a subscriber when a turn ends (on the loop's task, no await in between): the
    # run ends there, with no further turn begun and aborted, whether or not anything waits in
    # the steering queue; the same through ``run_loop`` and its cancel scope.
    @tool(name="echo")
    async def echo() -> str:
        """Echo."""
        return "ok"

    replies = [reply_tool_calls(("echo", {})), reply_tool_calls(("echo", {})), reply_text("done")]
    agent = Agent(model=MODEL, stream_fn=ScriptedStream(replies), tools=[echo])
    seen: list[AgentEvent] = []

    def abort_at_turn_end(event: AgentEvent) -> None:
        seen.append(event)
        if isinstance(event, TurnEnd):
            agent.abort()

    agent.subscribe(abort_at_turn_end)
    result = await agent.prompt("go", raise_on_error=False)
    assert result.stop_reason is StopReason.ABORTED
    assert [type(e).__name__ for e in seen if isinstance(e, TurnStart | TurnEnd)] == [
        "TurnStart",
        "TurnEnd",
    ]

    scope = anyio.CancelScope()
    turns: list[str] = []

    def cancel_at_turn_end(event: AgentEvent) -> None:
        if isinstance(event, TurnStart | TurnEnd):
            turns.append(type(event).__name__)
        if isinstance(event, TurnEnd):
            scope.cancel()

    config = AgentLoopConfig(model=MODEL, stream_fn=ScriptedStream(replies), tools=[echo])
    outcome = await run_loop(
        [UserMessage.from_text("go")],
        AgentContext(),
        config,
        on_event=cancel_at_turn_end,
        cancel_scope=scope,
    )
    assert outcome.stop_reason is StopReason.ABORTED
    assert turns == ["TurnStart", "TurnEnd"]


async def test_leaving_the_stream_early_cancels_the_run_cleanly() -> None:
    a = GateTool("a")
    stream = ScriptedStream([reply_tool_calls(("a", {})), reply_text("next")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a])
    async with agent.stream("go") as events:
        async for event in events:
            if isinstance(event, MessageUpdate):
                continue
            if a.started.is_set():
                break
    assert a.cancelled
    assert not agent.is_running
    assert_well_paired(agent.messages)
    result = await agent.prompt("again")
    assert result.text == "next"


# --------------------------------------------------------------------------- wait_idle, reset


async def test_wait_idle_returns_when_the_run_ends() -> None:
    a = GateTool("a")
    stream = ScriptedStream([reply_tool_calls(("a", {})), reply_text("done")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a])
    await agent.wait_idle()  # idle: returns at once
    idle_seen: list[bool] = []

    async def waiter() -> None:
        await agent.wait_idle()
        idle_seen.append(agent.is_running)

    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "go")
        await a.started.wait()
        tg.start_soon(waiter)
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert idle_seen == []
        assert agent.is_running
        a.gate.set()
        await agent.wait_idle()
        assert not agent.is_running
    assert idle_seen == [False, False]


async def test_reset_restores_the_initial_state() -> None:
    a, b = GateTool("a"), GateTool("b")
    initial: list[AgentMessage] = [UserMessage.from_text("seed")]
    stream = ScriptedStream([reply_tool_calls(("a", {})), reply_text("done")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a], system_prompt="orig", messages=initial)
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "go")
        await a.started.wait()
        with pytest.raises(AlreadyRunning):
            agent.reset()
        a.gate.set()
    agent.set_system_prompt("changed")
    agent.set_model(ModelSpec(provider="other", model_id="x"))
    agent.add_tool(b)
    agent.set_plan_mode(True)
    agent.steer("s")
    agent.follow_up("f")
    agent.reset()
    assert agent.messages == initial
    assert agent.system_prompt == "orig"
    assert agent.model == MODEL
    assert agent.tools == [a]
    assert not agent.plan_mode
    assert not agent.has_queued_messages()
    assert agent.last_error is None


# --------------------------------------------------------------------------- observable state


async def test_last_error_and_on_message() -> None:
    committed: list[AgentMessage] = []
    stream = ScriptedStream([reply_error(ErrorKind.AUTH, "bad key")])
    agent = Agent(model=MODEL, stream_fn=stream, on_message=committed.append)
    result = await agent.prompt("go", raise_on_error=False)
    assert result.stop_reason is StopReason.ERROR
    assert agent.last_error is not None
    assert "bad key" in agent.last_error
    assert committed == agent.messages
    assert [type(m) for m in committed] == [UserMessage, AssistantMessage]


# --------------------------------------------------------------------------- state setters


def recorder() -> FunctionStream:
    return FunctionStream(lambda context: reply_text("ok"))


async def test_state_setters_shape_the_next_request() -> None:
    @tool
    def alpha(x: int) -> int:
        """First tool."""
        return x

    @tool
    def beta(y: str) -> str:
        """Second tool."""
        return y

    stream = recorder()
    agent = Agent(model=MODEL, stream_fn=stream, system_prompt="one", tools=[alpha])
    await agent.prompt("first")
    first = stream.calls[-1]
    assert first.context.system_prompt == "one"
    assert [t.name for t in first.context.tools] == ["alpha"]
    assert first.model == MODEL

    agent.set_system_prompt("two")
    other = ModelSpec(provider="fake", model_id="fake-2")
    agent.set_model(other)
    agent.set_thinking_level(ThinkingLevel.HIGH)
    agent.add_tool(beta)
    await agent.prompt("second")
    second = stream.calls[-1]
    assert second.context.system_prompt == "two"
    assert [t.name for t in second.context.tools] == ["alpha", "beta"]
    assert second.model.model_id == "fake-2"
    assert second.model.thinking_level is ThinkingLevel.HIGH
    assert second.context.tools[1].parameters["properties"]["y"]["type"] == "string"

    assert agent.remove_tool("alpha")
    assert not agent.remove_tool("alpha")
    await agent.prompt("third")
    assert [t.name for t in stream.calls[-1].context.tools] == ["beta"]

    agent.set_tools([alpha])
    assert [t.name for t in agent.tools] == ["alpha"]


async def test_history_setters() -> None:
    stream = recorder()
    agent = Agent(model=MODEL, stream_fn=stream)
    replacement: list[AgentMessage] = [
        UserMessage.from_text("r1"),
        AssistantMessage(content=[Text(text="a1")]),
    ]
    agent.replace_messages(replacement)
    assert agent.messages == replacement
    agent.append_messages([UserMessage.from_text("r2")])
    result = await agent.continue_run()
    assert result.text == "ok"
    assert [len(c.context.messages) for c in stream.calls] == [3]
    # ``messages`` is a copy: changing it does not change the agent.
    agent.messages.clear()
    assert len(agent.messages) == 4
    agent.clear_messages()
    assert agent.messages == []
    await agent.prompt("fresh")
    assert len(stream.calls[-1].context.messages) == 1


async def test_plan_mode_offers_only_read_only_tools_and_asks_for_a_plan() -> None:
    read = GateTool("read", read_only=True)

    @tool(read_only=True)
    def search(query: str) -> str:
        """Search."""
        return query

    write = GateTool("write")
    stream = recorder()
    agent = Agent(model=MODEL, stream_fn=stream, system_prompt="You code.", tools=[read, write])
    agent.add_tool(search)
    agent.set_plan_mode(True)
    await agent.prompt("plan it")
    planned = stream.calls[-1].context
    assert [t.name for t in planned.tools] == ["read", "search"]
    assert planned.system_prompt.startswith("You code.")
    assert PLAN_MODE_INSTRUCTION in planned.system_prompt
    # Plan mode restricts what the model is offered, not what the agent holds.
    assert [t.name for t in agent.tools] == ["read", "write", "search"]

    agent.set_plan_mode(False)
    await agent.prompt("do it")
    normal = stream.calls[-1].context
    assert [t.name for t in normal.tools] == ["read", "write", "search"]
    assert normal.system_prompt == "You code."


async def test_an_agents_runs_share_its_tool_schemas_until_its_tools_change() -> None:
    # The schemas an agent offers are made once for its tools, not per run; a tool added,
    # removed, replaced or described anew is offered as it is from the next run on.
    offered: list[list[Any]] = []

    def answer(context: LlmContext) -> Any:
        offered.append(context.tools)
        return reply_text("ok")

    @tool
    def search(query: str) -> str:
        """Search."""
        return query

    read = GateTool("read", read_only=True)
    agent = Agent(model=MODEL, stream_fn=FunctionStream(answer), tools=[read])

    async def names() -> list[str]:
        await agent.prompt("go")
        return [t.name for t in offered[-1]]

    assert await names() == ["read"]
    assert await names() == ["read"]
    assert offered[1] is offered[0]
    agent.add_tool(search)
    assert await names() == ["read", "search"]
    assert await names() == ["read", "search"]
    assert offered[3] is offered[2]
    search.description = "Search the web."
    assert await names() == ["read", "search"]
    assert offered[4] is not offered[3]
    assert offered[4][1].description == "Search the web."
    read.parameters = {"type": "object", "properties": {"path": {"type": "string"}}}
    assert await names() == ["read", "search"]
    assert offered[5][0].parameters is read.parameters
    agent.remove_tool("read")
    assert await names() == ["search"]
    agent.set_tools([read])
    assert await names() == ["read"]
    agent.set_plan_mode(True)
    agent.add_tool(search)  # not read-only: hidden in plan mode
    assert await names() == ["read"]
    agent.set_plan_mode(False)
    assert await names() == ["read", "search"]
    agent.reset()
    assert await names() == ["read"]


async def test_plan_mode_refuses_a_call_to_a_hidden_tool() -> None:
    write = GateTool("write")
    write.gate.set()
    stream = ScriptedStream([reply_tool_calls(("write", {})), reply_text("planned")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[write])
    agent.set_plan_mode(True)
    result = await agent.prompt("plan")
    assert result.text == "planned"
    assert not write.started.is_set()
    refused = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert len(refused) == 1
    assert refused[0].is_error
    assert "unknown tool" in refused[0].text


async def test_a_raising_on_message_hook_is_reported_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Regression: the hook ran inside the event dispatch; its exception skipped the
    # subscribers' fan-out of that MessageEnd and ended the run in an error, leaving the
    # assistant's tool call without a result.
    a = GateTool("a")
    a.gate.set()
    persisted: list[AgentMessage] = []

    def persist(message: AgentMessage) -> None:
        persisted.append(message)
        if isinstance(message, AssistantMessage) and message.tool_calls:
            raise OSError("disk full")

    stream = ScriptedStream([reply_tool_calls(("a", {})), reply_text("done")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a], on_message=persist)
    ends: list[AgentMessage] = []
    agent.subscribe(lambda e: ends.append(e.message) if isinstance(e, MessageEnd) else None)
    with caplog.at_level(logging.ERROR, logger="agentloop"):
        result = await agent.prompt("go")
    assert result.stop_reason is StopReason.STOP
    assert result.text == "done"
    assert ends == agent.messages == persisted
    assert_well_paired(agent.messages)
    assert any("on_message" in r.getMessage() for r in caplog.records)


async def test_cancelling_the_caller_ends_the_run_cleanly_and_propagates() -> None:
    a, b = GateTool("a"), GateTool("b")
    stream = ScriptedStream([two_calls(), reply_text("later")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a, b])
    events: list[AgentEvent] = []
    agent.subscribe(events.append)
    finished: list[bool] = []

    async def caller() -> None:
        try:
            await agent.prompt("go")
        except anyio.get_cancelled_exc_class():
            finished.append(agent.is_running)
            raise

    async with anyio.create_task_group() as tg:
        tg.start_soon(caller)
        await a.started.wait()
        await b.started.wait()
        tg.cancel_scope.cancel()
    assert finished == [False]  # the cancellation reached the caller, after the release
    assert a.cancelled
    assert b.cancelled
    assert isinstance(events[-1], AgentEnd)
    assert_well_paired(agent.messages)
    assert (await agent.prompt("again")).text == "later"
