"""Instrumented fakes the conformance properties run the loop against.

Everything here counts what it does, so the properties can check the loop from the outside:

* ``Tracker`` records every task-like piece of work the loop started in our code (each call of
  the stream function, each tool execution), when it finished, and how many scheduler steps each
  took after an abort was requested.
* ``ScriptPlayer`` is a ``StreamFn`` playing back ``StreamCall`` scripts (drawn by
  ``strategies.py``). It takes a checkpoint before every event, as a provider reading from the
  network does, and raises classified exceptions at scripted positions.
* ``BehaviourTool`` is one tool per behaviour: succeed, return an error result, raise, run long,
  stream updates, ignore cancellation for a bounded number of checkpoints.
* ``Queue`` is a steering or follow-up message source with the Agent's delivery modes, recording
  when it was polled.
* ``ZeroDelayRetry`` retries like ``ExponentialBackoff`` but never sleeps (a provider's
  ``retry_after`` hint is ignored), so retries cost a checkpoint, not wall time.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel

import agentloop as al

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence

    from agentloop._errors import ModelError

from .grammar import paired

__all__ = [
    "BEHAVIOURS",
    "RaiseKind",
    "MODEL",
    "TOOL_SCHEMA",
    "BehaviourTool",
    "Queue",
    "ScriptPlayer",
    "StreamCall",
    "Tracker",
    "ZeroDelayRetry",
    "make_tools",
]

MODEL = al.ModelSpec(provider="conformance", model_id="scripted")

Behaviour = Literal["ok", "error", "raise", "updates", "long", "shielded"]
BEHAVIOURS: tuple[Behaviour, ...] = ("ok", "error", "raise", "updates", "long", "shielded")

# Every tool takes ``{"n": <small non-negative integer>}``: how many steps it works.
TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 8}},
    "required": ["n"],
    "additionalProperties": False,
}

# A "long" tool works this many checkpoints more than any other tool can.
LONG_STEPS = 40

RaiseKind = Literal["throttled", "network", "overflow", "os", "runtime"]


class ZeroDelayRetry:
    """``ExponentialBackoff``'s retry decisions with no delay at all."""

    def __init__(self, max_attempts: int = 3) -> None:
        self._inner = al.retry.ExponentialBackoff(
            max_attempts=max_attempts, base_delay=0.0, jitter=False
        )

    def should_retry(self, error: ModelError, attempt: int) -> bool:
        return self._inner.should_retry(error, attempt)

    def delay(self, attempt: int, error: ModelError | None = None) -> float:
        return 0.0


class Tracker:
    """What the loop started in our code, and what it did after an abort was requested."""

    def __init__(self) -> None:
        self.live: dict[int, str] = {}
        self.started = 0
        self.finished = 0
        self.abort_requested = False
        # Scheduler steps each piece of work resumed from after the abort request, and the
        # number of those it was allowed (its shielded budget).
        self.steps_after_abort: dict[int, int] = {}
        self.shield_budget: dict[int, int] = {}
        self.entered_after_abort: list[str] = []
        self._next = 0

    def enter(self, name: str, *, shield_budget: int = 0) -> int:
        token = self._next
        self._next += 1
        self.live[token] = name
        self.started += 1
        self.shield_budget[token] = shield_budget
        if self.abort_requested:
            self.entered_after_abort.append(name)
        return token

    def exit(self, token: int) -> None:
        del self.live[token]
        self.finished += 1

    async def step(self, token: int) -> None:
        """One scheduler step of a piece of work: a checkpoint, counted after an abort."""
        await anyio.lowlevel.checkpoint()
        if self.abort_requested:
            self.steps_after_abort[token] = self.steps_after_abort.get(token, 0) + 1


@dataclasses.dataclass(frozen=True)
class StreamCall:
    """One scripted model call: the events it streams, then possibly an exception.

    Attributes:
        events: the provider events, in order (well-formed or not).
        raise_after: raise ``raise_kind`` after this many events (``None``: never).
        raise_kind: which exception to raise.
        label: what kind of script this is, for hypothesis' statistics and failure reports.
    """

    events: tuple[al.stream.AssistantMessageEvent, ...]
    raise_after: int | None = None
    raise_kind: RaiseKind = "network"
    label: str = "valid"

    def exception(self) -> Exception:
        kind = self.raise_kind
        if kind == "throttled":
            return al.ModelThrottled("scripted 429", retry_after=3.0)
        if kind == "network":
            return al.NetworkError("scripted connection reset")
        if kind == "overflow":
            return al.ContextWindowOverflow("scripted overflow")
        if kind == "os":
            return ConnectionResetError("scripted socket reset")
        return RuntimeError("scripted provider bug")


DONE_TEXT = "done"


def _done_events() -> tuple[al.stream.AssistantMessageEvent, ...]:
    return (
        al.stream.TextStart(index=0),
        al.stream.TextDelta(index=0, delta=DONE_TEXT),
        al.stream.TextEnd(index=0),
        al.stream.Done(stop_reason=al.StopReason.STOP),
    )


