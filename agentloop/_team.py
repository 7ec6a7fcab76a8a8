"""Hand-offs: a team of agents passing one conversation between them.

Each member is offered a ``transfer_to_<name>`` tool for every other member. Calling it hands
the conversation over: the current run ends at the end of that turn, and the target agent
continues the same conversation (through an input filter, if the team has one), told who handed
over and why. A transfer to an unknown member, back to an agent already in the chain (a cycle)
or past the depth limit is refused with an error result the model can read; either way a
``TransferInitiated`` or ``TransferRejected`` event says what happened.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._events import AgentToolResult, TransferInitiated, TransferRejected
from ._extras import RunExtras
from ._policy import CONTINUE, PolicyContext, PolicyVerdict, Stop
from ._subagent import _minus_cost, _minus_usage
from ._tools import current_tool_context
from ._types import AgentMessage, Cost, Usage, UserMessage

if TYPE_CHECKING:
    from ._abc import OnUpdate
    from ._agent import Agent
    from ._events import AgentEvent
    from ._types import AgentResult

__all__ = ["Team", "TeamResult"]

InputFilter = Callable[[list[AgentMessage]], list[AgentMessage]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TeamResult:
    """What a team's run produced.

    Attributes:
        output: the last agent's output (``None`` when its leg failed: see ``ok``).
        agent: the name of the agent that finished.
        chain: every agent that held the conversation, in order.
        results: each leg's ``AgentResult``, in order.
        messages: the conversation as the last agent had it (after any ``input_filter``: the
            earlier agents' own messages are in ``results``).
        usage: summed over every leg.
        cost: summed over every leg.
    """

    output: Any
    agent: str
    chain: list[str]
    results: list[AgentResult[Any]]
    messages: list[AgentMessage]
    usage: Usage
    cost: Cost

    @property
    def ok(self) -> bool:
        """Whether the last leg has an output (see ``AgentResult.ok``)."""
        return not self.results or self.results[-1].ok


class _State:
    def __init__(self, team: Team) -> None:
        self.team = team
        self.chain: list[str] = []
        self.pending: tuple[str, str] | None = None


class _TransferTool:
    """``transfer_to_<target>``: hand the conversation to another member."""

    requires_approval = False
    read_only = True

    def __init__(self, state: _State, source: str, target: str, description: str) -> None:
        self.state = state
        self.source = source
        self.target = target
        self.name = f"transfer_to_{target}"
        self.label = f"Transfer to {target}"
        self.description = f"Hand the conversation to {target}: {description}".rstrip(": ")
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "reason": {
                    "type": "string",
                    "format": "not-path",
                    "description": "Why, and what the next agent needs to know.",
                }
            },
            "required": ["reason"],
            "additionalProperties": False,
        }

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        ctx = current_tool_context()
        link = ctx.link if ctx is not None else None
        reason = str(arguments.get("reason", ""))
        state = self.state
        refusal = state.team._refusal(state, self.target)
        if refusal is None and state.pending is not None:
            refusal = f"a transfer to {state.pending[0]} is already under way"
        if refusal is not None:
            if link is not None:
                link.emit(TransferRejected(source=self.source, target=self.target, reason=refusal))
            return AgentToolResult.error(f"transfer to {self.target} rejected: {refusal}")
        state.pending = (self.target, reason)
        if link is not None:
            link.emit(TransferInitiated(source=self.source, target=self.target, reason=reason))
        return AgentToolResult.text(f"Transferred to {self.target}.")


class _EndOnTransfer:
    name = "team"

    def __init__(self, state: _State) -> None:
        self.state = state

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        pending = self.state.pending
        return Stop(reason=f"transferred to {pending[0]}") if pending is not None else CONTINUE


class Team:
    """Agents handing one conversation to each other.

    Args:
        agents: the members (distinct names; ``Agent(name=...)``).
        descriptions: what each member is for, by name (told to the others in their transfer
            tools' descriptions).
        max_transfers: the most hand-offs in one run of the team; more are refused.
        allow_return: whether an agent may be handed the conversation again (by default a
            transfer to an agent already in the chain is refused as a cycle).
        input_filter: what of the conversation the next agent sees (all of it by default).

    Raises:
        ValueError: two members share a name, or there are none.
    """

    def __init__(
        self,
        agents: Sequence[Agent[Any]],
        *,
        descriptions: dict[str, str] | None = None,
        max_transfers: int = 8,
        allow_return: bool = False,
        input_filter: InputFilter | None = None,
    ) -> None:
        names = [a.name for a in agents]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"a team needs members with distinct names, not {names!r}")
        self.agents = {a.name: a for a in agents}
        self.descriptions = dict(descriptions or {})
        self.max_transfers = max_transfers
        self.allow_return = allow_return
        self.input_filter = input_filter

    def _refusal(self, state: _State, target: str) -> str | None:
        if target not in self.agents:
            return f"there is no agent called {target!r}"
        if not self.allow_return and target in state.chain:
            return f"{target} already had the conversation (a cycle: {' -> '.join(state.chain)})"
        if len(state.chain) - 1 >= self.max_transfers:
            return f"the conversation was handed over {self.max_transfers} times already"
        return None

    def _extras(self, state: _State, source: str) -> RunExtras:
        tools = [
            _TransferTool(state, source, name, self.descriptions.get(name, ""))
            for name in self.agents
            if name != source
        ]
        policy = _EndOnTransfer(state)
        return RunExtras(tools=tools, post_turn_policies=[policy])

    async def run(
        self,
        prompt: str | AgentMessage,
        *,
        start: str | None = None,
        on_event: Callable[[AgentEvent], object] | None = None,
        raise_on_error: bool = True,
    ) -> TeamResult:
        """Run the team on ``prompt``, starting with ``start`` (the first member by default).

        Each member's history is set to the conversation before its leg; ``on_event`` sees
        every member's events. As with ``Agent.prompt``, a run whose last leg failed raises
        that leg's typed error (carrying its ``AgentResult``) unless ``raise_on_error=False``.

        Raises:
            KeyError: ``start`` names no member.
            AlreadyRunning: a member is running already.
            AgentError: the last leg failed (``ModelError``, ``HookFailed``, ``Aborted``).
        """
        state = _State(self)
        name = start or next(iter(self.agents))
        agent = self.agents[name]
        conversation: list[AgentMessage] = []
        prompts: list[AgentMessage] = [
            UserMessage.from_text(prompt) if isinstance(prompt, str) else prompt
        ]
        results: list[AgentResult[Any]] = []
        usage, cost = Usage(), Cost()
        while True:
            state.chain.append(name)
            state.pending = None
            agent.replace_messages(conversation)
            handle = agent.subscribe(on_event) if on_event is not None else None
            before = (agent.usage, agent.cost)
            try:
                result = await agent._execute(prompts, None, [self._extras(state, name)])
            finally:
                if handle is not None:
                    agent.unsubscribe(handle)
            usage = usage + _minus_usage(agent.usage, before[0])
            cost = cost + _minus_cost(agent.cost, before[1])
            results.append(result)
            conversation = agent.messages
            if state.pending is None:
                if raise_on_error:
                    result.raise_for_error()
                return TeamResult(
                    output=result.output if result.ok else None,
                    agent=name,
                    chain=list(state.chain),
                    results=results,
                    messages=conversation,
                    usage=usage,
                    cost=cost,
                )
            target, reason = state.pending
            handover = f"(The conversation was handed to you by {name}: {reason})"
            prompts = [UserMessage.from_text(handover)]
            if self.input_filter is not None:
                conversation = list(self.input_filter(conversation))
            name, agent = target, self.agents[target]
