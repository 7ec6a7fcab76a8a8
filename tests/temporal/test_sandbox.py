"""The sandbox is on: workflow code that does something non-deterministic is stopped.

A subclass of ``AgentWorkflow`` (``_forbidden.py``) reads the wall clock, draws a random number
or opens a file inside the workflow; Temporal's sandbox raises ``RestrictedWorkflowAccessError``
(a ``NondeterminismError``) at the call. What follows depends on where the call is:

- in the workflow's own code (``configure``): Temporal fails the workflow *task*, records
  ``WorkflowTaskFailed`` with the error in the history and tries the task again; the run stays
  open, making no progress, until fixed code is deployed or the run is terminated;
- in code the loop calls (a context transformer, a policy): the loop catches it like any
  exception a hook raises and ends the run with stop reason ``error``, its message naming the
  restricted call; no model call is made.

The same workflow with nothing forbidden completes.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import anyio
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus

from agentloop import ErrorKind, StopReason
from agentloop.testing import ScriptedStream, reply_text
from agentloop_temporal import TemporalAgent, create_worker

from ._forbidden import NAME, ForbiddenCallWorkflow
from ._support import MODEL, connect, new_queue

if TYPE_CHECKING:
    from temporalio.api.history.v1 import HistoryEvent
    from temporalio.client import Client, WorkflowHandle
    from temporalio.worker import Worker

    from agentloop_temporal.testing import DevServer

pytestmark = pytest.mark.anyio

CALLS = pytest.mark.parametrize(
    ("call", "accessed"),
    [
        ("time.time", "time.time.__call__"),
        ("random.random", "random.random.__call__"),
        ("open", "__builtins__.open"),
    ],
)
RESTRICTED = "Cannot access {} from inside a workflow"


def sandboxed_worker(client: Client, queue: str, model: ScriptedStream) -> Worker:
    # create_worker's default runner: the sandbox with agentloop's restrictions.
    return create_worker(
        client, task_queue=queue, stream_fn=model, workflows=[ForbiddenCallWorkflow]
    )


def agent(client: Client, queue: str, name: str) -> TemporalAgent:
    return TemporalAgent(
        client,
        conversation_id=uuid.uuid4().hex,
        task_queue=queue,
        model=MODEL,
        agent_name=name,
        workflow=NAME,  # the subclass, under its own name
    )


async def first_task_failure(handle: WorkflowHandle[object, object]) -> HistoryEvent:
    """The run's first ``WorkflowTaskFailed`` event (long-polls the history for it)."""
    async for event in handle.fetch_history_events(wait_new_event=True):
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            return event
        assert event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    raise AssertionError("the history ended without a failed workflow task")


@CALLS
async def test_a_forbidden_call_in_workflow_code_fails_the_workflow_task(
    temporal_server: DevServer, call: str, accessed: str
) -> None:
    client = await connect(temporal_server.address)
    queue, model = new_queue(), ScriptedStream([reply_text("unreachable")])
    async with sandboxed_worker(client, queue, model):
        run = await agent(client, queue, f"configure:{call}").start("hello")
        with anyio.fail_after(20):
            failed = await first_task_failure(run.handle)
        description = await run.handle.describe()
        await run.handle.terminate("the test is over")
    failure = failed.workflow_task_failed_event_attributes.failure
    assert RESTRICTED.format(accessed) in failure.message
    assert failure.application_failure_info.type == "RestrictedWorkflowAccessError"
    assert description.status is WorkflowExecutionStatus.RUNNING  # a failed task, an open run
    assert model.calls == []


@CALLS
async def test_a_forbidden_call_in_a_transformer_ends_the_run_with_an_error(
    temporal_server: DevServer, call: str, accessed: str
) -> None:
    client = await connect(temporal_server.address)
    queue, model = new_queue(), ScriptedStream([reply_text("unreachable")])
    async with sandboxed_worker(client, queue, model):
        with anyio.fail_after(20):
            result = await agent(client, queue, f"transformer:{call}").prompt(
                "hello", raise_on_error=False
            )
    assert result.stop_reason is StopReason.ERROR
    assert result.error_kind is ErrorKind.HOOK
    assert result.error is not None
    assert result.error.startswith("transform_context raised RestrictedWorkflowAccessError: ")
    assert RESTRICTED.format(accessed) in result.error
    assert model.calls == []  # the transformer runs before the model call, which never came


async def test_the_same_workflow_with_nothing_forbidden_completes(
    temporal_server: DevServer,
) -> None:
    client = await connect(temporal_server.address)
    queue, model = new_queue(), ScriptedStream([reply_text("fine")])
    async with sandboxed_worker(client, queue, model):
        with anyio.fail_after(20):
            result = await agent(client, queue, "transformer:nothing").prompt("hello")
    assert result.stop_reason is StopReason.STOP
    assert result.output == "fine"
    assert len(model.calls) == 1
