"""What a run did, as data: turns, tool calls with their arguments and results, usage, cost,
timing, and the runs of sub-agents nested under the tool calls that started them.

``TrajectoryCollector`` is an event subscriber (``agent.subscribe(collector)``, or
``run_loop(..., on_event=collector)``) that builds a ``Trajectory`` from the events of one run.
Sub-agents' events arrive relayed (``agentloop.multi.SubAgentEvent``, between
``DelegationStart`` and ``DelegationEnd``); each sub-agent's run becomes a ``Trajectory`` of its
own, hung on the ``ToolStep`` whose call started it.

Times are seconds since the run started, read from ``clock`` (``time.perf_counter``) when each
event arrives.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    AssistantMessage,
    Cost,
    MessageEnd,
    StopReason,
    StreamRetry,
    Thinking,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolResultMessage,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    Usage,
    UserMessage,
    extract_text,
)
from agentloop.multi import DelegationEnd, DelegationStart, Hop, SubAgentEvent

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["ToolStep", "Trajectory", "TrajectoryCollector", "Turn"]


class ToolStep(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One tool call: what the model asked for, what came back, and when.

    ``arguments`` are the ones the model sent. ``sub_agent`` is the run of the sub-agent the
    call started, if it started one.
    """

    call_id: str
    name: str
    arguments: Any = None
    result: str = ""
    is_error: bool = False
    turn: int = 0
    started: float = 0.0
    ended: float = 0.0
    sub_agent: Trajectory | None = None


