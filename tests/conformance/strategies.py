"""Hypothesis strategies for the conformance suite: provider scripts, tool calls, interventions.

Reusable against any ``StreamFn``-driven loop. The pieces:

* ``answers()``: one well-formed model answer as a provider would stream it: text, thinking,
  tool calls and extension blocks, each block's text or JSON arguments split at arbitrary
  points, blocks optionally interleaved (as providers that stream parallel tool calls do), any
  stop reason, any usage; tool calls name a ``BehaviourTool`` (or an unknown tool) with
  arguments that do or do not match its schema, as JSON fragments or as an object.
* ``broken_calls()``: a model call that goes wrong: the stream ends without a terminal event, a
  delta arrives for a block never started, a block starts twice, tool arguments are not JSON,
  an ``ErrorEvent`` of any class (throttled with retry-after, context overflow, network, auth,
  content filter, aborted) arrives at any position, the stream raises a classified exception
  at any position, or events follow the end.
* ``scripts()``: a sequence of model calls, mostly answers, some broken.
* ``interventions()``: steering, follow-up and abort at arbitrary event positions.
* ``policy_plans()``: policies that stop, inject, skip, rewrite, replace or raise at chosen
  turns.
* ``scenarios()``: all of it, plus the prompts, an optional earlier history, messages already
  queued, the execution strategy and queue modes.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import msgspec
from hypothesis import strategies as st

import agentloop as al

from .fakes import BEHAVIOURS, RaiseKind, StreamCall

__all__ = [
    "ANCHORS",
    "Intervention",
    "PolicyPlan",
    "Scenario",
    "answers",
    "batch_answers",
    "broken_calls",
    "interventions",
    "policy_plans",
    "scenarios",
    "scripts",
    "tool_arguments",
]

TOOL_NAMES: tuple[str, ...] = (*BEHAVIOURS, "missing")
_TEXT = st.text(alphabet='abc xyz\n{}"é😀', max_size=12)


# --------------------------------------------------------------------------- pieces


@st.composite
def chunks(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` split at arbitrary points (empty pieces allowed; at least one piece)."""
    if not text:
        return [""]
    cuts = draw(st.lists(st.integers(1, len(text) - 1 if len(text) > 1 else 1), max_size=4))
    points = [0, *sorted(c for c in cuts if 0 < c < len(text)), len(text)]
    return [text[a:b] for a, b in zip(points, points[1:], strict=False)] or [text]


def tool_arguments(*, valid: bool | None = None) -> st.SearchStrategy[Any]:
    """Arguments for a ``BehaviourTool``: ``{"n": 0..3}``, or ones its schema rejects."""
    good = st.builds(lambda n: {"n": n}, st.integers(0, 3))
    bad = st.one_of(
        st.just({}),
        st.builds(lambda v: {"n": v}, st.sampled_from(["1", -1, 99, 1.5, None])),
        st.just({"n": 1, "extra": True}),
        st.sampled_from([[1], "n", 5, None]),
    )
    if valid is True:
        return good
    if valid is False:
        return bad
    return st.one_of(good, good, good, bad)


_USAGE = st.builds(
    lambda i, o, cr: al.Usage(input=i, output=o, cache_read=cr, total=i + o + cr),
    st.integers(0, 50),
    st.integers(0, 50),
    st.integers(0, 5),
)
_COST = st.one_of(
    st.none(),
    st.builds(
        lambda i, o: al.Cost(input=i, output=o, total=i + o),
        st.sampled_from([0.0, 0.1, 0.25, 1e-6]),
        st.sampled_from([0.0, 0.3, 0.5, 2e-6]),
    ),
)


@dataclasses.dataclass
class _Block:
    events: list[al.stream.AssistantMessageEvent]
    is_call: bool = False
    truncated: bool = False


@st.composite
def _text_block(draw: st.DrawFn, index: int) -> _Block:
    parts = draw(chunks(draw(_TEXT)))
    return _Block(
        [
            al.stream.TextStart(index=index),
            *(al.stream.TextDelta(index=index, delta=p) for p in parts),
            al.stream.TextEnd(index=index),
        ]
    )


