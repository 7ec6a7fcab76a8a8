"""The trajectory collector: turns, tool calls, usage, cost, timing, and sub-agents nested."""

from __future__ import annotations

import anyio
import msgspec
import pytest

import agentloop as al
from agentloop import multi
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.testing import (
    FunctionStream,
    ScriptedStream,
    reply_error,
    reply_text,
    reply_tool_calls,
)
from agentloop_eval import Trajectory, TrajectoryCollector

from ._helpers import MODEL, get_weather

pytestmark = pytest.mark.anyio


class Ticks:
    """A clock that moves one second per reading."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


async def test_a_run_with_a_tool_call() -> None:
    priced = msgspec.structs.replace(MODEL, pricing=al.Pricing(input=1.0, output=2.0))
    agent = al.Agent(
        model=priced,
        stream_fn=ScriptedStream(
            [
                reply_tool_calls(
                    ("get_weather", {"city": "Paris"}),
                    text="Let me look.",
                    usage=al.Usage(input=10, output=5, total=15),
                ),
                reply_text("Sunny, 21 C in Paris.", usage=al.Usage(input=30, output=8, total=38)),
            ]
        ),
        tools=[get_weather],
    )
    clock = Ticks()
    collector = TrajectoryCollector(clock=clock)
    agent.subscribe(collector)
    result = await agent.prompt("Weather in Paris?")
    last_event = clock.now  # AgentEnd's reading; the first event's was 101
    t = collector.trajectory()

    assert t.prompt == "Weather in Paris?"
    assert t.text == t.output == "Sunny, 21 C in Paris." == result.text
    assert t.stop_reason is al.StopReason.STOP and t.error is None
    assert [turn.index for turn in t.turns] == [0, 1]
    first, second = t.turns
    assert first.text == "Let me look." and first.tool_calls == ["call_1"]
    assert first.stop_reason is al.StopReason.TOOL_USE
    assert first.end_reason is al.TurnEndReason.TOOLS_EXECUTED
    assert second.end_reason is al.TurnEndReason.COMPLETE and second.tool_calls == []
    assert first.usage.total == 15 and second.usage.total == 38
    [step] = t.tool_calls
    assert (step.call_id, step.name, step.arguments) == ("call_1", "get_weather", {"city": "Paris"})
    assert step.result == "Sunny, 21 C in Paris." and not step.is_error and step.turn == 0
    # Spending: what the run's result says, the priced cost included.
    assert t.usage == result.usage and t.total_tokens == 53
    assert t.cost == result.cost and t.cost.total == pytest.approx((40 * 1 + 13 * 2) / 1e6)
    # Timing: one tick per event; a turn holds its tool calls.
    assert 0 <= first.started < step.started < step.ended <= first.ended <= second.started
    assert second.ended <= t.duration == last_event - 101.0


async def test_failed_and_unknown_tools_and_model_errors_are_recorded() -> None:
    @al.tool
    async def explode() -> str:
        """Always fails."""
        raise RuntimeError("boom")

    agent = al.Agent(
        model=MODEL,
        stream_fn=ScriptedStream(
            [
                reply_tool_calls(("explode", {}), ("missing", {"x": 1})),
                reply_error(al.ErrorKind.CONTENT_FILTERED, "refused"),
            ]
        ),
        tools=[explode],
    )
    collector = TrajectoryCollector()
    agent.subscribe(collector)
    await agent.prompt("go", raise_on_error=False)
    t = collector.trajectory()
    assert [(s.name, s.is_error) for s in t.tool_calls] == [("explode", True), ("missing", True)]
    assert "boom" in t.tool_calls[0].result
    assert t.tool_calls[1].arguments == {"x": 1}
    assert t.stop_reason is al.StopReason.ERROR and t.error == "refused"
    assert t.turns[-1].error == "refused" and t.turns[-1].end_reason is al.TurnEndReason.ERROR


async def test_retries_are_counted_on_their_turn() -> None:
    agent = al.Agent(
        model=MODEL,
        stream_fn=ScriptedStream(
            [reply_error(al.ErrorKind.THROTTLED, "slow down", retry_after=0.0), reply_text("ok")]
        ),
        retry_strategy=al.retry.ExponentialBackoff(base_delay=0.0, jitter=False),
    )
    collector = TrajectoryCollector()
    agent.subscribe(collector)
    await agent.prompt("hi")
    [turn] = collector.trajectory().turns
    assert turn.retries == 1 and turn.text == "ok"


async def test_sub_agents_nest_under_the_calls_that_started_them() -> None:
    def researcher() -> al.Agent:
        script = [
            reply_tool_calls(("get_weather", {"city": "Brest"}), usage=al.Usage(total=120)),
            reply_text("Windy in Brest.", usage=al.Usage(total=80)),
        ]
        return al.Agent(
            model=MODEL, name="researcher", stream_fn=ScriptedStream(script), tools=[get_weather]
        )

    def boss() -> al.Agent:
        script = [
            reply_tool_calls(("research", {"task": "Brest?"}), usage=al.Usage(total=30)),
            reply_text("Brest is windy.", usage=al.Usage(total=20)),
        ]
        return al.Agent(
            model=MODEL,
            name="boss",
            stream_fn=ScriptedStream(script),
            tools=[multi.SubAgentTool(researcher, name="research", description="Finds facts.")],
        )

    writer = al.Agent(
        model=MODEL,
        name="writer",
        stream_fn=FunctionStream(lambda c: reply_text("Prose.", usage=al.Usage(total=60))),
    )
    planner = al.Agent(
        model=MODEL,
        name="planner",
        stream_fn=ScriptedStream(
            [
                reply_tool_calls(
                    ("delegate", {"task": "Find out about Brest."}),
                    ("write", {"task": "Write."}),
                    usage=al.Usage(total=200),
                ),
                reply_text("Done.", usage=al.Usage(total=100)),
            ]
        ),
        tools=[
            multi.SubAgentTool(boss, name="delegate", description="Delegates."),
            writer.as_tool(name="write", description="Writes."),
        ],
    )
    collector = TrajectoryCollector(agent="planner")
    planner.subscribe(collector)
    result = await planner.prompt("Plan.")
    t = collector.trajectory()

    assert t.tool_names() == ["delegate", "write"]
    assert t.tool_names(tree=True) == ["delegate", "research", "get_weather", "write"]
    boss_run, writer_run = t.sub_agents()
    assert (boss_run.agent, boss_run.prompt, boss_run.text) == (
        "boss",
        "Find out about Brest.",
        "Brest is windy.",
    )
    assert writer_run.agent == "writer" and writer_run.text == "Prose."
    [research] = boss_run.tool_calls
    assert research.sub_agent is not None and research.sub_agent.agent == "researcher"
    assert research.sub_agent.tool_calls[0].result == "Sunny, 21 C in Brest."
    # Usage over the tree, as the run's result rolls it up; each level keeps its own subtree.
    assert t.usage == result.usage and t.usage.total == 300 + 50 + 200 + 60
    assert boss_run.usage.total == 250 and research.sub_agent.usage.total == 200
    assert sum(turn.usage.total for turn in t.turns) == 300  # the planner's own calls
    # Each sub-agent run lies within the tool call that started it.
    step = t.tool_calls[0]
    assert step.started <= boss_run.started and boss_run.started + boss_run.duration <= step.ended


async def test_run_loop_on_event_and_a_run_cut_short() -> None:
    # A trajectory can be read mid-run: here the model never answers and the caller gives up.
    release = anyio.Event()

    async def never(context: object) -> al.AssistantMessage:
        await release.wait()
        return reply_text("late")

    collector = TrajectoryCollector()
    config = AgentLoopConfig(model=MODEL, stream_fn=FunctionStream(never))
    with anyio.move_on_after(0.05):
        await run_loop(
            [al.UserMessage.from_text("hello?")], AgentContext(), config, on_event=collector
        )
    t = collector.trajectory()
    assert t.prompt == "hello?" and len(t.turns) == 1 and t.turns[0].text == ""
    assert t.duration > 0


def test_without_timing_and_json() -> None:
    t = Trajectory(prompt="p", started=1.0, duration=2.0)
    assert t.without_timing() == Trajectory(prompt="p")
    assert msgspec.json.decode(msgspec.json.encode(t), type=Trajectory) == t
