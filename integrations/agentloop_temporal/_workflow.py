"""The workflow: one agent run, with the loop inside Temporal's deterministic event loop.

Temporal's workflow event loop is an asyncio loop of its own, replayed from history after a
crash; the loop runs there through anyio's asyncio backend (trio cannot run inside a
workflow). Every model call and every tool call is an activity, so what they did is recorded
and never done again on replay. What stays in the workflow is deterministic: the loop's
bookkeeping, policies, approvals (waiting for a human's update), the queues fed by signals, and
the messages' timestamps, which come from the workflow's clock (``agentloop.loop.use_clock``).

The module runs inside Temporal's sandbox with the core imported afresh, so the sandbox checks
every call the loop makes: no wall clock, no threads, no I/O.
"""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    import anyio
    import msgspec

    # anyio loads its asyncio backend on first use; loading it now, outside the workflow's
    # run, is what lets the sandbox pass it through.
    importlib.import_module("anyio._backends._asyncio")

from agentloop import (
    AgentEnd,
    AgentEvent,
    AgentMessage,
    AgentResult,
    AgentToolResult,
    AssistantMessage,
    Checkpoint,
    Cost,
    MessageEnd,
    MessageUpdate,
    ModelSpec,
    StopReason,
    StreamOptions,
    ToolCall,
    TurnStart,
    Usage,
)
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop, use_clock
from agentloop.policy import APPROVED, ApprovalDecision, ApprovedWith, Rejected
from agentloop.retry import NoRetry
from agentloop.stream import AssistantMessageEvent, ErrorEvent, LlmContext

from ._calls import (
    RemoteTool,
    await_activity,
    failure,
    messages_of,
    retry_policy,
    take,
)
from ._data import (
    DESCRIBE_ACTIVITY,
    MODEL_ACTIVITY,
    PUBLISH_ACTIVITY,
    TOOL_ACTIVITY,
    WORKFLOW_NAME,
    Approval,
    CallOptions,
    ModelCall,
    ModelReply,
    PublishInput,
    RunInput,
    RunOutput,
    RunState,
    ToolCallInput,
    ToolReply,
    ToolSpec,
    from_payload,
    to_payload,
)
from ._records import ApprovalRequested, RunEvent, StreamRecord

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

# The loop imports these lazily; imported with the workflow, they load once per sandbox instead
# of in the middle of a run.
importlib.import_module("agentloop._turn")
importlib.import_module("agentloop._context")

__all__ = ["AgentWorkflow"]

_PUBLISH_TIMEOUT = timedelta(seconds=10)
_PUBLISH_RETRY = RetryPolicy(maximum_attempts=3)


def _now_ms() -> int:
    return workflow.time_ns() // 1_000_000


