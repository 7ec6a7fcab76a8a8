"""Perform a ``Scenario`` through one of the three ways to run the loop, and record it all.

Entries: ``run_loop`` (events by callback), ``agent_loop`` (events through the channel, read
with ``async for``) and ``agent`` (an ``Agent`` with a subscriber; steering and follow-ups go
through ``Agent.steer``/``Agent.follow_up``, abort through ``Agent.abort``). Interventions fire
when the consumer sees their event: synchronously at emission for ``run_loop`` and ``agent``,
when the event is read for ``agent_loop``.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel

import agentloop as al

from .fakes import MODEL, Queue, ScriptPlayer, Tracker, ZeroDelayRetry, make_tools

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .strategies import PolicyPlan, Scenario

__all__ = ["ENTRIES", "Entry", "Outcome", "perform", "perform_sync", "prior_history"]

Entry = Literal["run_loop", "agent_loop", "agent"]
ENTRIES: tuple[Entry, ...] = ("run_loop", "agent_loop", "agent")


def prior_history() -> list[al.AgentMessage]:
    """A well-paired earlier conversation, for runs that do not start from nothing."""
    call = al.ToolCall(id="h1", name="ok", arguments={"n": 0})
    return [
        al.UserMessage.from_text("earlier"),
        al.AssistantMessage(content=[call], stop_reason=al.StopReason.TOOL_USE),
        al.ToolResultMessage(tool_call_id="h1", tool_name="ok", content=[al.Text(text="r")]),
        al.AssistantMessage(content=[al.Text(text="earlier answer")]),
    ]


def _transform(
    messages: list[al.AgentMessage], ctx: al.loop.TransformContext
) -> list[al.AgentMessage]:
    """A context transformer that reports a compaction when asked to recover from overflow."""
    if ctx.overflow:
        ctx.report("pruned after an overflow")
    return messages


class _Policies:
    """Live policies following a ``PolicyPlan``."""

    def __init__(self, plan: PolicyPlan) -> None:
        self.plan = plan
        self.loop_evaluations = 0
        self.approvals = 0

    def pre_turn(self, ctx: al.policy.PolicyContext) -> al.policy.PolicyVerdict:
        for turn, verdict in self.plan.pre_turn:
            if turn == ctx.turn:
                return self._turn_verdict(verdict, f"inject-pre-{turn}", ctx)
        return al.policy.CONTINUE

    def post_turn(self, ctx: al.policy.PolicyContext) -> al.policy.PolicyVerdict:
        for turn, verdict in self.plan.post_turn:
            if turn == ctx.turn:
                return self._turn_verdict(verdict, f"inject-post-{turn}", ctx)
        return al.policy.CONTINUE

    def post_loop(self, ctx: al.policy.PolicyContext) -> al.policy.PolicyVerdict:
        n = self.loop_evaluations
        self.loop_evaluations += 1
        for nth, verdict in self.plan.post_loop:
            if nth == n:
                return self._turn_verdict(verdict, f"inject-loop-{n}", ctx)
        return al.policy.CONTINUE

    @staticmethod
    def _turn_verdict(
        verdict: str, text: str, ctx: al.policy.PolicyContext
    ) -> al.policy.PolicyVerdict:
        if verdict == "stop":
            return al.policy.Stop(reason="planned")
        if verdict == "inject":
            return al.policy.Inject(messages=[al.UserMessage.from_text(text)])
        if verdict == "replace":
            return al.policy.Replace(
                tool_results=[
                    al.ToolResultMessage(
                        tool_call_id=r.tool_call_id,
                        tool_name=r.tool_name,
                        content=[al.Text(text="replaced")],
                    )
                    for r in ctx.tool_results
                ]
            )
        if verdict == "raise":
            raise RuntimeError("planned policy failure")
        return al.policy.CONTINUE

    async def approve(
        self, call: al.ToolCall, tool: al.AgentTool | None
    ) -> al.policy.ApprovalDecision:
        n = self.approvals
        self.approvals += 1
        await anyio.lowlevel.checkpoint()
        for nth, decision in self.plan.approval or ():
            if nth == n:
                if decision == "reject":
                    return al.policy.Rejected(reason="planned")
                if decision == "rewrite":
                    return al.policy.ApprovedWith(arguments={"n": 1})
                raise RuntimeError("planned approval failure")
        return al.policy.APPROVED

    def pre_dispatch(self, ctx: al.policy.DispatchContext) -> al.policy.DispatchVerdict:
        ids = [c.id for c in ctx.batch]
        position = ids.index(ctx.call.id) if ctx.call.id in ids else -1
        for turn, at, verdict in self.plan.pre_dispatch:
            if turn == ctx.turn and at == position:
                if verdict == "skip":
                    return al.policy.Skip(reason="planned")
                if verdict == "stop":
                    return al.policy.Stop(reason="planned")
                if verdict == "rewrite" and ctx.call.arguments != {"n": 0}:
                    return al.policy.Rewrite(arguments={"n": 0})
                if verdict == "raise":
                    raise RuntimeError("planned dispatch policy failure")
        return al.policy.ALLOW


@dataclasses.dataclass
class _Policy:
    fn: Any
    name: str

    def evaluate(self, ctx: Any) -> Any:
        return self.fn(ctx)


@dataclasses.dataclass
class Outcome:
    """Everything a run did, as seen from outside."""

    scenario: Scenario
    entry: Entry
    events: list[al.AgentEvent]
    result: al.AgentResult
    history: list[al.AgentMessage]
    steering_sent: list[str]
    follow_up_sent: list[str]
    steering_left: list[str]
    follow_up_left: list[str]
    tracker: Tracker
    abort_at: int | None
    follow_up_polls: list[int] | None
    follow_up_at_abort: list[str] | None
    follow_up_at_error_end: list[str] | None
    tasks_before: int
    tasks_after: int
    agent_messages: list[al.AgentMessage] | None = None
    unpaired_requests: list[str] = dataclasses.field(default_factory=list)
    executions: list[str] = dataclasses.field(default_factory=list)
    invalid_executions: list[Any] = dataclasses.field(default_factory=list)


def _text(message: al.AgentMessage) -> str:
    if isinstance(message, al.UserMessage):
        return "".join(b.text for b in message.content if isinstance(b, al.Text))
    return ""


async def perform(
    scenario: Scenario, entry: Entry, *, failing_subscriber_at: int | None = None
) -> Outcome:
    """Run ``scenario`` through ``entry`` on the current backend and record everything.

    With ``failing_subscriber_at`` (entry ``agent`` only), another subscriber, subscribed
    first, raises when it sees that event.
    """
    tasks_before = len(anyio.get_running_tasks())
    tracker = Tracker()
    tools = make_tools(tracker)
    player = ScriptPlayer(scenario.script, tracker)
    events: list[al.AgentEvent] = []
    history = prior_history() if scenario.history else []
    prompts: list[al.AgentMessage] = [al.UserMessage.from_text(p) for p in scenario.prompts]
    steering = Queue(scenario.steering_mode, clock=lambda: len(events))
    follow_up = Queue(scenario.follow_up_mode, clock=lambda: len(events))
    plan = _Policies(scenario.policies)
    policy_kwargs: dict[str, Any] = {}
    if scenario.policies.approval is not None:
        policy_kwargs["approval"] = plan.approve
    if not scenario.policies.empty:
        policy_kwargs |= {
            "pre_turn_policies": [_Policy(plan.pre_turn, "pre")],
            "pre_dispatch_policies": [_Policy(plan.pre_dispatch, "dispatch")],
            "post_turn_policies": [_Policy(plan.post_turn, "post")],
            "post_loop_policies": [_Policy(plan.post_loop, "loop")],
        }
    scope = anyio.CancelScope()
    agent: al.Agent | None = None
    if entry == "agent":
        agent = al.Agent(
            model=MODEL,
            stream_fn=player,
            tools=tools,
            messages=history,
            steering_mode=scenario.steering_mode,
            follow_up_mode=scenario.follow_up_mode,
            retry_strategy=ZeroDelayRetry(),
            transform_context=_transform,
            tool_execution=scenario.tool_execution,
            max_concurrent_tools=scenario.max_concurrent_tools,
            **policy_kwargs,
        )

    steering_sent: list[str] = []
    follow_up_sent: list[str] = []

    def steer(text: str) -> None:
        steering_sent.append(text)
        if agent is not None:
            agent.steer(text)
        else:
            steering.put(al.UserMessage.from_text(text))

    def queue_follow_up(text: str) -> None:
        follow_up_sent.append(text)
        if agent is not None:
            agent.follow_up(text)
        else:
            follow_up.put(al.UserMessage.from_text(text))

    def follow_ups_left() -> list[str]:
        items = agent.queued_follow_up if agent is not None else list(follow_up.items)
        return [_text(m) for m in items]

    for text in scenario.queued_steering:
        steer(text)
    for text in scenario.queued_follow_up:
        queue_follow_up(text)

    pending = list(scenario.interventions)
    seen: dict[str, int] = {}
    abort_at: int | None = None
    at_abort: list[str] | None = None
    at_error_end: list[str] | None = None

    def on_event(event: al.AgentEvent) -> None:
        nonlocal abort_at, at_abort, at_error_end
        index = len(events)
        events.append(event)
        if (
            at_error_end is None
            and isinstance(event, al.TurnEnd)
            and event.reason in (al.TurnEndReason.ERROR, al.TurnEndReason.ABORTED)
        ):
            at_error_end = follow_ups_left()
        name = type(event).__name__
        seen[name] = seen.get(name, -1) + 1
        due = [
            i for i in pending if i.nth <= (index if i.anchor == "any" else seen.get(i.anchor, -1))
        ]
        for action in due:
            pending.remove(action)
            if action.action == "steer":
                steer(action.text)
            elif action.action == "follow_up":
                queue_follow_up(action.text)
            elif abort_at is None:
                abort_at = index
                tracker.abort_requested = True
                at_abort = follow_ups_left()
                if agent is not None:
                    agent.abort()
                else:
                    scope.cancel()

    config = al.loop.AgentLoopConfig(
        model=MODEL,
        stream_fn=player,
        tools=tools,
        retry_strategy=ZeroDelayRetry(),
        transform_context=_transform,
        get_steering_messages=steering,
        get_follow_up_messages=follow_up,
        tool_execution=scenario.tool_execution,
        max_concurrent_tools=scenario.max_concurrent_tools,
        **policy_kwargs,
    )
    context = al.loop.AgentContext(messages=list(history))
    if entry == "run_loop":
        result = await al.loop.run_loop(
            prompts, context, config, on_event=on_event, cancel_scope=scope
        )
    elif entry == "agent_loop":
        async with al.loop.agent_loop(prompts, context, config, cancel_scope=scope) as stream:
            async for event in stream:
                on_event(event)
        result = stream.result
    else:
        assert agent is not None
        if failing_subscriber_at is not None:
            seen_by_failing: list[al.AgentEvent] = []

            def failing(event: al.AgentEvent) -> None:
                seen_by_failing.append(event)
                if len(seen_by_failing) > failing_subscriber_at:
                    raise RuntimeError("subscriber failure")

            agent.subscribe(failing)
        agent.subscribe(on_event)
        result = await agent.prompt(prompts, raise_on_error=False)

    if agent is not None:
        steering_left = [_text(m) for m in agent.queued_steering]
    else:
        steering_left = [_text(m) for m in steering.items]
    return Outcome(
        scenario=scenario,
        entry=entry,
        events=events,
        result=result,
        history=history,
        steering_sent=steering_sent,
        follow_up_sent=follow_up_sent,
        steering_left=steering_left,
        follow_up_left=follow_ups_left(),
        tracker=tracker,
        abort_at=abort_at,
        follow_up_polls=None if agent is not None else [at for at, _ in follow_up.polls],
        follow_up_at_abort=at_abort,
        follow_up_at_error_end=at_error_end,
        tasks_before=tasks_before,
        tasks_after=len(anyio.get_running_tasks()),
        agent_messages=agent.messages if agent is not None else None,
        unpaired_requests=player.unpaired_requests,
        executions=[call_id for t in tools for call_id in t.executions],
        invalid_executions=[a for t in tools for a in t.invalid_arguments],
    )


def perform_sync(
    scenario: Scenario, entry: Entry, backend: str, *, failing_subscriber_at: int | None = None
) -> Outcome:
    """``perform`` on a fresh event loop of ``backend``."""
    return anyio.run(
        functools.partial(perform, failing_subscriber_at=failing_subscriber_at),
        scenario,
        entry,
        backend=backend,
    )


def texts(messages: Sequence[al.AgentMessage]) -> list[str]:
    """The text of every user message, in order."""
    return [_text(m) for m in messages if isinstance(m, al.UserMessage)]
