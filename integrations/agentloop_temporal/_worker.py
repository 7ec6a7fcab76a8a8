"""Workers: the sandbox the workflow runs in, and a worker with everything registered.

The workflow module is imported afresh in Temporal's sandbox for each run, and the core with
it, so the sandbox checks every call the loop makes. Passed through (shared with the host, not
re-imported): anyio, sniffio and msgspec, which hold no state a run could leak into another.
One restriction is relaxed: ``threading.get_ident``, which the loop calls to know its own
thread (it routes calls from worker threads, and a workflow starts none; starting a thread,
taking a lock or anything else in ``threading`` stays forbidden).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import (
    SandboxedWorkflowRunner,
    SandboxRestrictions,
)

from ._activities import AgentActivities, GetApiKey
from ._workflow import AgentWorkflow

if TYPE_CHECKING:
    from temporalio.client import Client

    from agentloop import AgentTool, Toolset
    from agentloop.abc import StreamFn

    from ._records import EventSink

__all__ = ["create_worker", "sandbox_restrictions", "workflow_runner"]

PASSED_THROUGH = ("anyio", "sniffio", "msgspec")


def sandbox_restrictions(
    base: SandboxRestrictions | None = None, *, pass_core_through: bool = False
) -> SandboxRestrictions:
    """The sandbox restrictions agent workflows need, on top of ``base`` (Temporal's default).

    ``pass_core_through=True`` also passes the core through: the workflow module no longer
    re-imports it for each run (faster to start a run), and the sandbox no longer checks what
    the loop calls.
    """
    base = base or SandboxRestrictions.default
    modules = PASSED_THROUGH + (("agentloop",) if pass_core_through else ())
    restrictions = base.with_passthrough_modules(*modules)
    members = restrictions.invalid_module_members
    threading = members.children.get("threading")
    if threading is not None:
        relaxed = dataclasses.replace(threading, exclude=threading.exclude | {"get_ident"})
        children = {**members.children, "threading": relaxed}
        members = dataclasses.replace(members, children=children)
    return dataclasses.replace(restrictions, invalid_module_members=members)


def workflow_runner(*, pass_core_through: bool = False) -> SandboxedWorkflowRunner:
    """A sandboxed runner with ``sandbox_restrictions``: give it to ``Worker(workflow_runner=)``."""
    return SandboxedWorkflowRunner(
        restrictions=sandbox_restrictions(pass_core_through=pass_core_through)
    )


def create_worker(
    client: Client,
    *,
    task_queue: str,
    stream_fn: StreamFn | Mapping[str, StreamFn],
    tools: Sequence[AgentTool] = (),
    toolsets: Sequence[Toolset] = (),
    sink: EventSink | None = None,
    deps: Any = None,
    get_api_key: GetApiKey | None = None,
    tool_timeout: float | None = None,
    workflows: Sequence[type] = (AgentWorkflow,),
    pass_core_through: bool = False,
    **options: Any,
) -> Worker:
    """A Temporal worker running agent workflows and their activities.

    Run it with ``async with worker:`` or ``await worker.run()`` (on asyncio). Any number of
    workers may serve one task queue, on any number of machines; each needs the same stream
    functions and tools.

    Args:
        client: a connected Temporal client.
        task_queue: the queue runs are started on.
        stream_fn: the provider, or providers by name (a single one is named ``"default"``).
        tools: the tools runs may use, by name.
        toolsets: sources of tools read when a run starts.
        sink: where runs' events are published (``EventHub`` in one process).
        deps: what tools reach as ``ToolContext.deps``.
        get_api_key: resolves a provider's API key before each model call (keys never enter
            a workflow's history).
        tool_timeout: seconds a tool call may run (a tool's own ``timeout`` wins).
        workflows: the workflow classes (``AgentWorkflow`` or subclasses).
        pass_core_through: see ``sandbox_restrictions``.
        **options: passed to ``temporalio.worker.Worker``.

    Returns:
        The worker, not yet running.
    """
    stream_fns = dict(stream_fn) if isinstance(stream_fn, Mapping) else {"default": stream_fn}
    activities = AgentActivities(
        stream_fns=stream_fns,
        tools=tools,
        toolsets=toolsets,
        sink=sink,
        deps=deps,
        get_api_key=get_api_key,
        tool_timeout=tool_timeout,
    )
    options.setdefault("workflow_runner", workflow_runner(pass_core_through=pass_core_through))
    return Worker(
        client,
        task_queue=task_queue,
        workflows=list(workflows),
        activities=activities.activities(),
        **options,
    )