class Turn(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One turn: the model's answer (text, reasoning, the calls it asked for) and its spending.

    ``retries`` counts the model calls of the turn that failed and were tried again.
    """

    index: int
    text: str = ""
    thinking: str = ""
    tool_calls: list[str] = msgspec.field(default_factory=list)
    stop_reason: StopReason | None = None
    end_reason: TurnEndReason | None = None
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    cost: Cost = msgspec.field(default_factory=Cost)
    retries: int = 0
    started: float = 0.0
    ended: float = 0.0


class Trajectory(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The record of one run of an agent (and, nested, of its sub-agents).

    ``usage`` and ``cost`` cover the whole tree (the agent's own model calls and its
    sub-agents'), as ``AgentResult`` does. ``output`` is the run's output: the final answer's
    text (``text``), or the typed value of a run with an output type when the runner knows it.
    """

    agent: str = "agent"
    prompt: str = ""
    text: str = ""
    output: Any = ""
    stop_reason: StopReason | None = None
    error: str | None = None
    turns: list[Turn] = msgspec.field(default_factory=list)
    tool_calls: list[ToolStep] = msgspec.field(default_factory=list)
    usage: Usage = msgspec.field(default_factory=Usage)
    cost: Cost = msgspec.field(default_factory=Cost)
    started: float = 0.0
    duration: float = 0.0

    def tool_names(self, *, tree: bool = False) -> list[str]:
        """The names of the tools called, in the order the model asked for them; with
        ``tree=True``, each sub-agent's calls follow the call that started it."""
        steps = self.walk_tool_calls() if tree else iter(self.tool_calls)
        return [step.name for step in steps]

    def walk_tool_calls(self) -> Iterator[ToolStep]:
        """Every tool call of the tree, depth first: a call, then its sub-agent's calls."""
        for step in self.tool_calls:
            yield step
            if step.sub_agent is not None:
                yield from step.sub_agent.walk_tool_calls()

    def sub_agents(self) -> list[Trajectory]:
        """The runs of the sub-agents this agent started, in call order (not deeper ones)."""
        return [s.sub_agent for s in self.tool_calls if s.sub_agent is not None]

    @property
    def total_tokens(self) -> int:
        """Tokens over the tree: ``usage.total``, or input plus output when that is unset."""
        return self.usage.total or (self.usage.input + self.usage.output)

    def without_timing(self) -> Trajectory:
        """The same trajectory with every time set to 0, to compare two runs' content."""
        steps = [
            msgspec.structs.replace(
                s,
                started=0.0,
                ended=0.0,
                sub_agent=None if s.sub_agent is None else s.sub_agent.without_timing(),
            )
            for s in self.tool_calls
        ]
        turns = [msgspec.structs.replace(t, started=0.0, ended=0.0) for t in self.turns]
        return msgspec.structs.replace(
            self, turns=turns, tool_calls=steps, started=0.0, duration=0.0
        )


# --------------------------------------------------------------------------- collecting

_Path = tuple[tuple[str, str], ...]


class _Call:
    __slots__ = (
        "arguments",
        "call_id",
        "child",
        "ended",
        "is_error",
        "name",
        "result",
        "started",
        "turn",
    )

    def __init__(self, call_id: str, name: str, arguments: Any, turn: int) -> None:
        self.call_id = call_id
        self.name = name
        self.arguments = arguments
        self.turn = turn
        self.result = ""
        self.is_error = False
        self.started: float | None = None
        self.ended: float | None = None
        self.child: _Run | None = None


class _Run:
    """What is known so far of one agent's run."""

    def __init__(self, agent: str, started: float) -> None:
        self.agent = agent
        self.prompt = ""
        self.text = ""
        self.stop_reason: StopReason | None = None
        self.error: str | None = None
        self.turns: list[dict[str, Any]] = []
        self.calls: dict[str, _Call] = {}
        self.usage = Usage()
        self.cost = Cost()
        self.children: list[_Run] = []
        self.started = started
        self.ended: float | None = None

    def turn(self, now: float) -> dict[str, Any]:
        if not self.turns:
            self.turns.append({"index": 0, "started": now})
        return self.turns[-1]

    def call(self, call_id: str, name: str, arguments: Any = None) -> _Call:
        call = self.calls.get(call_id)
        if call is None:
            index = self.turns[-1]["index"] if self.turns else 0
            call = self.calls[call_id] = _Call(call_id, name, arguments, index)
        return call

    def build(self, now: float) -> Trajectory:
        children = [c.build(now) for c in self.children]
        usage, cost = self.usage, self.cost
        for child in children:
            usage += child.usage
            cost += child.cost
        built = {id(c): t for c, t in zip(self.children, children, strict=True)}
        steps = [
            ToolStep(
                call_id=c.call_id,
                name=c.name,
                arguments=c.arguments,
                result=c.result,
                is_error=c.is_error,
                turn=c.turn,
                started=c.started if c.started is not None else 0.0,
                ended=c.ended if c.ended is not None else (now if c.started is not None else 0.0),
                sub_agent=None if c.child is None else built[id(c.child)],
            )
            for c in self.calls.values()
        ]
        turns = [Turn(**{"ended": now, **t}) for t in self.turns]
        end = self.ended if self.ended is not None else now
        return Trajectory(
            agent=self.agent,
            prompt=self.prompt,
            text=self.text,
            output=self.text,
            stop_reason=self.stop_reason,
            error=self.error,
            turns=turns,
            tool_calls=steps,
            usage=usage,
            cost=cost,
            started=self.started,
            duration=end - self.started,
        )


class TrajectoryCollector:
    """Builds the ``Trajectory`` of one run from its events.

    Subscribe it to an agent (``agent.subscribe(collector)``) or pass it as
    ``run_loop(..., on_event=collector)``; read ``trajectory()`` when the run is over (or at
    any time: a run cut short by a timeout still has a trajectory up to that point).

    Args:
        agent: the name of the agent whose run this is.
        clock: a monotonic clock in seconds.
    """

    def __init__(
        self, *, agent: str = "agent", clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self._clock = clock
        self._t0: float | None = None
        self._root = _Run(agent, 0.0)
        self._runs: dict[_Path, _Run] = {(): self._root}

    def _now(self) -> float:
        now = self._clock()
        if self._t0 is None:
            self._t0 = now
        return now - self._t0

    def __call__(self, event: AgentEvent) -> None:
        """Take one event of the run."""
        now = self._now()
        cls = type(event)
        if cls is SubAgentEvent:
            assert isinstance(event, SubAgentEvent)
            self._take(self._run_at(event.path, now), event.event, now)
        elif cls is DelegationStart:
            assert isinstance(event, DelegationStart)
            child = self._run_at(event.path, now)
            child.prompt = child.prompt or event.prompt
        elif cls is DelegationEnd:
            assert isinstance(event, DelegationEnd)
            child = self._run_at(event.path, now)
            child.ended = now
            child.stop_reason = event.stop_reason
            child.error = event.error
            child.text = child.text or event.output
        else:
            self._take(self._root, event, now)

    def _run_at(self, path: list[Hop], now: float) -> _Run:
        key: _Path = tuple((hop.call_id, hop.agent) for hop in path)
        run = self._runs.get(key)
        if run is None:
            parent = self._run_at(path[:-1], now)
            hop = path[-1]
            run = self._runs[key] = _Run(hop.agent, now)
            parent.children.append(run)
            parent.call(hop.call_id, hop.agent).child = run
        return run

    def _take(self, run: _Run, event: AgentEvent, now: float) -> None:
        cls = type(event)
        if cls is MessageEnd:
            assert isinstance(event, MessageEnd)
            message = event.message
            if type(message) is AssistantMessage:
                self._answer(run, message, now)
            elif type(message) is ToolResultMessage:
                call = run.call(message.tool_call_id, message.tool_name)
                call.result = extract_text(message.content)
                call.is_error = message.is_error
                if call.ended is None:
                    call.ended = now
            elif type(message) is UserMessage and not run.prompt:
                run.prompt = message.text
        elif cls is ToolExecutionStart:
            assert isinstance(event, ToolExecutionStart)
            run.call(event.call_id, event.name, event.arguments).started = now
        elif cls is ToolExecutionEnd:
            assert isinstance(event, ToolExecutionEnd)
            call = run.call(event.call_id, event.name)
            call.ended = now
            call.is_error = event.is_error
            call.result = extract_text(event.result.content)
        elif cls is TurnStart:
            assert isinstance(event, TurnStart)
            run.turns.append({"index": event.turn, "started": now})
        elif cls is TurnEnd:
            assert isinstance(event, TurnEnd)
            turn = run.turn(now)
            turn["end_reason"] = event.reason
            turn["ended"] = now
        elif cls is StreamRetry:
            turn = run.turn(now)
            turn["retries"] = turn.get("retries", 0) + 1
        elif cls is AgentStart:
            run.started = now
        elif cls is AgentEnd:
            run.ended = now

    def _answer(self, run: _Run, message: AssistantMessage, now: float) -> None:
        turn = run.turn(now)
        calls = message.tool_calls
        turn["text"] = message.text
        thinking = "".join(b.thinking for b in message.content if type(b) is Thinking)
        if thinking:
            turn["thinking"] = thinking
        turn["tool_calls"] = [c.id for c in calls]
        turn["stop_reason"] = message.stop_reason
        turn["usage"] = message.usage
        turn["cost"] = message.cost
        if message.error_message is not None:
            turn["error"] = message.error_message
        run.usage += message.usage
        run.cost += message.cost
        run.text = message.text
        run.stop_reason = message.stop_reason
        run.error = message.error_message
        for call in calls:
            step = run.call(call.id, call.name)
            step.name = call.name
            step.arguments = call.arguments
            step.turn = turn["index"]

    def trajectory(self) -> Trajectory:
        """The trajectory so far (complete once the run's ``AgentEnd`` has arrived)."""
        now = self._clock() - self._t0 if self._t0 is not None else 0.0
        return self._root.build(now)
