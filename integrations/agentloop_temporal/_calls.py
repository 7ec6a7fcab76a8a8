"""The workflow's side of its activities: starting them, waiting for them, their failures.

Also the tools as the loop in the workflow sees them (each call an activity) and the queues'
helpers. Everything here runs inside the workflow: deterministic, no I/O.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError as Timeout

from agentloop import (
    AgentMessage,
    AgentToolResult,
    ErrorKind,
    ToolCall,
    Usage,
    current_tool_context,
)

from ._data import CallOptions, ToolReply, ToolSpec, from_payload

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = [
    "RemoteTool",
    "await_activity",
    "failure",
    "messages_of",
    "retry_policy",
    "take",
]


def retry_policy(options: CallOptions) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=timedelta(seconds=options.initial_interval),
        backoff_coefficient=options.backoff,
        maximum_interval=timedelta(seconds=options.max_interval),
        maximum_attempts=options.max_attempts,
    )


def failure(exc: ActivityError) -> tuple[ErrorKind, str]:
    """The kind and text of an activity's last failure (all its attempts used)."""
    cause = exc.cause
    if isinstance(cause, ApplicationError):
        try:
            kind = ErrorKind(cause.type or ErrorKind.OTHER.value)
        except ValueError:
            kind = ErrorKind.OTHER
        return kind, cause.message
    if isinstance(cause, Timeout):
        which = cause.type.name.lower() if cause.type is not None else "timeout"
        return ErrorKind.NETWORK, f"the activity timed out ({which})"
    return ErrorKind.OTHER, str(cause or exc)


def _retrieve(handle: Any) -> None:
    """Done-callback of an activity left behind: take its outcome so nothing is reported."""
    if not handle.cancelled():
        handle.exception()


class RemoteTool:
    """A worker's tool, as the loop in the workflow sees it: each call is an activity.

    Arguments are validated on the worker, by the tool itself (``validate_arguments`` passes
    them through here), so a tool behaves as it does in process.
    """

    def __init__(
        self, spec: ToolSpec, call_tool: Callable[[ToolCall], Awaitable[ToolReply]]
    ) -> None:
        self._call_tool = call_tool
        self.name = spec.name
        self.label = spec.label or spec.name
        self.description = spec.description
        self.parameters = spec.parameters
        self.requires_approval = spec.requires_approval
        self.read_only = spec.read_only

    def validate_arguments(self, arguments: Any) -> Any:
        return arguments

    async def execute(self, call_id: str, arguments: Any, on_update: Any) -> AgentToolResult:
        call = ToolCall(id=call_id, name=self.name, arguments=arguments)
        reply = await self._call_tool(call)
        context = current_tool_context()
        if context is not None and context.link is not None and reply.usage != Usage():
            # What the call's sub-agents spent counts in the run, as in process.
            context.link.account(reply.usage, reply.cost)
        return reply.result


async def await_activity(handle: Any) -> Any:
    """Wait for an activity; a cancelled wait asks Temporal to cancel it and returns at once.

    Awaiting the handle itself would hold the task until Temporal confirmed the
    cancellation, which a cancel scope (steering, abort) must not wait for.
    """
    try:
        await workflow.wait_condition(handle.done)
    except BaseException:
        if not handle.done():
            handle.cancel()
            handle.add_done_callback(_retrieve)
        raise
    return handle.result()


def messages_of(payload: list[Any]) -> list[AgentMessage]:
    return from_payload(payload, list[AgentMessage])


def take(queue: list[AgentMessage], mode: str) -> list[AgentMessage]:
    if not queue:
        return []
    if mode == "all":
        taken = list(queue)
        queue.clear()
        return taken
    return [queue.pop(0)]
