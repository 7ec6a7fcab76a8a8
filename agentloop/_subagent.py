"""Sub-agents as tools: a tool call that runs another agent, inside the same task tree.

The sub-agent runs in the tool call's own task, so cancelling the call (abort, steering, a
timeout) cancels the sub-agent through the same cancel scopes; its run still ends with complete
events and a paired history, and what it committed and spent is kept. Its events are relayed,
live and in order, into the calling run's events as ``SubAgentEvent``s tagged with a path, between
a ``DelegationStart`` and a ``DelegationEnd``; its usage and cost are added to the calling run's;
an approval it needs is asked of the calling run's approval hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ._events import (
    AgentToolResult,
    DelegationEnd,
    DelegationStart,
    Hop,
    SubAgentEvent,
)
from ._extras import RunExtras
from ._tools import current_tool_context
from ._types import AgentMessage, Cost, StopReason, Usage, UserMessage

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ._abc import OnUpdate
    from ._agent import Agent
    from ._events import AgentEvent
    from ._tools import RunLink
    from ._types import AgentResult

__all__ = ["SubAgentTool", "run_child"]

_TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "format": "not-path",
            "description": "What the agent should do, with everything it needs to know.",
        }
    },
    "required": ["task"],
    "additionalProperties": False,
}


def _minus_usage(after: Usage, before: Usage) -> Usage:
    extra = {k: v - before.extra.get(k, 0) for k, v in after.extra.items()}
    return Usage(
        input=after.input - before.input,
        output=after.output - before.output,
        cache_read=after.cache_read - before.cache_read,
        cache_write=after.cache_write - before.cache_write,
        total=after.total - before.total,
        extra={k: v for k, v in extra.items() if v},
    )


def _minus_cost(after: Cost, before: Cost) -> Cost:
    extra = {k: v - before.extra.get(k, 0.0) for k, v in after.extra.items()}
    return Cost(
        input=after.input - before.input,
        output=after.output - before.output,
        cache_read=after.cache_read - before.cache_read,
        cache_write=after.cache_write - before.cache_write,
        total=after.total - before.total,
        extra={k: v for k, v in extra.items() if v},
    )


def _relay(link: RunLink, hop: Hop) -> Callable[[AgentEvent], None]:
    """A subscriber relaying a sub-agent's events into the calling run, with flat paths."""

    def relay(event: AgentEvent) -> None:
        cls = type(event)
        if cls is SubAgentEvent:
            assert isinstance(event, SubAgentEvent)
            link.emit(SubAgentEvent(path=[hop, *event.path], event=event.event))
        elif cls is DelegationStart or cls is DelegationEnd:
            assert isinstance(event, DelegationStart | DelegationEnd)
            link.emit(msgspec.structs.replace(event, path=[hop, *event.path]))
        else:
            link.emit(SubAgentEvent(path=[hop], event=event))

    return relay


async def run_child(
    agent: Agent[Any],
    prompt: str | None,
    *,
    link: RunLink | None,
    call_id: str,
    policies: Sequence[Any] = (),
    on_spent: Callable[[Usage, Cost], None] | None = None,
) -> AgentResult[Any]:
    """Run ``agent`` (a prompt, or a continue when ``prompt`` is None) as a child of the run
    ``link`` belongs to: events relayed, usage accounted, approval forwarded.

    Cancellation propagates (after the child's closing events and ``DelegationEnd``).
    ``on_spent`` is told what the run spent, however it ended.
    """
    hop = Hop(call_id=call_id, agent=agent.name)
    handle = agent.subscribe(_relay(link, hop)) if link is not None else None
    if link is not None:
        link.emit(DelegationStart(path=[hop], prompt=prompt or ""))
    usage, cost = agent.usage, agent.cost
    start = len(agent._messages)
    extras = RunExtras(
        pre_turn_policies=policies,
        post_turn_policies=policies,
        approval=link.approval if link is not None else None,
    )
    result: AgentResult[Any] | None = None
    try:
        prompts: list[AgentMessage] = (
            agent._continue_prompts() if prompt is None else [UserMessage.from_text(prompt)]
        )
        result = await agent._execute(prompts, None, [extras])
        return result
    finally:
        if handle is not None:
            agent.unsubscribe(handle)
        spent_usage = _minus_usage(agent.usage, usage)
        spent_cost = _minus_cost(agent.cost, cost)
        if on_spent is not None:
            on_spent(spent_usage, spent_cost)
        if link is not None:
            link.account(spent_usage, spent_cost)
            messages: list[AgentMessage] = agent._messages[start:]
            link.emit(
                DelegationEnd(
                    path=[hop],
                    stop_reason=result.stop_reason if result is not None else StopReason.ABORTED,
                    output=str(result.output if result.ok else result.text)
                    if result is not None
                    else "",
                    error=result.error if result is not None else None,
                    usage=spent_usage,
                    cost=spent_cost,
                    messages=list(messages),
                )
            )


