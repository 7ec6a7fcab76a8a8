"""Agent: steering and follow-up queues, their delivery modes, and clearing them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import pytest

from agentloop import (
    Agent,
    AgentEvent,
    AgentMessage,
    AgentToolResult,
    ModelSpec,
    StopReason,
    Text,
    Tool,
    ToolCall,
    ToolExecutionStart,
    ToolResultMessage,
    TurnEnd,
    TurnEndReason,
    UserMessage,
)
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.policy import PolicyContext, PolicyVerdict, Stop
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

if TYPE_CHECKING:
    from agentloop.abc import OnUpdate
    from agentloop.stream import LlmContext

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="fake", model_id="fake-1")
STEERING_CANCELLED = "tool call cancelled: user requested steering interrupt"


class GateTool(Tool):
    """A tool that runs until the test opens its gate; records whether it was cancelled."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.label = name
        self.description = f"the {name} tool"
        self.parameters = {"type": "object", "properties": {}}
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


def user_texts(context: LlmContext) -> list[str]:
    return [
        "".join(b.text for b in m.content if isinstance(b, Text))
        for m in context.messages
        if isinstance(m, UserMessage)
    ]


def user_texts_of(message: Any) -> str:
    return "".join(b.text for b in message.content if isinstance(b, Text))


def new_user_texts(stream: ScriptedStream) -> list[list[str]]:
    """For each model call, the user messages it saw that the previous call had not."""
    out: list[list[str]] = []
    seen = 0
    for call in stream.calls:
        texts = user_texts(call.context)
        out.append(texts[seen:])
        seen = len(texts)
    return out


def two_calls() -> Any:
    return reply_tool_calls(
        ToolCall(id="a1", name="a", arguments={}), ToolCall(id="b1", name="b", arguments={})
    )


async def run_steered(mode: Any) -> tuple[Agent, ScriptedStream, list[AgentEvent]]:
    """Queue three steering messages while tools a and b both run, then let a finish."""
    a, b = GateTool("a"), GateTool("b")
    stream = ScriptedStream([two_calls(), reply_text("r1"), reply_text("r2"), reply_text("r3")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a, b], steering_mode=mode)
    events: list[AgentEvent] = []
    agent.subscribe(events.append)
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "start")
        await a.started.wait()
        await b.started.wait()
        for text in ("s1", "s2", "s3"):
            agent.steer(text)
        assert agent.has_queued_messages()
        a.gate.set()
    assert b.cancelled
    assert not a.cancelled
    return agent, stream, events


# LOOP BUG: in one-at-a-time mode the turn that was interrupted by steering delivers two
# steering messages: the batch takes s1 (after tool a ends) and then ``_Run._turns``
# (agentloop/_loop.py) polls the steering source again after that same turn and takes s2, so
# the model's second call sees ["s1", "s2"]. The seed's flow (agent-loop.md, and pi's loop)
# polls at the turn end only when the batch brought no steering of its own: one message per
# turn. Suggested fix: in ``_turns``, skip the poll after a turn whose batch took steering.
async def test_steering_one_at_a_time_delivers_one_message_per_turn() -> None:
    agent, stream, events = await run_steered("one_at_a_time")
    assert new_user_texts(stream) == [["start"], ["s1"], ["s2"], ["s3"]]
    turn_ends = [e for e in events if isinstance(e, TurnEnd)]
    assert [t.reason for t in turn_ends] == [
        TurnEndReason.STEERING_INTERRUPT,
        TurnEndReason.COMPLETE,
        TurnEndReason.COMPLETE,
        TurnEndReason.COMPLETE,
    ]
    # a finished, b was interrupted; both calls have results, in call order.
    results = turn_ends[0].tool_results
    assert [(r.tool_call_id, r.is_error, r.text) for r in results] == [
        ("a1", False, "a done"),
        ("b1", True, STEERING_CANCELLED),
    ]
    assert not agent.has_queued_messages()
    assert [user_texts_of(m) for m in agent.messages[-1:]] == ["r3"]