@st.composite
def _thinking_block(draw: st.DrawFn, index: int) -> _Block:
    parts = draw(chunks(draw(_TEXT)))
    signature = draw(st.none() | st.just("sig"))
    return _Block(
        [
            al.stream.ThinkingStart(index=index),
            *(al.stream.ThinkingDelta(index=index, delta=p) for p in parts),
            al.stream.ThinkingEnd(index=index, signature=signature),
        ]
    )


@st.composite
def _call_block(
    draw: st.DrawFn, index: int, call_id: str, *, truncate: bool, valid: bool | None = None
) -> _Block:
    name = draw(st.sampled_from(BEHAVIOURS if valid else TOOL_NAMES))
    arguments = draw(tool_arguments(valid=valid))
    start = al.stream.ToolCallStart(index=index, id=call_id, name=name)
    if not truncate and draw(st.booleans()) and isinstance(arguments, dict):
        # Providers that receive the arguments as an object pass them at the end.
        return _Block(
            [start, al.stream.ToolCallEnd(index=index, arguments=arguments)], is_call=True
        )
    raw = msgspec.json.encode(arguments).decode()
    if truncate:
        raw = raw[: draw(st.integers(0, max(0, len(raw) - 1)))] or "{"
    parts = draw(chunks(raw))
    return _Block(
        [
            start,
            *(al.stream.ToolCallDelta(index=index, delta=p) for p in parts),
            al.stream.ToolCallEnd(index=index),
        ],
        is_call=True,
        truncated=truncate,
    )


@st.composite
def _interleave(draw: st.DrawFn, blocks: list[_Block]) -> list[al.stream.AssistantMessageEvent]:
    if len(blocks) < 2 or not draw(st.booleans()):
        return [e for b in blocks for e in b.events]
    labels = [i for i, b in enumerate(blocks) for _ in b.events]
    order = draw(st.permutations(labels))
    positions = [0] * len(blocks)
    out: list[al.stream.AssistantMessageEvent] = []
    for i in order:
        out.append(blocks[i].events[positions[i]])
        positions[i] += 1
    return out


@st.composite
def answers(
    draw: st.DrawFn,
    *,
    call_prefix: str = "c",
    max_blocks: int = 4,
    calls: bool = True,
    truncated_call: bool = False,
) -> StreamCall:
    """One well-formed answer, streamed; see the module docstring.

    Args:
        call_prefix: tool call ids are ``{call_prefix}{i}`` (a few are left empty or repeated,
            which the loop must replace by fresh unique ids).
        max_blocks: at most this many content blocks.
        calls: whether tool calls may appear.
        truncated_call: end with a tool call cut off by the output limit (stop reason
            ``length``).
    """
    kinds = draw(
        st.lists(
            st.sampled_from(
                ["text", "thinking", "call", "call", "call", "extension"]
                if calls
                else ["text", "thinking"]
            ),
            max_size=max_blocks,
        )
    )
    blocks: list[_Block] = []
    for index, kind in enumerate(kinds):
        if kind == "text":
            blocks.append(draw(_text_block(index)))
        elif kind == "thinking":
            blocks.append(draw(_thinking_block(index)))
        elif kind == "call":
            call_id = draw(
                st.sampled_from([f"{call_prefix}{index}"] * 8 + ["", f"{call_prefix}dup"])
            )
            blocks.append(draw(_call_block(index, call_id, truncate=False)))
        else:
            blocks.append(
                _Block(
                    [al.stream.ExtensionBlock(index=index, type_name="citation", data={"i": index})]
                )
            )
    if truncated_call:
        blocks.append(draw(_call_block(len(blocks), f"{call_prefix}cut", truncate=True)))
    events: list[al.stream.AssistantMessageEvent] = []
    if draw(st.booleans()):
        events.append(al.stream.StreamStart(provider="conformance", model_id="scripted"))
    events.extend(draw(_interleave(blocks)))
    has_calls = any(b.is_call for b in blocks)
    if truncated_call:
        stop = al.StopReason.LENGTH
    elif has_calls:
        stop = draw(
            st.sampled_from(
                [al.StopReason.TOOL_USE] * 4 + [al.StopReason.STOP, al.StopReason.LENGTH]
            )
        )
    else:
        stop = draw(st.sampled_from([al.StopReason.STOP] * 4 + [al.StopReason.LENGTH]))
    events.append(al.stream.Done(stop_reason=stop, usage=draw(_USAGE), cost=draw(_COST)))
    label = "truncated_call" if truncated_call else ("calls" if has_calls else "text")
    return StreamCall(events=tuple(events), label=label)