class ScriptPlayer:
    """A ``StreamFn`` that plays ``script`` one call at a time, then answers "done".

    The fallback answer keeps every run finite however many turns steering, follow-ups and
    policies add.

    Attributes:
        calls: how many times the loop called the stream function.
        unpaired_requests: why each request that was not well paired was not (the loop must
            repair the history it sends: every call answered, no orphan result).
    """

    def __init__(self, script: Sequence[StreamCall], tracker: Tracker) -> None:
        self.script = list(script)
        self.tracker = tracker
        self.calls = 0
        self.unpaired_requests: list[str] = []

    def __call__(
        self, model: al.ModelSpec, context: al.stream.LlmContext, options: al.StreamOptions
    ) -> AsyncIterator[al.stream.AssistantMessageEvent]:
        problem = paired(context.messages)
        if problem is not None:
            self.unpaired_requests.append(problem)
        if self.calls < len(self.script):
            call = self.script[self.calls]
        else:
            call = StreamCall(events=_done_events(), label="fallback")
        self.calls += 1
        return self._play(call)

    async def _play(self, call: StreamCall) -> AsyncIterator[al.stream.AssistantMessageEvent]:
        tracker = self.tracker
        token = tracker.enter("stream")
        try:
            for i, event in enumerate(call.events):
                if call.raise_after == i:
                    raise call.exception()
                await tracker.step(token)
                yield event
            if call.raise_after is not None and call.raise_after >= len(call.events):
                raise call.exception()
        finally:
            tracker.exit(token)


class BehaviourTool(al.Tool):
    """A tool whose name says what it does with its argument ``n``.

    * ``ok``: ``n`` checkpoints, then a text result.
    * ``error``: ``n`` checkpoints, then an error result.
    * ``raise``: ``n`` checkpoints, then raises.
    * ``updates``: ``n`` progress updates, a checkpoint after each, then a text result.
    * ``long``: ``LONG_STEPS + n`` checkpoints (longer than any other tool), then a result.
    * ``shielded``: ignores cancellation for ``n + 1`` checkpoints, then a result.
    """

    parameters = TOOL_SCHEMA

    def __init__(self, behaviour: Behaviour, tracker: Tracker) -> None:
        self.name = behaviour
        self.label = behaviour
        self.description = f"a tool that behaves as {behaviour!r}"
        self.behaviour = behaviour
        self.tracker = tracker
        self.executions: list[str] = []
        self.invalid_arguments: list[Any] = []

    async def execute(
        self, call_id: str, arguments: Any, on_update: al.abc.OnUpdate
    ) -> al.AgentToolResult:
        if not _valid(arguments):
            self.invalid_arguments.append(arguments)
        n = int(arguments["n"])
        behaviour = self.behaviour
        tracker = self.tracker
        self.executions.append(call_id)
        budget = n + 1 if behaviour == "shielded" else 0
        token = tracker.enter(f"tool {behaviour} {call_id}", shield_budget=budget)
        try:
            if behaviour == "shielded":
                with anyio.CancelScope(shield=True):
                    for _ in range(n + 1):
                        await tracker.step(token)
                await tracker.step(token)
            elif behaviour == "updates":
                for i in range(n):
                    on_update(f"{call_id} progress {i}")
                    await tracker.step(token)
            else:
                steps = n + LONG_STEPS if behaviour == "long" else n
                for _ in range(steps):
                    await tracker.step(token)
            if behaviour == "raise":
                raise RuntimeError(f"tool {call_id} failed as scripted")
            if behaviour == "error":
                return al.AgentToolResult.error(f"{call_id} error result")
            return al.AgentToolResult.text(f"{call_id} ok {n}")
        finally:
            tracker.exit(token)


def _valid(arguments: Any) -> bool:
    """Whether ``arguments`` match ``TOOL_SCHEMA`` (checked independently of the loop)."""
    if not isinstance(arguments, dict) or set(arguments) != {"n"}:
        return False
    n = arguments["n"]
    return type(n) is int and 0 <= n <= 8


def make_tools(tracker: Tracker) -> list[BehaviourTool]:
    return [BehaviourTool(b, tracker) for b in BEHAVIOURS]


class Queue:
    """A steering or follow-up source with the Agent's modes; records every poll.

    Attributes:
        polls: for each poll, the number of events emitted before it and what it returned.
    """

    def __init__(
        self, mode: Literal["one_at_a_time", "all"], clock: Callable[[], int] | None = None
    ) -> None:
        self.mode = mode
        self.items: deque[al.AgentMessage] = deque()
        self.polls: list[tuple[int, list[al.AgentMessage]]] = []
        self.clock = clock or (lambda: 0)

    def put(self, message: al.AgentMessage) -> None:
        self.items.append(message)

    async def __call__(self) -> list[al.AgentMessage]:
        if not self.items:
            taken: list[al.AgentMessage] = []
        elif self.mode == "all":
            taken = list(self.items)
            self.items.clear()
        else:
            taken = [self.items.popleft()]
        self.polls.append((self.clock(), taken))
        return taken