async def test_steering_all_delivers_every_queued_message_at_once() -> None:
    agent, stream, events = await run_steered("all")
    assert new_user_texts(stream) == [["start"], ["s1", "s2", "s3"]]
    assert [t.reason for t in events if isinstance(t, TurnEnd)] == [
        TurnEndReason.STEERING_INTERRUPT,
        TurnEndReason.COMPLETE,
    ]
    assert stream.remaining == 2
    assert not agent.has_queued_messages()


async def test_steering_from_another_thread() -> None:
    a, b = GateTool("a"), GateTool("b")
    stream = ScriptedStream([two_calls(), reply_text("ok")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a, b])
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "start")
        await a.started.wait()
        await b.started.wait()
        await anyio.to_thread.run_sync(agent.steer, "from a thread")
        b.gate.set()
    assert a.cancelled
    assert new_user_texts(stream) == [["start"], ["from a thread"]]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("one_at_a_time", [["start"], ["f1"], ["f2"]]),
        ("all", [["start"], ["f1", "f2"]]),
    ],
)
async def test_follow_ups_keep_the_run_going(mode: Any, expected: list[list[str]]) -> None:
    stream = ScriptedStream([reply_text("r0"), reply_text("r1"), reply_text("r2")])
    agent = Agent(model=MODEL, stream_fn=stream, follow_up_mode=mode)
    agent.follow_up("f1")
    agent.follow_up(UserMessage.from_text("f2"))
    assert [user_texts_of(m) for m in agent.queued_follow_up] == ["f1", "f2"]
    result = await agent.prompt("start")
    assert new_user_texts(stream) == expected
    assert result.text == f"r{len(expected) - 1}"
    assert agent.queued_follow_up == []


async def test_follow_up_queued_during_the_run_is_delivered_at_the_end() -> None:
    gate = GateTool("a")
    stream = ScriptedStream(
        [
            reply_tool_calls(ToolCall(id="a1", name="a", arguments={})),
            reply_text("r1"),
            reply_text("r2"),
        ]
    )
    agent = Agent(model=MODEL, stream_fn=stream, tools=[gate])
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "start")
        await gate.started.wait()
        agent.follow_up("afterwards")
        gate.gate.set()
    # A follow-up does not interrupt the tool batch; it comes after the model would stop.
    assert not gate.cancelled
    assert new_user_texts(stream) == [["start"], [], ["afterwards"]]
    assert isinstance(stream.calls[1].context.messages[-1], ToolResultMessage)


async def test_steering_taken_by_a_run_a_policy_stopped_is_not_lost() -> None:
    # The batch takes a steering message, then a post-turn policy ends the run before the
    # next turn could send it: it is committed to the history, the rest stays queued.
    class StopAfterFirstTurn:
        name = "stop_after_first_turn"

        def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
            return Stop(reason="enough")

    a, b = GateTool("a"), GateTool("b")
    stream = ScriptedStream([two_calls(), reply_text("steered 1"), reply_text("steered 2")])
    agent = Agent(
        model=MODEL, stream_fn=stream, tools=[a, b], post_turn_policies=[StopAfterFirstTurn()]
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "start")
        await a.started.wait()
        await b.started.wait()
        agent.steer("first")
        agent.steer("second")
        a.gate.set()
    assert b.cancelled
    assert len(stream.calls) == 1
    assert user_texts_of(agent.messages[-1]) == "first"
    assert [user_texts_of(m) for m in agent.queued_steering] == ["second"]
    # A continue sends both, in order, as the stopped run would have.
    agent.post_turn_policies.clear()
    result = await agent.continue_run()
    assert result.text == "steered 2"
    assert new_user_texts(stream) == [["start"], ["first"], ["second"]]
    assert not agent.has_queued_messages()