@st.composite
def batch_answers(draw: st.DrawFn, *, call_prefix: str = "t", max_calls: int = 4) -> StreamCall:
    """An answer asking for a batch of 2 to ``max_calls`` valid calls of real tools."""
    n = draw(st.integers(2, max_calls))
    blocks = [
        draw(_call_block(i, f"{call_prefix}{i}", truncate=False, valid=True)) for i in range(n)
    ]
    events = [*draw(_interleave(blocks)), al.stream.Done(stop_reason=al.StopReason.TOOL_USE)]
    return StreamCall(events=tuple(events), label="batch")


_ERROR_KINDS = st.sampled_from(list(al.ErrorKind))


@st.composite
def error_events(draw: st.DrawFn) -> al.stream.ErrorEvent:
    """A classified failure event: any kind, a retry-after hint, perhaps usage, perhaps aborted."""
    kind = draw(_ERROR_KINDS)
    return al.stream.ErrorEvent(
        kind=kind,
        message=f"scripted {kind}",
        retry_after=draw(st.none() | st.sampled_from([0.0, 1.5, 30.0, 500.0])),
        stop_reason=draw(st.sampled_from([al.StopReason.ERROR] * 5 + [al.StopReason.ABORTED])),
        usage=draw(st.none() | _USAGE),
    )


@st.composite
def broken_calls(draw: st.DrawFn, *, call_prefix: str = "b") -> StreamCall:
    """A model call that goes wrong in one of the ways listed in the module docstring."""
    how = draw(
        st.sampled_from(
            [
                "missing_end",
                "delta_before_start",
                "double_start",
                "bad_json",
                "error_at",
                "error_at",
                "error_at",
                "raise_at",
                "raise_at",
                "after_end",
                "truncated_call",
            ]
        )
    )
    if how == "truncated_call":
        return draw(answers(call_prefix=call_prefix, truncated_call=True))
    if how == "bad_json":
        base = draw(answers(call_prefix=call_prefix, max_blocks=2, calls=False))
        index = 10
        bad = (
            al.stream.ToolCallStart(index=index, id=f"{call_prefix}bad", name="ok"),
            al.stream.ToolCallDelta(index=index, delta='{"n": 1,,'),
            al.stream.ToolCallEnd(index=index),
        )
        return StreamCall(
            events=(*base.events[:-1], *bad, al.stream.Done(stop_reason=al.StopReason.TOOL_USE)),
            label=how,
        )
    base = draw(answers(call_prefix=call_prefix))
    events = list(base.events)
    body = events[:-1]
    if how == "missing_end":
        return StreamCall(events=tuple(body), label=how)
    if how == "after_end":
        return StreamCall(events=(*events, al.stream.TextDelta(index=0, delta="late")), label=how)
    position = draw(st.integers(0, len(body)))
    if how == "delta_before_start":
        body.insert(position, al.stream.TextDelta(index=77, delta="orphan"))
        return StreamCall(events=(*body, events[-1]), label=how)
    if how == "double_start":
        body.insert(position, al.stream.TextStart(index=0))
        if not any(isinstance(e, al.stream.TextStart) and e.index == 0 for e in body[:position]):
            body.insert(position, al.stream.TextStart(index=0))
        return StreamCall(events=(*body, events[-1]), label=how)
    if how == "error_at":
        return StreamCall(events=(*body[:position], draw(error_events())), label=how)
    kind: RaiseKind = draw(st.sampled_from(["throttled", "network", "overflow", "os", "runtime"]))
    return StreamCall(events=tuple(events), raise_after=position, raise_kind=kind, label=how)