@workflow.defn(name=WORKFLOW_NAME)
class AgentWorkflow:
    """One agent run: ``run`` takes a ``RunInput`` and returns a ``RunOutput`` (as payloads).

    Signals ``steer`` and ``follow_up`` queue messages; the update ``approve`` answers a tool
    call waiting for approval; the queries ``state`` and ``checkpoint`` read the run; cancelling
    the workflow aborts the run, which still returns its result (stop reason ``aborted``).

    Subclass it (with ``@workflow.defn(name=...)`` of its own) and override ``configure`` to add
    policies or context transformers: they run in the workflow, so they must be deterministic.
    """

    def __init__(self) -> None:
        self._input: RunInput | None = None
        self._steering: list[AgentMessage] = []
        self._follow_up: list[AgentMessage] = []
        self._waiting: dict[str, ToolCall] = {}
        self._answers: dict[str, Approval] = {}
        self._outbox: list[StreamRecord] = []
        self._flushing = False
        self._seq = 0
        self._activities = 0
        self._messages: list[AgentMessage] = []
        self._ended: list[AgentMessage] | None = None
        self._tool_names: list[str] = []
        self._turn = 0
        self._usage = Usage()
        self._cost = Cost()
        self._finished = False

    # ---------------------------------------------------------------- the run

    @workflow.run
    async def run(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Run the loop to its end; returns the ``RunOutput`` payload."""
        run = self._input = from_payload(payload, RunInput)
        checkpoint = run.checkpoint
        self._messages = list(checkpoint.messages)
        # Signals delivered with the start come after what the checkpoint had queued.
        self._steering[:0] = checkpoint.steering
        self._follow_up[:0] = checkpoint.follow_up
        with use_clock(_now_ms):
            result = await self._run_loop(run, checkpoint)
        self._finished = True
        await self._flush()
        output = RunOutput(result=result, checkpoint=self._checkpoint())
        return to_payload(output)  # type: ignore[no-any-return]

    async def _run_loop(self, run: RunInput, checkpoint: Checkpoint) -> AgentResult[str]:
        try:
            names = run.tools if run.tools is not None else (checkpoint.tool_names or None)
            specs = await self._describe(names)
            self._tool_names = [spec.name for spec in specs]
            config = AgentLoopConfig(
                model=checkpoint.model,
                stream_fn=self._stream,
                stream_options=msgspec.structs.replace(run.stream_options, api_key=None),
                tools=[RemoteTool(spec, self._call_tool) for spec in specs],
                # Temporal retries failed model calls (the activity's retry policy).
                retry_strategy=NoRetry(),
                get_steering_messages=self._take_steering,
                # A signal cannot reach into the running batch: steering is taken when a call
                # ends (its activity's completion), then the others are cancelled.
                steering_interrupt="after_call",
                get_follow_up_messages=self._take_follow_up,
                approval=self._approve if run.approval != "none" else None,
                tool_execution=run.tool_execution,
                max_concurrent_tools=run.max_concurrent_tools,
                agent_name=run.agent_name,
                conversation_id=run.conversation_id,
            )
            config = self.configure(config)
            context = AgentContext(system_prompt=checkpoint.system_prompt, messages=self._messages)
            return await run_loop(run.prompts, context, config, on_event=self._on_event)
        except anyio.get_cancelled_exc_class():
            # The workflow was cancelled: the loop ended the run as aborted (its closing events
            # are out); its result is built from them, as the loop would have.
            return self._aborted(run)

    def configure(self, config: AgentLoopConfig) -> AgentLoopConfig:
        """Adjust the loop's configuration (policies, transformers); the default keeps it.

        Whatever is added runs inside the workflow: it must be deterministic (no clock, no
        randomness, no I/O).
        """
        return config

    def _aborted(self, run: RunInput) -> AgentResult[str]:
        if self._ended is None:
            # Cancelled before the loop started: the prompts are kept, as an abort keeps them.
            self._ended = list(run.prompts)
            self._messages.extend(run.prompts)
        usage, cost, output = Usage(), Cost(), ""
        for message in self._ended:
            if type(message) is AssistantMessage:
                usage, cost, output = usage + message.usage, cost + message.cost, message.text
        return AgentResult(
            messages=self._ended,
            stop_reason=StopReason.ABORTED,
            usage=usage,
            cost=cost,
            output=output,
        )

    def _checkpoint(self) -> Checkpoint:
        run = self._input
        assert run is not None
        base = run.checkpoint
        return Checkpoint(
            system_prompt=base.system_prompt,
            model=base.model,
            messages=list(self._messages),
            steering=list(self._steering),
            follow_up=list(self._follow_up),
            tool_names=self._tool_names or list(base.tool_names),
            usage=base.usage + self._usage,
            cost=base.cost + self._cost,
            plan_mode=base.plan_mode,
        )

    # ---------------------------------------------------------------- events

    def _on_event(self, event: AgentEvent) -> None:
        cls = type(event)
        if cls is MessageUpdate:
            return  # the model activity published it live; here it is a replay of the reply
        if cls is MessageEnd:
            assert isinstance(event, MessageEnd)
            message = event.message
            self._messages.append(message)
            if type(message) is AssistantMessage:
                self._usage = self._usage + message.usage
                self._cost = self._cost + message.cost
        elif cls is TurnStart:
            assert isinstance(event, TurnStart)
            self._turn = event.turn
        elif cls is AgentEnd:
            assert isinstance(event, AgentEnd)
            self._ended = list(event.messages)
        self._record(event)

    def _record(self, event: RunEvent) -> None:
        run = self._input
        if run is None or not run.publish:
            return
        info = workflow.info()
        self._outbox.append(
            StreamRecord(
                workflow_id=info.workflow_id,
                run_id=info.run_id,
                source="workflow",
                seq=self._seq,
                event=event,
            )
        )
        self._seq += 1

    async def _flush(self) -> None:
        """Publish the events recorded so far (one at a time, in order)."""
        await workflow.wait_condition(lambda: not self._flushing)
        if not self._outbox:
            return
        batch, self._outbox = self._outbox, []
        self._flushing = True
        try:
            await await_activity(
                workflow.start_local_activity(
                    PUBLISH_ACTIVITY,
                    to_payload(PublishInput(records=batch)),
                    start_to_close_timeout=_PUBLISH_TIMEOUT,
                    retry_policy=_PUBLISH_RETRY,
                )
            )
        except ActivityError:
            workflow.logger.warning("publishing %d events failed; the run goes on", len(batch))
        except BaseException:
            self._outbox[:0] = batch  # cancelled: published (again) at the end
            raise
        finally:
            self._flushing = False

    # ---------------------------------------------------------------- activities

    def _start(self, name: str, argument: Any, options: CallOptions, key: str) -> Any:
        return workflow.start_activity(
            name,
            to_payload(argument),
            activity_id=key,
            start_to_close_timeout=timedelta(seconds=options.start_to_close),
            heartbeat_timeout=timedelta(seconds=options.heartbeat),
            retry_policy=retry_policy(options),
        )

    async def _describe(self, names: list[str] | None) -> list[ToolSpec]:
        run = self._input
        assert run is not None
        options = run.tool_calls
        reply = await await_activity(
            workflow.start_activity(
                DESCRIBE_ACTIVITY,
                names,
                activity_id="describe-tools",
                start_to_close_timeout=timedelta(seconds=options.start_to_close),
                retry_policy=retry_policy(options),
            )
        )
        return [from_payload(spec, ToolSpec) for spec in reply]

    def _next_key(self, kind: str) -> str:
        self._activities += 1
        return f"{kind}-{self._activities}"

    def _stream(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._model_events(model, context, options)

    async def _model_events(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        run = self._input
        assert run is not None
        key = self._next_key("model")
        await self._flush()
        call = ModelCall(
            key=key,
            stream_fn=run.stream_fn,
            model=model,
            context=context,
            options=options,
            publish=run.publish,
        )
        try:
            reply = await await_activity(self._start(MODEL_ACTIVITY, call, run.model_calls, key))
        except ActivityError as exc:
            kind, text = failure(exc)
            yield ErrorEvent(kind=kind, message=f"model call failed on the workers: {text}")
            return
        for event in from_payload(reply, ModelReply).events:
            yield event

    async def _call_tool(self, call: ToolCall) -> ToolReply:
        run = self._input
        assert run is not None
        key = self._next_key("tool")
        await self._flush()
        argument = ToolCallInput(call=call, publish=run.publish)
        try:
            reply = await await_activity(self._start(TOOL_ACTIVITY, argument, run.tool_calls, key))
        except ActivityError as exc:
            _, text = failure(exc)
            error = AgentToolResult.error(f"tool call {call.name!r} failed on the workers: {text}")
            return ToolReply(result=error)
        decoded = from_payload(reply, ToolReply)
        self._usage = self._usage + decoded.usage  # the checkpoint counts sub-agents too
        self._cost = self._cost + decoded.cost
        return decoded

    # ---------------------------------------------------------------- queues (signals)

    @workflow.signal(name="steer")
    def steer(self, messages: list[Any]) -> None:
        """Queue steering messages: they interrupt the running tool batch."""
        self._steering.extend(messages_of(messages))

    @workflow.signal(name="follow_up")
    def follow_up(self, messages: list[Any]) -> None:
        """Queue messages for when the run would otherwise end."""
        self._follow_up.extend(messages_of(messages))

    async def _take_steering(self) -> Sequence[AgentMessage]:
        run = self._input
        return take(self._steering, run.steering_mode if run else "one_at_a_time")

    async def _take_follow_up(self) -> Sequence[AgentMessage]:
        run = self._input
        return take(self._follow_up, run.follow_up_mode if run else "one_at_a_time")

    # ---------------------------------------------------------------- approval (update)

    async def _approve(self, call: ToolCall, tool: Any) -> ApprovalDecision:
        run = self._input
        assert run is not None
        if run.approval == "tools" and not getattr(tool, "requires_approval", False):
            return APPROVED
        self._waiting[call.id] = call
        try:
            self._record(ApprovalRequested(call=call))
            await self._flush()
            try:
                await workflow.wait_condition(
                    lambda: call.id in self._answers, timeout=run.approval_timeout
                )
            except TimeoutError:
                timeout = run.approval_timeout or 0.0
                return Rejected(reason=f"no answer within {timeout:g} seconds")
        finally:
            self._waiting.pop(call.id, None)
        answer = self._answers.pop(call.id)
        if not answer.approved:
            return Rejected(reason=answer.reason or "rejected")
        if answer.arguments is not msgspec.UNSET:
            return ApprovedWith(arguments=answer.arguments)
        return APPROVED

    @workflow.update(name="approve")
    def approve(self, answer: dict[str, Any]) -> None:
        """Answer a tool call waiting for approval (an ``Approval`` payload)."""
        decided = from_payload(answer, Approval)
        self._answers[decided.call_id] = decided

    @approve.validator
    def _check_approve(self, answer: dict[str, Any]) -> None:
        decided = from_payload(answer, Approval)
        if decided.call_id not in self._waiting:
            raise ValueError(f"no tool call {decided.call_id!r} is waiting for approval")

    # ---------------------------------------------------------------- queries

    @workflow.query(name="state")
    def state(self) -> dict[str, Any]:
        """The run's ``RunState``."""
        state = RunState(
            status="finished" if self._finished else "running",
            turn=self._turn,
            messages=len(self._messages),
            usage=self._usage,
            cost=self._cost,
            steering=list(self._steering),
            follow_up=list(self._follow_up),
            pending_approvals=list(self._waiting.values()),
        )
        return to_payload(state)  # type: ignore[no-any-return]

    @workflow.query(name="checkpoint")
    def checkpoint(self) -> dict[str, Any]:
        """The conversation as it stands, as an ``agentloop.Checkpoint``."""
        if self._input is None:
            raise ValueError("the run has not started")
        return to_payload(self._checkpoint())  # type: ignore[no-any-return]
