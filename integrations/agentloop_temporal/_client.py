"""The client side: ``TemporalAgent`` starts and drives a conversation's runs, like ``Agent``.

A conversation's runs share one workflow id, derived from the conversation id, so anything that
knows the conversation id (a stateless HTTP front end, another process) can find its current
run: ``TemporalAgent(client, conversation_id=..., task_queue=...).steer("...")``. Each run
starts from the checkpoint the previous one returned.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import msgspec
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from agentloop import (
    AgentMessage,
    AgentResult,
    AlreadyRunning,
    Checkpoint,
    ModelSpec,
    StreamOptions,
    UserMessage,
)

from ._data import (
    MODEL_CALLS,
    TOOL_CALLS,
    WORKFLOW_NAME,
    Approval,
    ApprovalMode,
    CallOptions,
    QueueMode,
    RunInput,
    RunOutput,
    RunState,
    from_payload,
    to_payload,
)
from ._events import RunEvents

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._records import EventSource

__all__ = ["AgentRun", "TemporalAgent", "workflow_id_for"]


def workflow_id_for(conversation_id: str, *, prefix: str = "agentloop-") -> str:
    """The workflow id of a conversation's runs."""
    return f"{prefix}{conversation_id}"


def _seconds(value: float | None) -> timedelta | None:
    return None if value is None else timedelta(seconds=value)


def _message(message: str | AgentMessage) -> AgentMessage:
    return UserMessage.from_text(message) if isinstance(message, str) else message


class AgentRun:
    """One run on Temporal (a workflow execution): steer it, approve its calls, abort it, wait.

    Args:
        handle: the workflow's handle (without a run id: whichever run is the latest).
        events: where its events can be read.
    """

    def __init__(self, handle: WorkflowHandle[Any, Any], events: EventSource | None = None) -> None:
        self.handle = handle
        self._events = events

    @property
    def workflow_id(self) -> str:
        """The workflow id of the run (shared by a conversation's runs)."""
        return self.handle.id

    @property
    def run_id(self) -> str | None:
        """The run's id (``None`` for a handle on whichever run is the latest)."""
        return self.handle.run_id or self.handle.result_run_id

    async def steer(self, message: str | AgentMessage) -> None:
        """Queue a steering message (a signal): it interrupts the running tool batch.

        Raises:
            temporalio.service.RPCError: the run is over (``NOT_FOUND``).
        """
        await self.handle.signal("steer", to_payload([_message(message)]))

    async def follow_up(self, message: str | AgentMessage) -> None:
        """Queue a message for when the run would otherwise end (a signal).

        Raises:
            temporalio.service.RPCError: the run is over (``NOT_FOUND``).
        """
        await self.handle.signal("follow_up", to_payload([_message(message)]))

    async def approve(self, call_id: str, *, arguments: Any = msgspec.UNSET) -> None:
        """Approve a tool call waiting for approval (an update), with new ``arguments`` if given.

        Raises:
            LookupError: no call with this id is waiting.
        """
        await self._answer(Approval(call_id=call_id, approved=True, arguments=arguments))

    async def reject(self, call_id: str, reason: str = "") -> None:
        """Reject a tool call waiting for approval: its result is an error saying ``reason``.

        Raises:
            LookupError: no call with this id is waiting.
        """
        await self._answer(Approval(call_id=call_id, approved=False, reason=reason))

    async def _answer(self, answer: Approval) -> None:
        try:
            await self.handle.execute_update("approve", to_payload(answer))
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            raise LookupError(getattr(cause, "message", None) or str(cause)) from exc

    async def abort(self) -> None:
        """Abort the run (cancel the workflow); ``result()`` then returns it, ``aborted``."""
        await self.handle.cancel()

    async def output(self) -> RunOutput:
        """Wait for the run to end; its result and the checkpoint it ended at.

        Raises:
            temporalio.client.WorkflowFailureError: the run failed (a worker lacks a tool).
        """
        return from_payload(await self.handle.result(), RunOutput)

    async def result(self) -> AgentResult[str]:
        """Wait for the run to end and return its result (``aborted`` after ``abort``).

        Raises:
            temporalio.client.WorkflowFailureError: the run failed (a worker lacks a tool).
        """
        return (await self.output()).result

    async def state(self) -> RunState:
        """The run's state: turn, usage, queued messages, calls waiting for approval."""
        return from_payload(await self.handle.query("state"), RunState)

    async def checkpoint(self) -> Checkpoint:
        """The conversation as it stands (``Agent.from_checkpoint`` takes it)."""
        return from_payload(await self.handle.query("checkpoint"), Checkpoint)

    def events(self) -> RunEvents:
        """The run's events from now on: ``async with run.events() as events: async for ...``.

        Raises:
            ValueError: no event source was given.
        """
        if self._events is None:
            raise ValueError("no event source: give TemporalAgent(events=...)")
        return RunEvents(self._events, self.handle, run=self)


