"""Agent: checkpoints, pause at a turn boundary, and restore into a fresh agent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest

import agentloop
from agentloop import (
    Agent,
    AgentEvent,
    AgentMessage,
    AgentToolResult,
    AssistantMessage,
    Checkpoint,
    CustomMessage,
    LlmMessage,
    ModelSpec,
    Pricing,
    StopReason,
    Text,
    Tool,
    ToolCall,
    ToolExecutionEnd,
    ToolExecutionStart,
    Usage,
    UserMessage,
)
from agentloop.policy import CONTINUE, PolicyContext, PolicyVerdict
from agentloop.testing import ScriptedStream, ScriptItem, reply_text, reply_tool_calls

if TYPE_CHECKING:
    from agentloop.abc import OnUpdate

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="fake", model_id="fake-1", pricing=Pricing(input=1.0, output=2.0))
STEERING_CANCELLED = "tool call cancelled: user requested steering interrupt"


class Note(CustomMessage, frozen=True, tag="note"):
    text: str


def convert(message: AgentMessage) -> LlmMessage | None:
    if isinstance(message, Note):
        return UserMessage.from_text(f"[note] {message.text}")
    return None if isinstance(message, CustomMessage) else message


class GateTool(Tool):
    """A tool that runs until its gate opens (or at once with ``open_gate``)."""

    def __init__(self, name: str, *, open_gate: bool = False) -> None:
        self.name = name
        self.label = name
        self.description = f"the {name} tool"
        self.parameters = {"type": "object", "properties": {}}
        self.started = anyio.Event()
        self.gate = anyio.Event()
        if open_gate:
            self.gate.set()

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        self.started.set()
        await self.gate.wait()
        return AgentToolResult.text(f"{self.name} result")


def usage(n: int) -> Usage:
    return Usage(input=100 * n, output=10 * n, total=110 * n)


def script() -> list[ScriptItem]:
    return [
        reply_tool_calls(
            ToolCall(id="a1", name="a", arguments={}),
            ToolCall(id="b1", name="b", arguments={}),
            text="Let me look.",
            usage=usage(1),
        ),
        reply_text("after steering", usage=usage(2)),
        reply_tool_calls(ToolCall(id="c1", name="c", arguments={}), usage=usage(3)),
        reply_text("final answer", usage=usage(4)),
    ]


def comparable(messages: list[AgentMessage]) -> list[Any]:
    """The messages as plain data, without their timestamps."""
    out = []
    for message in messages:
        data = msgspec.to_builtins(message)
        data.pop("timestamp", None)
        out.append(data)
    return out


def round_trip(checkpoint: Checkpoint) -> Checkpoint:
    data = agentloop.encode(checkpoint)
    assert isinstance(data, bytes)
    msgspec.json.decode(data)  # plain JSON
    restored: Checkpoint = agentloop.decode(data, Checkpoint)
    assert restored == checkpoint
    return restored


async def start_batch(agent: Agent, a: GateTool, b: GateTool, tg: Any) -> None:
    tg.start_soon(agent.prompt, "first question")
    await a.started.wait()
    await b.started.wait()


async def uninterrupted() -> tuple[Agent, ScriptedStream]:
    a, b, c = GateTool("a"), GateTool("b"), GateTool("c", open_gate=True)
    stream = ScriptedStream(script())
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a, b, c], convert_to_llm=convert)
    agent.append_messages([Note(text="context for the model")])
    async with anyio.create_task_group() as tg:
        await start_batch(agent, a, b, tg)
        agent.steer("use a only")
        a.gate.set()
    await agent.prompt("second question")
    return agent, stream


async def test_pause_checkpoint_restore_continues_to_the_same_history() -> None:
    reference, reference_stream = await uninterrupted()

    a, b, c = GateTool("a"), GateTool("b"), GateTool("c", open_gate=True)
    stream = ScriptedStream(script())
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a, b, c], convert_to_llm=convert)
    agent.append_messages([Note(text="context for the model")])
    checkpoints: list[Checkpoint] = []

    async def pause() -> None:
        checkpoints.append(await agent.pause())

    async with anyio.create_task_group() as tg:
        await start_batch(agent, a, b, tg)
        tg.start_soon(pause)
        await anyio.wait_all_tasks_blocked()
        assert checkpoints == []  # waits for the turn to end
        agent.steer("use a only")  # interrupts b, and must survive the pause
        a.gate.set()
    (checkpoint,) = checkpoints
    assert not agent.is_running
    assert len(stream.calls) == 1
    # The checkpoint sits at a turn boundary: every call has its result, and the steering
    # message the batch took is committed (the paused run will not send it, but keeps it).
    assert [type(m).__name__ for m in checkpoint.messages] == [
        "Note",
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "ToolResultMessage",
        "UserMessage",
    ]
    assert comparable(checkpoint.messages[-1:]) == comparable([UserMessage.from_text("use a only")])
    assert checkpoint.steering == []
    assert checkpoint.tool_names == ["a", "b", "c"]
    assert checkpoint.usage == usage(1)

    a2, b2, c2 = GateTool("a"), GateTool("b"), GateTool("c", open_gate=True)
    stream2 = ScriptedStream(script()[1:])
    restored = Agent.from_checkpoint(
        round_trip(checkpoint),
        tools=[c2, b2, a2],
        stream_fn=stream2,
        convert_to_llm=convert,
    )
    assert [t.name for t in restored.tools] == ["a", "b", "c"]
    result = await restored.continue_run()
    assert result.text == "after steering"
    await restored.prompt("second question")

    assert comparable(restored.messages) == comparable(reference.messages)
    assert restored.usage == reference.usage == usage(1) + usage(2) + usage(3) + usage(4)
    assert restored.cost.total == pytest.approx(reference.cost.total)
    assert restored.cost.total > 0
    # The model saw the same requests after the restore as without it.
    assert [comparable(list(c.context.messages)) for c in stream2.calls] == [
        comparable(list(c.context.messages)) for c in reference_stream.calls[1:]
    ]


async def test_checkpoint_between_prompts_with_queued_messages() -> None:
    def make(stream: ScriptedStream) -> Agent:
        return Agent(model=MODEL, stream_fn=stream, system_prompt="sys")

    replies: list[ScriptItem] = [reply_text("one"), reply_text("two"), reply_text("three")]
    reference = make(ScriptedStream(replies))
    await reference.prompt("q1")
    reference.follow_up("later")
    await reference.prompt("q2")

    agent = make(ScriptedStream(replies[:1]))
    await agent.prompt("q1")
    agent.follow_up("later")
    agent.set_plan_mode(True)
    checkpoint = round_trip(agent.checkpoint())
    assert checkpoint.system_prompt == "sys"
    assert checkpoint.model == MODEL
    assert checkpoint.plan_mode
    assert comparable(checkpoint.follow_up) == comparable([UserMessage.from_text("later")])

    restored = Agent.from_checkpoint(checkpoint, stream_fn=ScriptedStream(replies[1:]))
    assert restored.plan_mode
    assert restored.queued_follow_up == checkpoint.follow_up
    restored.set_plan_mode(False)
    await restored.prompt("q2")
    assert comparable(restored.messages) == comparable(reference.messages)
    last = restored.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.content == [Text(text="three")]


async def test_restore_needs_every_named_tool() -> None:
    a = GateTool("a")
    agent = Agent(model=MODEL, stream_fn=ScriptedStream([]), tools=[a])
    with pytest.raises(ValueError, match="a"):
        Agent.from_checkpoint(agent.checkpoint(), tools=[], stream_fn=ScriptedStream([]))


async def test_pause_while_idle_returns_a_checkpoint_at_once() -> None:
    agent = Agent(model=MODEL, stream_fn=ScriptedStream([reply_text("hi")]))
    await agent.prompt("hello")
    checkpoint = await agent.pause()
    assert comparable(checkpoint.messages) == comparable(agent.messages)
    # A pause asked while idle does not stop the next run.
    agent.stream_fn = ScriptedStream([reply_tool_calls(("x", {})), reply_text("done")])
    result = await agent.prompt("again")
    assert result.text == "done"
    assert result.stopped_by is None


async def test_request_pause_from_a_tool_stops_at_the_turn_boundary() -> None:
    agent: Agent

    class PausingTool(GateTool):
        async def execute(
            self, call_id: str, arguments: Any, on_update: OnUpdate
        ) -> AgentToolResult:
            assert agent.pause_nowait()
            return AgentToolResult.text("paused here")

    stream = ScriptedStream([reply_tool_calls(("p", {})), reply_text("resumed")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[PausingTool("p")])
    result = await agent.prompt("go")
    assert result.stopped_by is not None
    assert "pause" in result.stopped_by
    assert result.stop_reason is StopReason.TOOL_USE
    assert len(stream.calls) == 1
    checkpoint = round_trip(agent.checkpoint())
    restored = Agent.from_checkpoint(
        checkpoint, tools=[PausingTool("p")], stream_fn=ScriptedStream([reply_text("resumed")])
    )
    assert (await restored.continue_run()).text == "resumed"
    assert not agent.pause_nowait()  # idle: nothing to pause


async def test_request_pause_from_a_subscriber() -> None:
    a = GateTool("a", open_gate=True)
    stream = ScriptedStream([reply_tool_calls(("a", {})), reply_text("never")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a])

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionEnd):
            agent.pause_nowait()

    agent.subscribe(on_event)
    result = await agent.prompt("go")
    assert result.stopped_by is not None
    assert len(stream.calls) == 1
    assert isinstance(agent.messages[-2], AssistantMessage)


async def test_request_pause_from_a_post_turn_policy_stops_at_that_turn() -> None:
    # The agent's own pause policy joins the run's post-turn policies only once a pause is
    # asked; asked by a post-turn policy, it is still evaluated in the same turn.
    a = GateTool("a", open_gate=True)
    stream = ScriptedStream(
        [reply_tool_calls(("a", {})), reply_tool_calls(("a", {})), reply_text("never")]
    )
    agent: Agent
    seen: list[int] = []
    pausing = [True]  # in the first run only

    class PauseOnSecondTurn:
        name = "pause-on-2"

        def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
            seen.append(ctx.turn)
            if pausing[0] and len(seen) == 2:
                assert agent.pause_nowait()
                assert agent.pause_nowait()  # asked twice: one pause
            return CONTINUE

    agent = Agent(
        model=MODEL, stream_fn=stream, tools=[a], post_turn_policies=[PauseOnSecondTurn()]
    )
    result = await agent.prompt("go")
    assert result.stopped_by == "pause: paused"
    assert len(stream.calls) == 2
    assert len(seen) == 2

    # The pause was this run's: the next one runs to its end.
    agent.stream_fn = ScriptedStream([reply_tool_calls(("a", {})), reply_text("done")])
    seen.clear()
    pausing[0] = False
    result = await agent.prompt("again")
    assert result.text == "done"
    assert result.stopped_by is None
    assert len(seen) == 2


async def test_pause_awaited_inside_the_run_is_a_clear_error() -> None:
    # Awaiting pause() from a tool would wait for the very turn the tool is part of.
    agent: Agent
    errors: list[BaseException] = []

    class AwaitsPause(GateTool):
        async def execute(
            self, call_id: str, arguments: Any, on_update: OnUpdate
        ) -> AgentToolResult:
            try:
                await agent.pause()
            except RuntimeError as exc:
                errors.append(exc)
                raise
            return AgentToolResult.text("unreachable")

    stream = ScriptedStream([reply_tool_calls(("p", {})), reply_text("done")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[AwaitsPause("p")])
    with anyio.fail_after(30):  # a hang bound: before the fix this deadlocked
        result = await agent.prompt("go")
    assert result.text == "done"
    (error,) = errors
    assert "pause_nowait" in str(error)


async def test_pause_from_the_stream_body_is_a_clear_error_and_pause_nowait_works() -> None:
    # The body of ``async with agent.stream(...)`` drains the run's events: awaiting pause()
    # there could stall the run on backpressure while pause() waits for it.
    a = GateTool("a")
    stream = ScriptedStream([reply_tool_calls(("a", {})), reply_text("never")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[a])
    async with agent.stream("go") as events:
        async for event in events:
            if isinstance(event, ToolExecutionStart):
                with pytest.raises(RuntimeError, match="pause_nowait"):
                    await agent.pause()
                assert agent.pause_nowait()
                a.gate.set()  # the turn can end only now, with the pause asked
    assert events.result.stopped_by is not None
    assert len(stream.calls) == 1
    # Outside the body again, pause() works (idle: at once).
    checkpoint = await agent.pause()
    assert len(checkpoint.messages) == 3
