"""What the Temporal tests share: a model that reads its context, tools, workers, histories."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Replayer

from agentloop import AgentMessage, AssistantMessage, ModelSpec, ToolCall, ToolResultMessage, tool
from agentloop_temporal import CallOptions, EventHub, TemporalAgent, create_worker, workflow_runner
from agentloop_temporal._workflow import AgentWorkflow

if TYPE_CHECKING:
    from temporalio.worker import Worker

    from agentloop.abc import AgentTool, StreamFn

MODEL = ModelSpec(provider="scripted", model_id="temporal-test")
HISTORIES = Path(__file__).parent / "histories"
# Short heartbeats and retry intervals: a lost worker or a cancellation is noticed in seconds.
FAST = CallOptions(start_to_close=60, heartbeat=2, max_attempts=5, initial_interval=0.2)


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def tool_calls(messages: list[AgentMessage]) -> list[ToolCall]:
    return [c for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]


def results(messages: list[AgentMessage]) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]


def assert_paired(messages: list[AgentMessage]) -> None:
    """Every tool call has exactly one result, after it, and every result answers a call."""
    called = [c.id for c in tool_calls(messages)]
    answered = [r.tool_call_id for r in results(messages)]
    assert sorted(called) == sorted(answered)
    assert len(set(called)) == len(called)
    seen: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            seen.update(c.id for c in message.tool_calls)
        elif isinstance(message, ToolResultMessage):
            assert message.tool_call_id in seen


async def connect(address: str) -> Client:
    return await Client.connect(address)


def new_queue() -> str:
    return f"q-{uuid.uuid4().hex[:12]}"


def in_process_worker(
    client: Client,
    queue: str,
    stream_fn: StreamFn,
    tools: list[AgentTool],
    hub: EventHub | None = None,
) -> Worker:
    return create_worker(client, task_queue=queue, stream_fn=stream_fn, tools=tools, sink=hub)


def agent_for(
    client: Client, queue: str, hub: EventHub | None = None, **options: Any
) -> TemporalAgent:
    options.setdefault("model_calls", FAST)
    options.setdefault("tool_calls", FAST)
    return TemporalAgent(
        client,
        conversation_id=uuid.uuid4().hex,
        task_queue=queue,
        model=MODEL,
        events=hub,
        **options,
    )


async def keep_history(handle: WorkflowHandle[Any, Any], name: str) -> str:
    """The run's history as JSON; it replays against the current code at once, and is saved
    under ``histories/`` when ``AGENTLOOP_RECORD_HISTORIES=1`` (to commit as a fixture)."""
    history = await handle.fetch_history()
    await Replayer(workflows=[AgentWorkflow], workflow_runner=workflow_runner()).replay_workflow(
        history
    )
    text = history.to_json()
    if os.environ.get("AGENTLOOP_RECORD_HISTORIES") == "1":
        await anyio.Path(HISTORIES / f"{name}.json").write_text(text)
    return text
