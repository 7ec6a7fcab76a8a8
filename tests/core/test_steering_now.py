"""Steering interrupts now (the default): a lone running call is cancelled at once, whatever
runs it, and the steering message starts the next turn; ``"after_call"`` waits for a call."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import MODEL

pytestmark = pytest.mark.anyio

STEERING = "tool call cancelled: user requested steering interrupt"


class Lone:
    """One slow tool (async or threaded) that says when it started."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.thread_started = threading.Event()
        self.finished: list[str] = []

        @al.tool(name="slow_async")
        async def slow_async() -> str:
            """Work for a minute."""
            self.started.set()
            await anyio.sleep(60)
            self.finished.append("async")
            return "done"

        @al.tool(name="slow_thread")
        def slow_thread(ctx: al.ToolContext) -> str:
            """Work for a minute in a worker thread (noticing cancellation)."""
            self.thread_started.set()
            ctx.wait_cancelled(60)
            return "done"

        self.tools = [slow_async, slow_thread]


def _agent(lone: Lone, name: str, **kwargs: Any) -> al.Agent[Any]:
    stream = ScriptedStream([reply_tool_calls((name, {})), reply_text("changed course")])
    return al.Agent(model=MODEL, stream_fn=stream, tools=lone.tools, **kwargs)


async def _wait_started(lone: Lone, name: str) -> None:
    if name == "slow_async":
        await lone.started.wait()
    else:
        await anyio.to_thread.run_sync(lone.thread_started.wait)


@pytest.mark.parametrize("name", ["slow_async", "slow_thread"])
@pytest.mark.parametrize("from_thread", [False, True])
async def test_steering_cancels_a_lone_running_call_at_once(name: str, from_thread: bool) -> None:
    lone = Lone()
    agent = _agent(lone, name)
    result: list[al.AgentResult[Any]] = []

    async def run() -> None:
        result.append(await agent.prompt("go"))

    with anyio.fail_after(30):  # the call would take 60 s
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await _wait_started(lone, name)
            if from_thread:
                await anyio.to_thread.run_sync(agent.steer, "use the other file")
            else:
                agent.steer("use the other file")
    [done] = result
    assert done.output == "changed course"
    tool_result = next(m for m in done.messages if isinstance(m, al.ToolResultMessage))
    assert tool_result.is_error
    assert tool_result.text == f"{STEERING}: 'use the other file'"  # interrupted, and by what
    # The steering message starts the next turn, right after the call's result.
    kinds = [type(m).__name__ for m in done.messages]
    assert kinds == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    assert isinstance(done.messages[3], al.UserMessage)
    assert done.messages[3].text == "use the other file"
    assert lone.finished == []


async def test_steering_queued_while_the_model_answers_runs_none_of_its_calls() -> None:
    lone = Lone()
    ran: list[str] = []

    @al.tool
    async def quick() -> str:
        """Return at once."""
        ran.append("quick")
        return "quick"

    stream = ScriptedStream(
        [reply_tool_calls(("quick", {}), ("slow_async", {})), reply_text("changed course")]
    )
    agent = al.Agent(model=MODEL, stream_fn=stream, tools=[quick, *lone.tools])

    steered: list[bool] = []

    def steer_as_it_answers(event: al.AgentEvent) -> None:
        if isinstance(event, al.MessageStart) and isinstance(event.message, al.AssistantMessage):
            if not steered:
                steered.append(True)
                agent.steer("stop, do something else")

    agent.subscribe(steer_as_it_answers)
    with anyio.fail_after(30):
        done = await agent.prompt("go")
    assert ran == []
    results = [m for m in done.messages if isinstance(m, al.ToolResultMessage)]
    assert [r.text for r in results] == [f"{STEERING}: 'stop, do something else'"] * 2
    assert done.output == "changed course"


async def test_after_call_lets_a_lone_call_finish_first() -> None:
    lone = Lone()
    agent = _agent(lone, "slow_async", steering_interrupt="after_call")
    release = anyio.Event()

    @al.tool(name="slow_async")
    async def gated() -> str:
        """Finish when released."""
        lone.started.set()
        await release.wait()
        return "finished"

    agent.add_tool(gated)
    result: list[al.AgentResult[Any]] = []

    async def run() -> None:
        result.append(await agent.prompt("go"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await lone.started.wait()
        agent.steer("later")
        await anyio.wait_all_tasks_blocked()
        assert agent.running_tool_calls  # still running: steering waits for it
        release.set()
    tool_result = next(m for m in result[0].messages if isinstance(m, al.ToolResultMessage))
    assert tool_result.text == "finished"
    steering = result[0].messages[3]
    assert isinstance(steering, al.UserMessage)
    assert steering.text == "later"


async def test_a_loop_run_is_told_through_its_event_stream() -> None:
    lone = Lone()
    queue: list[al.AgentMessage] = []

    async def poll() -> list[al.AgentMessage]:
        taken, queue[:] = list(queue), []
        return taken

    config = al.loop.AgentLoopConfig(
        model=MODEL,
        stream_fn=ScriptedStream([reply_tool_calls(("slow_async", {})), reply_text("ok")]),
        tools=lone.tools,
        get_steering_messages=poll,
    )
    with anyio.fail_after(30):
        async with al.loop.agent_loop(
            [al.UserMessage.from_text("go")], al.loop.AgentContext(), config
        ) as events:
            async for event in events:
                if isinstance(event, al.ToolExecutionStart):
                    await lone.started.wait()
                    queue.append(al.UserMessage.from_text("new plan"))
                    events.steering_arrived()
    texts = [m.text for m in events.result.messages if not isinstance(m, al.CustomMessage)]
    assert texts[2] == f"{STEERING}: 'new plan'"
    assert texts[3] == "new plan"
    assert lone.finished == []


async def test_a_call_that_returns_before_the_cancellation_reaches_it_keeps_its_result() -> None:
    lone = Lone()
    agents: list[al.Agent[Any]] = []

    @al.tool
    async def steer_and_return() -> str:
        """Steer from inside the call, then return at once."""
        await lone.started.wait()
        agents[0].steer("change of plan")
        return "my own result"

    stream = ScriptedStream(
        [reply_tool_calls(("steer_and_return", {}), ("slow_async", {})), reply_text("ok")]
    )
    agent = al.Agent(model=MODEL, stream_fn=stream, tools=[steer_and_return, *lone.tools])
    agents.append(agent)
    with anyio.fail_after(30):
        done = await agent.prompt("go")
    mine, slow = [m.text for m in done.messages if isinstance(m, al.ToolResultMessage)]
    assert mine == "my own result"
    assert slow == f"{STEERING}: 'change of plan'"