class SubAgentTool:
    """A tool that runs another agent on a task and answers with what that agent said.

    Args:
        agent: an ``Agent`` (one call at a time: a second concurrent call is refused with an
            error result), or a function making a fresh one per call (calls may overlap).
        name: the tool's name.
        description: what the model is told the agent is for.
        input_type: the arguments as a type (a msgspec Struct, say); by default one string,
            ``task``. With a type, ``prompt`` makes the task text from the decoded arguments
            (by default, their JSON).
        prompt: makes the sub-agent's prompt from the (decoded) arguments.
        policies: policies run in every one of the sub-agent's turns, before and after it (a
            ``SharedBudget`` for limits over the whole tree of agents).
        read_only: whether plan mode may offer the tool.
        requires_approval: whether the approval gate asks about a call.
        timeout: seconds a call may take.
    """

    label: str

    def __init__(
        self,
        agent: Agent[Any] | Callable[[], Agent[Any]],
        *,
        name: str,
        description: str,
        input_type: Any = None,
        prompt: Callable[[Any], str] | None = None,
        policies: Sequence[Any] = (),
        read_only: bool = False,
        requires_approval: bool = False,
        timeout: float | None = None,
    ) -> None:
        self._agent = agent
        self._fresh = callable(agent)  # a factory; an Agent is not callable
        self.name = name
        self.label = name
        self.description = description
        self.input_type = input_type
        self.read_only = read_only
        self.requires_approval = requires_approval
        self.policies = list(policies)
        if timeout is not None:
            self.timeout = timeout
        if input_type is None:
            self.parameters = dict(_TASK_SCHEMA)
            self._prompt = prompt or (lambda arguments: str(arguments["task"]))
        else:
            from ._output import _schema_for

            schema, wrapped = _schema_for(input_type)
            if wrapped:
                raise TypeError("a sub-agent's input_type must be an object type (a Struct, say)")
            self.parameters = schema
            self._prompt = prompt or (lambda arguments: msgspec.json.encode(arguments).decode())

    def validate_arguments(self, arguments: Any) -> Any:
        """Decode the arguments (into ``input_type`` when there is one).

        Raises:
            ToolArgumentError: the arguments do not fit.
        """
        from ._errors import ToolArgumentError
        from ._tools import validator_for

        if self.input_type is None:
            return validator_for(self.parameters)(arguments)
        try:
            return msgspec.convert(arguments, self.input_type)
        except msgspec.ValidationError as exc:
            raise ToolArgumentError(str(exc)) from None

    def make_agent(self) -> Agent[Any]:
        """The agent for the next call."""
        return self._agent() if self._fresh else self._agent  # type: ignore[operator,return-value]

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        """Run the sub-agent on the task; its final answer (or its error) is the result."""
        ctx = current_tool_context()
        link = ctx.link if ctx is not None and ctx.call_id == call_id else None
        agent = self.make_agent()
        if agent.is_running:
            return AgentToolResult.error(
                f"agent {agent.name!r} is busy with another call; try again when it is done"
            )
        result = await run_child(
            agent, self._prompt(arguments), link=link, call_id=call_id, policies=self.policies
        )
        details = {"agent": agent.name, "stop_reason": str(result.stop_reason)}
        if result.stop_reason is StopReason.ERROR:
            return AgentToolResult.error(
                f"agent {agent.name!r} failed: {result.error}", details=details
            )
        if result.stop_reason is StopReason.ABORTED:
            return AgentToolResult.error(f"agent {agent.name!r} was aborted", details=details)
        return AgentToolResult.text(str(result.output), details=details)


class SharedBudget:
    """Limits over a whole tree of agents: one object shared by every agent of the tree.

    Give the same instance to the top agent as a pre-turn and a post-turn policy, and to each
    ``SubAgentTool`` (``policies=[budget]``) and team member: after every turn of any of them it
    counts that turn's answer; before every turn it stops the run once a limit is reached.

    Args:
        max_tokens: tokens (input and output) over the tree.
        max_cost: cost over the tree (from ``Cost.total``).
        max_turns: model calls over the tree.
    """

    name = "shared-budget"

    def __init__(
        self,
        *,
        max_tokens: int | None = None,
        max_cost: float | None = None,
        max_turns: int | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self.max_turns = max_turns
        self.tokens = 0
        self.cost = 0.0
        self.turns = 0

    def exceeded(self) -> str | None:
        """What limit was reached, if any."""
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"the tree used {self.tokens} of {self.max_tokens} tokens"
        if self.max_cost is not None and self.cost >= self.max_cost:
            return f"the tree spent {self.cost:.4f} of {self.max_cost}"
        if self.max_turns is not None and self.turns >= self.max_turns:
            return f"the tree took {self.turns} of {self.max_turns} turns"
        return None

    def evaluate(self, ctx: Any) -> Any:
        """Count the turn's tokens and turns; ``Stop`` once the tree is over a limit."""
        from ._policy import CONTINUE, Stop

        message = getattr(ctx, "message", None)
        if message is not None:  # after a turn: count its answer
            usage = message.usage
            self.tokens += usage.total or usage.input + usage.output
            self.cost += message.cost.total
            self.turns += 1
            return CONTINUE
        reason = self.exceeded()
        return CONTINUE if reason is None else Stop(reason=reason)