@st.composite
def scripts(
    draw: st.DrawFn, *, max_calls: int = 5, broken: bool = True, batches: bool = False
) -> list[StreamCall]:
    """Successive model calls: answers, and (with ``broken``) some calls that go wrong.

    With ``batches`` every other call is a batch of several valid tool calls.
    """
    n = draw(st.integers(1, max_calls))
    out: list[StreamCall] = []
    for i in range(n):
        if batches and i % 2 == 0:
            out.append(draw(batch_answers(call_prefix=f"t{i}_")))
        elif broken and draw(st.integers(0, 3)) == 0:
            out.append(draw(broken_calls(call_prefix=f"b{i}_")))
        else:
            out.append(draw(answers(call_prefix=f"c{i}_")))
    return out


# --------------------------------------------------------------------------- interventions

Action = Literal["steer", "follow_up", "abort"]


ANCHORS: tuple[str, ...] = (
    "any",
    "ToolExecutionStart",
    "ToolExecutionEnd",
    "MessageUpdate",
    "StreamRetry",
    "MessageEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolExecutionEnd",
    "TurnEnd",
)


@dataclasses.dataclass(frozen=True)
class Intervention:
    """Do ``action`` when the ``nth`` event of type ``anchor`` (0-based) is seen.

    ``anchor`` ``"any"`` counts every event. Steering and follow-up messages carry a unique
    text, so the properties can find them.
    """

    nth: int
    action: Action
    anchor: str = "any"
    text: str = ""


@st.composite
def interventions(draw: st.DrawFn, *, aborts: bool = True) -> tuple[Intervention, ...]:
    """Steering, follow-ups and (with ``aborts``) at most one abort, at arbitrary events.

    Positions are anchored to event types (the n-th tool start, the n-th answer delta, ...)
    so that interventions land where they matter: during a batch, mid-stream, between turns.
    """
    actions: list[Action] = ["steer", "steer", "follow_up"]

    def position() -> st.SearchStrategy[tuple[str, int]]:
        return st.sampled_from(ANCHORS).flatmap(
            lambda a: st.tuples(st.just(a), st.integers(0, 60 if a == "any" else 3))
        )

    drawn = draw(st.lists(st.tuples(position(), st.sampled_from(actions)), max_size=4))
    out = [
        Intervention(nth=nth, anchor=anchor, action=action, text=f"{action}-{i}")
        for i, ((anchor, nth), action) in enumerate(drawn)
    ]
    if aborts and draw(st.booleans()):
        anchor, nth = draw(position())
        out.append(Intervention(nth=nth, anchor=anchor, action="abort"))
    return tuple(out)


# --------------------------------------------------------------------------- policies

TurnVerdict = Literal["stop", "inject", "replace", "raise"]
DispatchKind = Literal["skip", "rewrite", "stop", "raise"]
ApprovalKind = Literal["reject", "rewrite", "raise"]
_APPROVAL_KINDS: tuple[ApprovalKind, ...] = ("reject", "rewrite", "raise")


@dataclasses.dataclass(frozen=True)
class PolicyPlan:
    """Which policy verdicts to give, and when.

    Attributes:
        pre_turn: (turn, verdict) pairs, verdict one of stop, inject, raise.
        pre_dispatch: (turn, call position, verdict) triples: skip, rewrite, stop, raise.
        post_turn: (turn, verdict) pairs: stop, inject, replace, raise.
        post_loop: (evaluation number, verdict) pairs: stop, inject.
        approval: (request number, decision) pairs for the approval callback: reject,
            rewrite (approve with other arguments), raise; unlisted requests are approved.
            ``None``: no approval callback at all.
    """

    pre_turn: tuple[tuple[int, TurnVerdict], ...] = ()
    pre_dispatch: tuple[tuple[int, int, DispatchKind], ...] = ()
    post_turn: tuple[tuple[int, TurnVerdict], ...] = ()
    post_loop: tuple[tuple[int, TurnVerdict], ...] = ()
    approval: tuple[tuple[int, ApprovalKind], ...] | None = None

    @property
    def empty(self) -> bool:
        """No turn-level policy (approval aside): only then may a run not be stopped by one."""
        return not (self.pre_turn or self.pre_dispatch or self.post_turn or self.post_loop)


