"""Durable agent runs on Temporal: runs that survive crashed workers and spread over machines.

A run is a Temporal workflow (``AgentWorkflow``) running the agentloop loop deterministically;
every model call and every tool call is an activity, with its own timeout, retry policy and
heartbeat, so a worker that dies mid-run costs nothing but a retry of the call it was running.
Workers (``create_worker``) hold the stream functions, the tools and the API keys; clients
(``TemporalAgent``) start runs, stream their events, steer them, answer approvals and abort
them, with the same methods as ``Agent``.

The workflow runs on Temporal's own asyncio event loop through anyio's asyncio backend: trio
cannot run inside a workflow. The workers' activities and the client are asyncio too.
"""

from agentloop import MissingExtra as _MissingExtra

_MissingExtra.check(
    "agentloop_temporal", "temporal", "temporalio"
)  # one clear line, not a deep ImportError

from ._activities import AgentActivities as AgentActivities
from ._client import (
    AgentRun as AgentRun,
    TemporalAgent as TemporalAgent,
    workflow_id_for as workflow_id_for,
)
from ._data import (
    DESCRIBE_ACTIVITY as DESCRIBE_ACTIVITY,
    MODEL_ACTIVITY as MODEL_ACTIVITY,
    PUBLISH_ACTIVITY as PUBLISH_ACTIVITY,
    TOOL_ACTIVITY as TOOL_ACTIVITY,
    WORKFLOW_NAME as WORKFLOW_NAME,
    Approval as Approval,
    CallOptions as CallOptions,
    RunInput as RunInput,
    RunOutput as RunOutput,
    RunState as RunState,
)
from ._events import RunEvents as RunEvents
from ._records import (
    ApprovalRequested as ApprovalRequested,
    EventHub as EventHub,
    EventSink as EventSink,
    EventSource as EventSource,
    RunEvent as RunEvent,
    StreamRecord as StreamRecord,
)
from ._worker import (
    create_worker as create_worker,
    sandbox_restrictions as sandbox_restrictions,
    workflow_runner as workflow_runner,
)
from ._workflow import AgentWorkflow as AgentWorkflow

__all__ = [
    "AgentActivities",
    "AgentRun",
    "AgentWorkflow",
    "Approval",
    "ApprovalRequested",
    "CallOptions",
    "DESCRIBE_ACTIVITY",
    "EventHub",
    "EventSink",
    "EventSource",
    "MODEL_ACTIVITY",
    "PUBLISH_ACTIVITY",
    "RunEvent",
    "RunEvents",
    "RunInput",
    "RunOutput",
    "RunState",
    "StreamRecord",
    "TOOL_ACTIVITY",
    "TemporalAgent",
    "WORKFLOW_NAME",
    "create_worker",
    "sandbox_restrictions",
    "workflow_id_for",
    "workflow_runner",
]
