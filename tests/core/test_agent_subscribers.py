"""Agent: subscribers — fan-out order, mid-run registration, unsubscribing, failures."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from agentloop import (
    Agent,
    AgentEnd,
    AgentEvent,
    AgentStart,
    AgentToolResult,
    MessageEnd,
    MessageUpdate,
    ModelSpec,
    StopReason,
    Tool,
    ToolExecutionEnd,
    ToolExecutionStart,
    TurnEnd,
    TurnStart,
)
from agentloop.stream import TextDelta
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop.abc import OnUpdate

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="fake", model_id="fake-1")


class EchoTool(Tool):
    name = "echo"
    label = "echo"
    description = "echo"

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        return AgentToolResult.text("echoed")


def make_agent() -> Agent:
    stream = ScriptedStream([reply_tool_calls(("echo", {})), reply_text("done")])
    return Agent(model=MODEL, stream_fn=stream, tools=[EchoTool()])


async def test_fan_out_in_registration_order_before_the_loop_proceeds() -> None:
    agent = make_agent()
    log: list[tuple[str, AgentEvent]] = []

    def recorder(name: str) -> Callable[[AgentEvent], None]:
        return lambda event: log.append((name, event))

    for name in ("first", "second", "third"):
        agent.subscribe(recorder(name))
    result = await agent.prompt("go")
    assert result.stop_reason is StopReason.STOP
    # Each event reached the three subscribers in order, before the next event was emitted.
    assert len(log) % 3 == 0
    for i in range(0, len(log), 3):
        names = [name for name, _ in log[i : i + 3]]
        events = {id(event) for _, event in log[i : i + 3]}
        assert names == ["first", "second", "third"]
        assert len(events) == 1
    kinds = [type(event) for name, event in log if name == "first"]
    assert kinds[0] is AgentStart
    assert kinds[-1] is AgentEnd


async def test_subscribers_are_synchronous_with_the_history() -> None:
    # A subscriber sees a MessageEnd when the message is already in the agent's history.
    agent = make_agent()
    checked: list[bool] = []

    def check(event: AgentEvent) -> None:
        if isinstance(event, MessageEnd):
            checked.append(agent.messages[-1] is event.message)

    agent.subscribe(check)
    await agent.prompt("go")
    assert checked
    assert all(checked)


async def test_a_subscriber_added_mid_run_sees_events_from_then_on() -> None:
    agent = make_agent()
    everything: list[AgentEvent] = []
    late: list[AgentEvent] = []

    def first(event: AgentEvent) -> None:
        everything.append(event)
        if isinstance(event, ToolExecutionStart):
            agent.subscribe(late.append)

    agent.subscribe(first)
    await agent.prompt("go")
    start = next(i for i, e in enumerate(everything) if isinstance(e, ToolExecutionStart))
    assert late == everything[start + 1 :]
    assert isinstance(late[-1], AgentEnd)


async def test_a_subscriber_added_from_another_task_mid_run() -> None:
    gate = anyio.Event()
    started = anyio.Event()

    class GateTool(EchoTool):
        async def execute(
            self, call_id: str, arguments: Any, on_update: OnUpdate
        ) -> AgentToolResult:
            started.set()
            await gate.wait()
            return AgentToolResult.text("done")

    stream = ScriptedStream([reply_tool_calls(("echo", {})), reply_text("done")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[GateTool()])
    late: list[AgentEvent] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "go")
        await started.wait()
        agent.subscribe(late.append)
        gate.set()
    # The first event it saw is the end of the call that was running when it subscribed.
    assert isinstance(late[0], ToolExecutionEnd)
    kinds = [type(e) for e in late if isinstance(e, (AgentStart, TurnStart, TurnEnd, AgentEnd))]
    assert kinds == [TurnEnd, TurnStart, TurnEnd, AgentEnd]


async def test_unsubscribing_inside_a_callback_takes_effect_after_the_dispatch() -> None:
    agent = make_agent()
    a_seen: list[AgentEvent] = []
    b_seen: list[AgentEvent] = []
    c_seen: list[AgentEvent] = []
    handles: dict[str, int] = {}

    def a(event: AgentEvent) -> None:
        a_seen.append(event)
        if isinstance(event, TurnStart):
            # Remove itself and a subscriber that comes later in this same dispatch.
            assert agent.unsubscribe(handles["a"])
            assert agent.unsubscribe(handles["b"])

    handles["a"] = agent.subscribe(a)
    handles["b"] = agent.subscribe(b_seen.append)
    handles["c"] = agent.subscribe(c_seen.append)
    await agent.prompt("go")
    first_turn = next(i for i, e in enumerate(c_seen) if isinstance(e, TurnStart))
    # Both still received the event being dispatched, and nothing after it.
    assert a_seen == c_seen[: first_turn + 1]
    assert b_seen == c_seen[: first_turn + 1]
    assert isinstance(c_seen[-1], AgentEnd)
    assert not agent.unsubscribe(handles["a"])


async def test_a_raising_subscriber_is_removed_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = make_agent()
    calls: list[AgentEvent] = []
    good: list[AgentEvent] = []

    def flaky(event: AgentEvent) -> None:
        calls.append(event)
        if len(calls) == 3:
            raise ValueError("subscriber bug")

    agent.subscribe(flaky)
    agent.subscribe(good.append)
    with caplog.at_level(logging.ERROR, logger="agentloop"):
        result = await agent.prompt("go")
    assert result.stop_reason is StopReason.STOP
    assert result.text == "done"
    assert len(calls) == 3  # removed after the event it failed on
    assert calls == good[:3]  # the subscriber after it still got that event
    assert isinstance(good[-1], AgentEnd)
    assert any("subscriber" in r.getMessage() and r.exc_info for r in caplog.records)
    # Removed for good: a second run does not call it either.
    agent.stream_fn = ScriptedStream([reply_text("again")])
    await agent.prompt("again")
    assert len(calls) == 3
    assert isinstance(good[-1], AgentEnd)


async def test_a_subscriber_raising_on_a_streamed_token_is_removed_and_the_rest_stream_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Tokens take a path of their own (``Agent._on_update``): the same removal rules hold there.
    agent = Agent(model=MODEL, stream_fn=ScriptedStream([reply_text("one two three four")]))
    updates: list[AgentEvent] = []
    failed: list[AgentEvent] = []

    def flaky(event: AgentEvent) -> None:
        if isinstance(event, MessageUpdate):
            failed.append(event)
            raise ValueError("token bug")

    first = agent.subscribe(flaky)
    agent.subscribe(lambda e: updates.append(e) if isinstance(e, MessageUpdate) else None)
    with caplog.at_level(logging.ERROR, logger="agentloop"):
        result = await agent.prompt("go")
    assert result.text == "one two three four"
    assert len(failed) == 1  # removed at its first token
    assert not agent.unsubscribe(first)  # by its own handle
    assert len(updates) > 1 and failed[0] is updates[0]  # the other one saw every token
    assert any("subscriber" in r.getMessage() and r.exc_info for r in caplog.records)


def _tokens(events: list[AgentEvent]) -> str:
    return "".join(
        e.event.delta
        for e in events
        if isinstance(e, MessageUpdate) and isinstance(e.event, TextDelta)
    )


async def test_the_only_subscriber_raising_on_a_streamed_token_is_removed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A lone subscriber is handed each token with no call in between: the loop catches what
    # it raises, and the agent unsubscribes it.
    answer = "a long answer, streamed in several tokens"
    agent = Agent(model=MODEL, stream_fn=ScriptedStream([reply_text(answer)]))
    seen: list[AgentEvent] = []

    def flaky(event: AgentEvent) -> None:
        seen.append(event)
        if isinstance(event, MessageUpdate) and isinstance(event.event, TextDelta):
            raise ValueError("token bug")

    handle = agent.subscribe(flaky)
    with caplog.at_level(logging.ERROR, logger="agentloop"):
        result = await agent.prompt("go")
    assert result.text == answer
    assert result.stop_reason is StopReason.STOP
    assert isinstance(seen[-1], MessageUpdate) and isinstance(seen[-1].event, TextDelta)
    assert not agent.unsubscribe(handle)  # already gone
    assert any("token bug" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


async def test_subscribers_joining_and_leaving_mid_answer_see_the_tokens_in_between() -> None:
    answer = "".join(f"{i:02d}" for i in range(40))  # 10 tokens of 8 characters
    agent = Agent(model=MODEL, stream_fn=ScriptedStream([reply_text(answer)]))
    first: list[AgentEvent] = []
    second: list[AgentEvent] = []
    handles: dict[str, int] = {}

    def one(event: AgentEvent) -> None:
        first.append(event)
        tokens = len(_tokens(first)) // 8
        if tokens == 3 and "two" not in handles:
            handles["two"] = agent.subscribe(second.append)  # from one alone to both
        elif tokens == 6 and "one" in handles:
            agent.unsubscribe(handles.pop("one"))  # from both to the second alone

    handles["one"] = agent.subscribe(one)
    result = await agent.prompt("go")
    assert result.text == answer
    assert _tokens(first) == answer[:48]
    assert _tokens(second) == answer[24:]
    assert isinstance(second[-1], AgentEnd)
