"""Another client, knowing only the conversation id, finds a run and drives it.

The docs promise that a stateless front end can find a conversation's run from its id
(``workflow_id_for``). Here the run is started by one ``TemporalAgent`` on one connection; a
second ``TemporalAgent``, on a connection of its own and sharing nothing with the first but the
conversation id, the task queue and the event source, follows its events, steers it, queues a
follow-up and aborts it.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import anyio
import pytest

from agentloop import (
    AgentEnd,
    StopReason,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolResultMessage,
    UserMessage,
    tool,
)
from agentloop.testing import FunctionStream, reply_text, reply_tool_calls
from agentloop_temporal import EventHub, TemporalAgent, workflow_id_for

from ._support import FAST, MODEL, assert_paired, connect, in_process_worker, new_queue, results

if TYPE_CHECKING:
    from agentloop import AgentMessage, AgentResult, AgentTool, AssistantMessage
    from agentloop.stream import LlmContext
    from agentloop_temporal import RunEvent
    from agentloop_temporal.testing import DevServer

pytestmark = pytest.mark.anyio


def by_last_message(context: LlmContext) -> AssistantMessage:
    """Calls ``hold`` twice after a user message, answers after a tool result: whatever the
    order of steering and follow-ups, each turn's answer depends on what came just before."""
    last = context.messages[-1]
    if isinstance(last, UserMessage):
        if last.text.startswith("wait"):
            return reply_tool_calls(("hold", {"name": "a"}), ("hold", {"name": "b"}))
        return reply_text(f"heard: {last.text}")
    assert isinstance(last, ToolResultMessage)
    return reply_text(f"after: {last.text}")


def texts(messages: list[AgentMessage]) -> list[tuple[str, str]]:
    return [(type(m).__name__, getattr(m, "text", "")) for m in messages]


class Holds:
    """A ``hold`` tool: call ``a`` returns once ``release`` is set, ``b`` never returns."""

    def __init__(self) -> None:
        self.started = {"a": anyio.Event(), "b": anyio.Event()}
        self.release = anyio.Event()
        self.cancelled: list[str] = []

    def tool(self) -> AgentTool:
        @tool
        async def hold(name: str) -> str:
            """Hold until released (``a``) or cancelled."""
            self.started[name].set()
            try:
                if name == "a":
                    await self.release.wait()
                else:
                    await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(name)
                raise
            return f"{name} done"

        return hold

    async def wait_started(self) -> None:
        with anyio.fail_after(20):
            await self.started["a"].wait()
            await self.started["b"].wait()


async def test_a_second_client_finds_the_run_by_conversation_id_and_steers_it(
    temporal_server: DevServer,
) -> None:
    queue, hub, conversation = new_queue(), EventHub(), uuid.uuid4().hex
    holds = Holds()
    worker_client = await connect(temporal_server.address)
    first_client = await connect(temporal_server.address)
    async with in_process_worker(
        worker_client, queue, FunctionStream(by_last_message), [holds.tool()], hub
    ):
        first = TemporalAgent(
            first_client,
            conversation_id=conversation,
            task_queue=queue,
            model=MODEL,
            tool_calls=FAST,
            model_calls=FAST,
        )
        started = await first.start("wait here")
        await holds.wait_started()

        # The second client: its own connection, its own agent; no handle, run or hub passed.
        second_client = await connect(temporal_server.address)
        assert second_client is not first_client
        second = TemporalAgent(
            second_client, conversation_id=conversation, task_queue=queue, events=hub
        )
        run = second.current()
        assert run.workflow_id == workflow_id_for(conversation) == started.workflow_id
        assert (await run.state()).status == "running"
        assert (await second.checkpoint()).messages[0].text == "wait here"  # type: ignore[union-attr]

        followed: list[RunEvent] = []
        async with run.events() as events:
            await second.follow_up("and then?")
            await second.steer("stop holding")
            holds.release.set()
            async for event in events:
                followed.append(event)
        result = await run.result()
        assert (await started.result()).messages == result.messages  # one run, seen from both

    assert holds.cancelled == ["b"]  # the steered call's activity was cancelled on the worker
    assert texts(result.messages) == [
        ("UserMessage", "wait here"),
        ("AssistantMessage", ""),
        ("ToolResultMessage", "a done"),
        (
            "ToolResultMessage",
            "tool call cancelled: user requested steering interrupt: 'stop holding'",
        ),
        ("UserMessage", "stop holding"),
        ("AssistantMessage", "heard: stop holding"),
        ("UserMessage", "and then?"),
        ("AssistantMessage", "heard: and then?"),
    ]
    assert result.stop_reason is StopReason.STOP
    assert_paired(result.messages)
    # What the second client followed: from its subscription to the run's end.
    assert [type(e) for e in followed if type(e) in (ToolExecutionEnd, AgentEnd)] == [
        ToolExecutionEnd,
        ToolExecutionEnd,
        AgentEnd,
    ]
    assert followed[-1] == AgentEnd(messages=result.messages)


async def test_a_second_client_aborts_the_run_by_conversation_id(
    temporal_server: DevServer,
) -> None:
    queue, hub, conversation = new_queue(), EventHub(), uuid.uuid4().hex
    holds = Holds()
    worker_client = await connect(temporal_server.address)
    async with in_process_worker(
        worker_client, queue, FunctionStream(by_last_message), [holds.tool()], hub
    ):
        first = TemporalAgent(
            await connect(temporal_server.address),
            conversation_id=conversation,
            task_queue=queue,
            model=MODEL,
            events=hub,
            tool_calls=FAST,
            model_calls=FAST,
        )
        seen: list[RunEvent] = []
        aborted: AgentResult[str] | None = None
        async with first.stream("wait there") as events:
            async for event in events:
                seen.append(event)
                if isinstance(event, ToolExecutionStart) and aborted is None:
                    await holds.wait_started()
                    second = TemporalAgent(
                        await connect(temporal_server.address),
                        conversation_id=conversation,
                        task_queue=queue,
                    )
                    await second.abort()
                    with anyio.fail_after(20):
                        aborted = await second.wait_idle()
            result = await events.run.result()

    assert aborted == result
    assert result.stop_reason is StopReason.ABORTED
    assert [r.text for r in results(result.messages)] == [
        "tool call aborted: the run was cancelled"
    ] * 2
    assert_paired(result.messages)
    # The first client's stream saw both calls start and the abort end the run.
    assert [type(e) for e in seen].count(ToolExecutionStart) == 2
    assert type(seen[-1]) is AgentEnd
