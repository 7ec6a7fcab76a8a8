"""The accumulator is total: any sequence of objects gives a well-typed message, never a raise.

``msgspec.Struct`` constructors do not check types, so a provider (or a hostile stream read by
one) can hand the accumulator events whose fields hold the wrong types, an unhashable index, or
objects that are not events at all. Whatever arrives, ``push``, ``snapshot`` and ``finish`` must
not raise, and the finished message must survive a typed ``msgspec`` round trip (a checkpoint or
a session store encodes and decodes it).
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

import agentloop
from agentloop import AssistantMessage, ErrorKind, ModelSpec, StopReason
from agentloop.stream import (
    Accumulator,
    Done,
    ErrorEvent,
    ExtensionBlock,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

MODEL = ModelSpec(provider="fake", model_id="fake-1")
ev: Any = (
    agentloop.stream
)  # the event classes, untyped: these tests build ill-typed events on purpose
_typed = msgspec.json.Decoder(AssistantMessage)


def _fold(events: list[Any]) -> tuple[Accumulator, AssistantMessage]:
    acc = Accumulator(MODEL)
    for event in events:
        acc.push(event)
        acc.snapshot()
    message = acc.finish()
    _typed.decode(msgspec.json.encode(message))  # well-typed: it round-trips
    return acc, message


def _malformed(message: AssistantMessage) -> None:
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.OTHER
    assert "malformed provider stream" in (message.error_message or "")


@pytest.mark.parametrize(
    "events",
    [
        [ev.TextStart(index=0), ev.TextDelta(index=0, delta=5), ev.Done()],  # the per-token path
        [ev.TextStart(index=0), ev.TextDelta(index=0, delta=None), ev.TextEnd(index=0), ev.Done()],
        [ev.ThinkingStart(index=0), ev.ThinkingDelta(index=0, delta=[1]), ev.Done()],
        [
            ev.ToolCallStart(index=0, id="c", name="t"),
            ev.ToolCallDelta(index=0, delta={}),
            ev.Done(),
        ],
        [ev.TextStart(index=[0]), ev.Done()],  # an unhashable index
        [ev.TextStart(index=0), ev.TextDelta(index=[0], delta="x"), ev.Done()],
        [ev.TextStart(index="0"), ev.Done()],
        [ev.ToolCallStart(index=0, id=5, name="t"), ev.ToolCallEnd(index=0), ev.Done()],
        [ev.ToolCallStart(index=0, id="c", name=None), ev.ToolCallEnd(index=0), ev.Done()],
        [ev.ToolCallStart(index=0, id="c", name="t", meta="m"), ev.ToolCallEnd(index=0), ev.Done()],
        [ev.ThinkingStart(index=0, signature=7), ev.ThinkingEnd(index=0), ev.Done()],
        [ev.ThinkingStart(index=0), ev.ThinkingEnd(index=0, data=[]), ev.Done()],
        [ev.ExtensionBlock(index=0, type_name={}), ev.Done()],
        [ev.StreamStart(model_id=12), ev.Done()],
        [ev.StreamStart(provider=["p"]), ev.Done()],
        [ev.Done(stop_reason="later")],
        [ev.Done(usage={"input": "1"})],
        [ev.Done(cost=3)],
        [{"type": "done"}],
        [None],
        [ev.TextStart(index=0), object()],
    ],
    ids=lambda events: " ".join(type(e).__name__ for e in events),
)
def test_ill_typed_events_end_as_a_malformed_stream(events: list[Any]) -> None:
    _, message = _fold(events)
    _malformed(message)


def test_an_error_event_of_the_wrong_shape_still_ends_as_an_error() -> None:
    for event in (
        ev.ErrorEvent(kind="nope"),
        ev.ErrorEvent(message=5),
        ev.ErrorEvent(retry_after="soon"),
        ev.ErrorEvent(usage=1),
    ):
        _, message = _fold([ev.TextStart(index=0), ev.TextDelta(index=0, delta="kept"), event])
        _malformed(message)
        assert message.text == "kept"


def test_values_of_a_convertible_type_are_normalised() -> None:
    _, message = _fold([ev.Done(stop_reason="length", usage={"input": 3})])  # plain str and dict
    assert message.stop_reason is StopReason.LENGTH
    assert message.usage.input == 3
    acc, message = _fold([ev.ErrorEvent(kind="throttled", message="slow down", retry_after=2)])
    assert message.error_kind is ErrorKind.THROTTLED
    assert acc.retry_after == 2.0


def test_an_object_whose_repr_raises_is_still_reported() -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr for you")

    _, message = _fold([Hostile()])
    _malformed(message)


_anything: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)  # what JSON carries
    | st.text(max_size=4)
    | st.sampled_from(list(StopReason) + list(ErrorKind)),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=4,
)
_index = st.integers(0, 2) | _anything
_delta = st.text(max_size=3) | _anything
_event = st.one_of(
    st.builds(TextStart, index=_index),
    st.builds(TextDelta, index=_index, delta=_delta),
    st.builds(TextEnd, index=_index),
    st.builds(ThinkingStart, index=_index, signature=_anything, data=_anything, meta=_anything),
    st.builds(ThinkingDelta, index=_index, delta=_delta),
    st.builds(ThinkingEnd, index=_index, signature=_anything, data=_anything),
    st.builds(ToolCallStart, index=_index, id=_delta, name=_delta, meta=_anything),
    st.builds(ToolCallDelta, index=_index, delta=_delta),
    st.builds(ToolCallEnd, index=_index, arguments=_anything, signature=_anything),
    st.builds(ExtensionBlock, index=_index, type_name=_delta, data=_anything),
    st.builds(StreamStart, provider=_anything, model_id=_anything),
    st.builds(Done, stop_reason=_anything, usage=_anything, cost=_anything),
    st.builds(ErrorEvent, kind=_anything, message=_anything, retry_after=_anything),
    _anything,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_event, max_size=12), st.booleans())
def test_any_objects_give_a_well_typed_message(events: list[Any], abort: bool) -> None:
    acc = Accumulator(MODEL)
    for event in events:
        acc.push(event)
        acc.snapshot()
    if abort:
        acc.abort()
    message = acc.finish()
    assert _typed.decode(msgspec.json.encode(message)) == message


# ---------------------------------------------------------------- the per-token path

# Few blocks, many deltas: sequences where a delta follows one like it, late deltas included.
_plain_event = st.sampled_from(
    [
        TextStart(index=0),
        TextDelta(index=0, delta="a"),
        TextDelta(index=0, delta="b"),
        TextEnd(index=0),
        ThinkingStart(index=1),
        ThinkingDelta(index=1, delta="t"),
        ToolCallStart(index=2, id="c", name="n"),
        ToolCallDelta(index=2, delta="{}"),
        TextDelta(index=1, delta="x"),  # the wrong kind for block 1
        TextDelta(index=300, delta="y"),  # an index no small-int cache shares
        Done(),
        ErrorEvent(kind=ErrorKind.NETWORK, message="m"),
    ]
)


def _fold_like_the_loop(events: list[Any]) -> Accumulator:
    """What the loop does once per token: ``hot_append`` for a delta like the last, else
    ``push``, reading the per-token path again after each push (``hot_index`` and
    ``hot_append`` only once ``hot_type`` is set)."""
    acc = Accumulator(MODEL)
    hot_type: Any = acc.hot_type  # (as the loop has it: a class to compare, not to narrow to)
    hot_index: Any = None
    hot_append: Any = None
    for event in events:
        if type(event) is hot_type and event.index is hot_index:
            hot_append(event.delta)
        elif acc.push(event):
            hot_type = acc.hot_type
            if hot_type is not None:
                hot_index, hot_append = acc.hot_index, acc.hot_append
        else:
            break
    return acc


@settings(max_examples=500, deadline=None)
@given(st.lists(_plain_event | _event, max_size=16), st.booleans())
def test_the_per_token_path_folds_each_event_as_push_does(events: list[Any], abort: bool) -> None:
    reference = Accumulator(MODEL)
    for event in events:
        if not reference.push(event):
            break
    loop = _fold_like_the_loop(events)
    if abort:
        reference.abort()
        loop.abort()
    stamp = {"timestamp": 0}  # each message is stamped when finished
    assert msgspec.structs.replace(loop.finish(), **stamp) == msgspec.structs.replace(
        reference.finish(), **stamp
    )


def test_the_per_token_path_is_taken_and_left_at_the_stream_end() -> None:
    acc = Accumulator(MODEL)
    acc.push(TextStart(index=0))
    acc.push(TextDelta(index=0, delta="a"))
    assert acc.hot_type is TextDelta and acc.hot_index == 0
    acc.push(Done())
    assert acc.hot_type is None
    assert not acc.push(TextDelta(index=0, delta="late"))
    _malformed(acc.finish())


# ---------------------------------------------------------------- the quick type check

# Mostly right, sometimes wrong: ints in and out of msgspec's range, bools where ints go.
_int = st.integers(-(2**63), 2**64 - 1) | st.integers() | st.booleans() | _anything
_usage = st.builds(
    agentloop.Usage,
    input=_int,
    output=_int,
    cache_read=_int,
    cache_write=_int,
    total=_int,
    extra=st.just({}) | st.dictionaries(st.text(max_size=2), _int, max_size=1),
    estimated=st.booleans() | _anything,
)
_str_or_none = st.none() | st.text(max_size=3) | _anything
_typed_events = st.one_of(
    st.builds(StreamStart, provider=_str_or_none, model_id=_str_or_none),
    st.builds(TextStart, index=_int),
    st.builds(TextEnd, index=_int),
    st.builds(
        ThinkingStart,
        index=_int,
        redacted=st.booleans() | _anything,
        data=_str_or_none,
        signature=_str_or_none,
        meta=st.none() | _anything,
    ),
    st.builds(ThinkingEnd, index=_int, signature=_str_or_none, data=_str_or_none),
    st.builds(
        ToolCallStart,
        index=_int,
        id=st.text(max_size=3) | _anything,
        name=st.text(max_size=3) | _anything,
        signature=_str_or_none,
        meta=st.none() | _anything,
    ),
    st.builds(
        ToolCallEnd,
        index=_int,
        arguments=st.just(msgspec.UNSET) | _anything,
        signature=_str_or_none,
    ),
    st.builds(
        Done,
        stop_reason=st.sampled_from(list(StopReason)) | _anything,
        usage=st.none() | _usage,
        cost=st.none() | st.builds(agentloop.Cost),
    ),
)


@settings(max_examples=500, deadline=None)
@given(_typed_events)
def test_an_event_the_quick_check_lets_through_is_what_the_conversion_gives(event: Any) -> None:
    # The accumulator checks common events field by field instead of converting them (a
    # microsecond each, per answer). Whatever it lets through must be exactly what the full
    # conversion returns; what it does not, the conversion handles as before.
    from agentloop._stream import _ALREADY_TYPED, StreamFailure, _well_typed

    if _ALREADY_TYPED[type(event)](event):
        assert _well_typed(event) == event
    else:
        try:
            _well_typed(event)
        except StreamFailure:
            pass


def test_the_events_of_ordinary_answers_take_the_quick_check() -> None:
    from agentloop._stream import _ALREADY_TYPED
    from agentloop.testing import events_for

    answer = AssistantMessage(
        content=[
            agentloop.Thinking(thinking="hmm", signature="sig"),
            agentloop.Text(text="hello"),
            agentloop.ToolCall(id="c1", name="t", arguments={"a": 1}),
        ],
        usage=agentloop.Usage(input=10, output=5, total=15),
        stop_reason=StopReason.TOOL_USE,
    )
    structural = [
        e for e in events_for(answer) if type(e) not in (TextDelta, ThinkingDelta, ToolCallDelta)
    ]
    assert len(structural) == 8
    assert all(_ALREADY_TYPED[type(e)](e) for e in structural)