class TemporalAgent:
    """A conversation whose runs execute on Temporal workers; the methods mirror ``Agent``'s.

    Args:
        client: a connected Temporal client.
        conversation_id: the conversation; its runs' workflow id derives from it.
        task_queue: the queue the workers serve.
        model: the model of a new conversation (a checkpoint's model wins).
        system_prompt: the system prompt of a new conversation.
        stream_fn: the name of the workers' stream function to use.
        tools: names of the workers' tools to offer (``None``: the checkpoint's, or all).
        events: where to read runs' events (``EventHub`` when the workers run in-process).
        stream_options: provider options (an API key here is dropped: workers resolve keys).
        approval: as ``RunInput.approval``.
        approval_timeout: as ``RunInput.approval_timeout``.
        steering_mode: as ``RunInput.steering_mode``.
        follow_up_mode: as ``RunInput.follow_up_mode``.
        tool_execution: as ``RunInput.tool_execution``.
        max_concurrent_tools: as ``RunInput.max_concurrent_tools``.
        model_calls: as ``RunInput.model_calls``.
        tool_calls: as ``RunInput.tool_calls``.
        publish: as ``RunInput.publish``.
        agent_name: as ``RunInput.agent_name``.
        id_prefix: what the workflow id starts with.
        task_timeout: seconds a workflow task may take before Temporal retries it elsewhere.
        workflow: the workflow type runs start: ``agentloop.run`` (``AgentWorkflow``), or the
            name an ``AgentWorkflow`` subclass is registered under.
    """

    def __init__(
        self,
        client: Client,
        *,
        conversation_id: str,
        task_queue: str,
        model: ModelSpec | None = None,
        system_prompt: str = "",
        stream_fn: str = "default",
        tools: Sequence[str] | None = None,
        events: EventSource | None = None,
        stream_options: StreamOptions | None = None,
        approval: ApprovalMode = "tools",
        approval_timeout: float | None = None,
        steering_mode: QueueMode = "one_at_a_time",
        follow_up_mode: QueueMode = "one_at_a_time",
        tool_execution: str = "concurrent",
        max_concurrent_tools: int | None = None,
        model_calls: CallOptions = MODEL_CALLS,
        tool_calls: CallOptions = TOOL_CALLS,
        publish: bool = True,
        agent_name: str = "agent",
        id_prefix: str = "agentloop-",
        task_timeout: float | None = None,
        workflow: str = WORKFLOW_NAME,
    ) -> None:
        self.client = client
        self.conversation_id = conversation_id
        self.task_queue = task_queue
        self.model = model
        self.system_prompt = system_prompt
        self.workflow_id = workflow_id_for(conversation_id, prefix=id_prefix)
        self._events = events
        self._task_timeout = task_timeout
        self._workflow = workflow
        options = stream_options or StreamOptions()
        self._input = RunInput(
            conversation_id=conversation_id,
            checkpoint=Checkpoint(model=model or ModelSpec(provider="", model_id="")),
            stream_fn=stream_fn,
            tools=None if tools is None else list(tools),
            stream_options=msgspec.structs.replace(options, api_key=None),
            approval=approval,
            approval_timeout=approval_timeout,
            steering_mode=steering_mode,
            follow_up_mode=follow_up_mode,
            tool_execution=tool_execution,  # type: ignore[arg-type]
            max_concurrent_tools=max_concurrent_tools,
            model_calls=model_calls,
            tool_calls=tool_calls,
            publish=publish,
            agent_name=agent_name,
        )

    # ---------------------------------------------------------------- runs

    def current(self) -> AgentRun:
        """The conversation's latest run (running or not)."""
        return AgentRun(self.client.get_workflow_handle(self.workflow_id), self._events)

    async def latest_checkpoint(self) -> Checkpoint | None:
        """Where the next run starts: the checkpoint the latest run returned (or stands at).

        ``None`` for a conversation that has no run yet.

        Raises:
            AlreadyRunning: a run is in progress.
        """
        handle = self.client.get_workflow_handle(self.workflow_id)
        try:
            description = await handle.describe()
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                return None
            raise
        if description.status is WorkflowExecutionStatus.RUNNING:
            raise AlreadyRunning(f"conversation {self.conversation_id!r} has a run in progress")
        if description.status is WorkflowExecutionStatus.COMPLETED:
            return from_payload(await handle.result(), RunOutput).checkpoint
        return from_payload(await handle.query("checkpoint"), Checkpoint)

    async def start(
        self, *prompts: str | AgentMessage, checkpoint: Checkpoint | None = None
    ) -> AgentRun:
        """Start a run with ``prompts`` from ``checkpoint`` (by default the previous run's).

        Raises:
            AlreadyRunning: the conversation has a run in progress.
            ValueError: a new conversation without a ``model``.
        """
        if checkpoint is None:
            checkpoint = await self.latest_checkpoint()
        if checkpoint is None:
            if self.model is None:
                raise ValueError("a new conversation needs TemporalAgent(model=...)")
            checkpoint = Checkpoint(model=self.model, system_prompt=self.system_prompt)
        run = msgspec.structs.replace(
            self._input, checkpoint=checkpoint, prompts=[_message(p) for p in prompts]
        )
        try:
            handle = await self.client.start_workflow(
                self._workflow,
                to_payload(run),
                id=self.workflow_id,
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                task_timeout=_seconds(self._task_timeout),
            )
        except WorkflowAlreadyStartedError as exc:
            raise AlreadyRunning(
                f"conversation {self.conversation_id!r} has a run in progress"
            ) from exc
        return AgentRun(handle, self._events)

    async def prompt(
        self,
        *prompts: str | AgentMessage,
        checkpoint: Checkpoint | None = None,
        raise_on_error: bool = True,
    ) -> AgentResult[str]:
        """Run ``prompts`` to the end and return the result.

        As ``Agent.prompt``: a run that ends in a model error, a hook failure or an abort
        raises its typed error (carrying the result) unless ``raise_on_error=False``.

        Raises:
            AlreadyRunning: the conversation has a run in progress.
            AgentError: the run failed (``ModelError``, ``HookFailed``, ``Aborted``).
            temporalio.client.WorkflowFailureError: the workflow itself failed.
        """
        result: AgentResult[str] = await (
            await self.start(*prompts, checkpoint=checkpoint)
        ).result()
        if raise_on_error:
            result.raise_for_error()
        return result

    async def continue_run(
        self, *, checkpoint: Checkpoint | None = None, raise_on_error: bool = True
    ) -> AgentResult[str]:
        """Run from the checkpoint with no new prompt (after queued messages, a tool result).

        Raises:
            AlreadyRunning: the conversation has a run in progress.
            AgentError: the run failed, as ``prompt``.
            temporalio.client.WorkflowFailureError: the workflow itself failed.
        """
        return await self.prompt(checkpoint=checkpoint, raise_on_error=raise_on_error)

    def stream(
        self, *prompts: str | AgentMessage, checkpoint: Checkpoint | None = None
    ) -> RunEvents:
        """Start a run and read its events: ``async with agent.stream("hi") as events:``.

        Subscribes before the run starts, so no event is missed. The iteration ends after
        ``AgentEnd``; ``events.run`` is the run (``await events.run.result()``).

        Raises:
            ValueError: no event source was given.
        """
        if self._events is None:
            raise ValueError("no event source: give TemporalAgent(events=...)")
        return RunEvents(
            self._events,
            self.client.get_workflow_handle(self.workflow_id),
            start=lambda: self.start(*prompts, checkpoint=checkpoint),
        )

    # ---------------------------------------------------------------- the current run

    async def steer(self, message: str | AgentMessage) -> None:
        """Steer the current run (see ``AgentRun.steer``).

        Raises:
            temporalio.service.RPCError: no run is in progress.
        """
        await self.current().steer(message)

    async def follow_up(self, message: str | AgentMessage) -> None:
        """Queue a follow-up for the current run (see ``AgentRun.follow_up``).

        Raises:
            temporalio.service.RPCError: no run is in progress.
        """
        await self.current().follow_up(message)

    async def approve(self, call_id: str, *, arguments: Any = msgspec.UNSET) -> None:
        """Approve a call of the current run (see ``AgentRun.approve``).

        Raises:
            LookupError: no call with this id is waiting.
        """
        await self.current().approve(call_id, arguments=arguments)

    async def reject(self, call_id: str, reason: str = "") -> None:
        """Reject a call of the current run (see ``AgentRun.reject``).

        Raises:
            LookupError: no call with this id is waiting.
        """
        await self.current().reject(call_id, reason)

    async def abort(self) -> None:
        """Abort the current run (it ends ``aborted``, its result kept)."""
        await self.current().abort()

    async def wait_idle(self) -> AgentResult[str]:
        """Wait for the current run to end; its result.

        Raises:
            temporalio.client.WorkflowFailureError: the run failed.
        """
        return await self.current().result()

    async def state(self) -> RunState:
        """The current run's state."""
        return await self.current().state()

    async def checkpoint(self) -> Checkpoint:
        """The conversation as it stands (``Agent.from_checkpoint`` takes it)."""
        return await self.current().checkpoint()