@st.composite
def policy_plans(draw: st.DrawFn) -> PolicyPlan:
    """A few policy verdicts at chosen turns; usually none."""
    if draw(st.integers(0, 2)) != 0:
        return PolicyPlan()
    turn = st.integers(0, 4)
    return PolicyPlan(
        pre_turn=tuple(
            draw(
                st.lists(st.tuples(turn, st.sampled_from(["stop", "inject", "raise"])), max_size=2)
            )
        ),
        pre_dispatch=tuple(
            draw(
                st.lists(
                    st.tuples(
                        turn,
                        st.integers(0, 3),
                        st.sampled_from(["skip", "rewrite", "stop", "raise"]),
                    ),
                    max_size=2,
                )
            )
        ),
        post_turn=tuple(
            draw(
                st.lists(
                    st.tuples(turn, st.sampled_from(["stop", "inject", "replace", "raise"])),
                    max_size=2,
                )
            )
        ),
        post_loop=tuple(
            draw(
                st.lists(
                    st.tuples(st.integers(0, 2), st.sampled_from(["stop", "inject"])), max_size=1
                )
            )
        ),
        approval=draw(
            st.none()
            | st.lists(
                st.tuples(st.integers(0, 4), st.sampled_from(_APPROVAL_KINDS)),
                max_size=3,
            ).map(tuple)
        ),
    )


# --------------------------------------------------------------------------- scenarios

QueueMode = Literal["one_at_a_time", "all"]


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One run to perform: everything a property needs to build it, on any backend."""

    script: tuple[StreamCall, ...]
    prompts: tuple[str, ...] = ("go",)
    history: bool = False
    interventions: tuple[Intervention, ...] = ()
    policies: PolicyPlan = PolicyPlan()
    tool_execution: Literal["concurrent", "sequential"] = "concurrent"
    max_concurrent_tools: int | None = None
    steering_mode: QueueMode = "one_at_a_time"
    follow_up_mode: QueueMode = "one_at_a_time"
    queued_steering: tuple[str, ...] = ()
    queued_follow_up: tuple[str, ...] = ()

    @property
    def aborts(self) -> bool:
        return any(i.action == "abort" for i in self.interventions)


@st.composite
def scenarios(
    draw: st.DrawFn,
    *,
    broken: bool = True,
    aborts: bool = True,
    policies: bool = True,
    concurrent: bool = True,
    batches: bool = False,
) -> Scenario:
    """A whole run: script, interventions, policies, strategy and queues.

    Args:
        broken: include model calls that go wrong.
        aborts: include aborts among the interventions.
        policies: include policy verdicts.
        concurrent: allow concurrent tool execution (else sequential only).
        batches: make every other model call a batch of several valid tool calls.
    """
    execution: Literal["concurrent", "sequential"] = (
        draw(st.sampled_from(["concurrent", "sequential"])) if concurrent else "sequential"
    )
    return Scenario(
        script=tuple(draw(scripts(broken=broken, batches=batches))),
        prompts=tuple(draw(st.lists(st.sampled_from(["go", "again"]), min_size=0, max_size=2)))
        or ("go",),
        history=draw(st.booleans()),
        interventions=draw(interventions(aborts=aborts)),
        policies=draw(policy_plans()) if policies else PolicyPlan(),
        tool_execution=execution,
        max_concurrent_tools=draw(st.none() | st.integers(1, 2)),
        steering_mode=draw(st.sampled_from(["one_at_a_time", "all"])),
        follow_up_mode=draw(st.sampled_from(["one_at_a_time", "all"])),
        queued_steering=tuple(f"queued-steer-{i}" for i in range(draw(st.integers(0, 1)))),
        queued_follow_up=tuple(f"queued-follow-{i}" for i in range(draw(st.integers(0, 2)))),
    )