async def test_clearing_queues() -> None:
    stream = ScriptedStream([reply_text("only")])
    agent = Agent(model=MODEL, stream_fn=stream)
    assert not agent.has_queued_messages()
    agent.steer("s")
    assert agent.has_queued_messages()
    agent.clear_steering()
    assert not agent.has_queued_messages()
    agent.follow_up("f")
    assert agent.has_queued_messages()
    agent.clear_follow_up()
    assert not agent.has_queued_messages()
    agent.steer("s")
    agent.follow_up("f")
    agent.clear_queues()
    assert not agent.has_queued_messages()
    assert agent.queued_steering == []
    assert agent.queued_follow_up == []
    result = await agent.prompt("start")
    # Nothing cleared reached the model.
    assert new_user_texts(stream) == [["start"]]
    assert result.text == "only"


async def test_abort_never_consumes_a_queued_steering_message() -> None:
    # The abort arrives as the first call starts; that call finishes without a checkpoint, so
    # its task goes on to poll steering before the cancellation reaches it. The steering
    # message must not be taken by a run that is being cancelled (or, if taken, committed).
    class Instant(Tool):
        name = "instant"
        label = "instant"
        description = "returns at once"

        async def execute(
            self, call_id: str, arguments: Any, on_update: OnUpdate
        ) -> AgentToolResult:
            return AgentToolResult.text("done")

    stream = ScriptedStream([reply_tool_calls(("instant", {}), ("instant", {}))])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[Instant()])

    def abort_on_start(event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionStart):
            agent.abort()

    agent.subscribe(abort_on_start)
    agent.steer("keep me")
    result = await agent.prompt("go", raise_on_error=False)
    assert result.stop_reason is StopReason.ABORTED
    in_history = [m for m in agent.messages if isinstance(m, UserMessage)]
    texts = [user_texts_of(m) for m in in_history] + [
        user_texts_of(m) for m in agent.queued_steering
    ]
    assert texts.count("keep me") == 1


# LOOP BUG: the same abort as above, through ``run_loop`` with a plain steering source: after
# the abort, the task of a call that finished without a checkpoint still runs
# ``Batch._poll_steering`` (agentloop/_dispatch.py, reached from ``_run_call``), which takes
# the message; the cancellation then unwinds ``_turn_body`` before ``run.pending`` receives
# ``batch.steering``, so ``flush_pending`` never sees it and the message is lost (neither in the
# history nor left in the source). The Agent's own source now refuses to hand out messages to a
# cancelled run, which hides this for agents. Suggested fix: ``checkpoint_if_cancelled()`` at
# the top of ``Batch._poll_steering`` (as ``_turns`` does), and/or have ``close_turn`` move
# ``batch.steering`` into ``run.pending``. The conformance suite finds it too
# (tests/conformance/test_abort.py, entry "run_loop").
async def test_run_loop_abort_never_loses_a_polled_steering_message() -> None:
    class Instant(Tool):
        name = "instant"
        label = "instant"
        description = "returns at once"

        async def execute(
            self, call_id: str, arguments: Any, on_update: OnUpdate
        ) -> AgentToolResult:
            return AgentToolResult.text("done")

    queue: list[AgentMessage] = [UserMessage.from_text("keep me")]

    async def steering() -> list[AgentMessage]:
        taken = list(queue)
        queue.clear()
        return taken

    scope = anyio.CancelScope()

    def abort_on_start(event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionStart):
            scope.cancel()

    config = AgentLoopConfig(
        model=MODEL,
        stream_fn=ScriptedStream([reply_tool_calls(("instant", {}), ("instant", {}))]),
        tools=[Instant()],
        get_steering_messages=steering,
    )
    result = await run_loop(
        [UserMessage.from_text("go")],
        AgentContext(),
        config,
        on_event=abort_on_start,
        cancel_scope=scope,
    )
    assert result.stop_reason is StopReason.ABORTED
    committed = [user_texts_of(m) for m in result.messages if isinstance(m, UserMessage)]
    left = [user_texts_of(m) for m in queue]
    assert (committed + left).count("keep me") == 1
