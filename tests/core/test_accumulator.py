"""The accumulator folds provider events into one message, and malformed streams into errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from hypothesis import given, strategies as st

from agentloop import (
    AssistantMessage,
    Cost,
    ErrorKind,
    Extension,
    ModelSpec,
    Pricing,
    StopReason,
    Text,
    Thinking,
    ToolCall,
    Usage,
)
from agentloop.stream import (
    Accumulator,
    AssistantMessageEvent,
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

if TYPE_CHECKING:
    from collections.abc import Iterable

MODEL = ModelSpec(provider="fake", model_id="fake-1")


def fold(
    events: Iterable[AssistantMessageEvent], model: ModelSpec | None = MODEL
) -> AssistantMessage:
    acc = Accumulator(model)
    for event in events:
        acc.push(event)
    return acc.finish()


def text_block(index: int, *parts: str) -> list[AssistantMessageEvent]:
    return [
        TextStart(index=index),
        *(TextDelta(index=index, delta=p) for p in parts),
        TextEnd(index=index),
    ]


def tool_block(index: int, call_id: str, name: str, *parts: str) -> list[AssistantMessageEvent]:
    return [
        ToolCallStart(index=index, id=call_id, name=name),
        *(ToolCallDelta(index=index, delta=p) for p in parts),
        ToolCallEnd(index=index),
    ]


def assert_error(
    message: AssistantMessage, *fragments: str, kind: ErrorKind = ErrorKind.OTHER
) -> None:
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is kind
    assert message.error_message is not None
    for fragment in fragments:
        assert fragment in message.error_message


# --------------------------------------------------------------------------- well-formed


def test_text_stream() -> None:
    usage = Usage(input=10, output=3, total=13)
    acc = Accumulator(MODEL)
    events: list[AssistantMessageEvent] = [
        *text_block(0, "Hel", "lo", ", world"),
        Done(stop_reason=StopReason.STOP, usage=usage),
    ]
    results = [acc.push(e) for e in events]
    assert results == [True] * (len(events) - 1) + [False]
    assert acc.done
    message = acc.finish()
    assert message.content == [Text(text="Hello, world")]
    assert message.stop_reason is StopReason.STOP
    assert message.usage == usage
    assert message.provider == "fake"
    assert message.model_id == "fake-1"
    assert message.error_message is None
    assert message.error_kind is None


def test_stream_start_names_provider_and_model() -> None:
    message = fold([StreamStart(provider="real", model_id="real-2"), Done()])
    assert (message.provider, message.model_id) == ("real", "real-2")
    # A start that names nothing keeps the ModelSpec's names.
    message = fold([StreamStart(), Done()])
    assert (message.provider, message.model_id) == ("fake", "fake-1")
    message = fold([Done()], model=None)
    assert (message.provider, message.model_id) == ("", "")


def test_empty_answer() -> None:
    message = fold([Done()])
    assert message.content == []
    assert message.stop_reason is StopReason.STOP


def test_thinking_with_signature_at_end() -> None:
    events: list[AssistantMessageEvent] = [
        ThinkingStart(index=0, meta={"item_id": "rs_1"}),
        ThinkingDelta(index=0, delta="Let me "),
        ThinkingDelta(index=0, delta="think."),
        ThinkingEnd(index=0, signature="sig-abc"),
        *text_block(1, "Answer"),
        Done(),
    ]
    message = fold(events)
    assert message.content == [
        Thinking(thinking="Let me think.", signature="sig-abc", meta={"item_id": "rs_1"}),
        Text(text="Answer"),
    ]


def test_thinking_signature_at_start_is_kept() -> None:
    events: list[AssistantMessageEvent] = [
        ThinkingStart(index=0, signature="early"),
        ThinkingDelta(index=0, delta="x"),
        ThinkingEnd(index=0),
        Done(),
    ]
    assert fold(events).content == [Thinking(thinking="x", signature="early")]


def test_redacted_thinking_keeps_opaque_data() -> None:
    from_start = fold(
        [ThinkingStart(index=0, redacted=True, data="opaque=="), ThinkingEnd(index=0), Done()]
    )
    assert from_start.content == [Thinking(redacted=True, data="opaque==")]
    from_end = fold(
        [ThinkingStart(index=0, redacted=True), ThinkingEnd(index=0, data="late=="), Done()]
    )
    assert from_end.content == [Thinking(redacted=True, data="late==")]


def test_tool_calls_parse_arguments_at_the_end() -> None:
    events: list[AssistantMessageEvent] = [
        *text_block(0, "Calling."),
        *tool_block(1, "c1", "add", '{"a": ', "1, ", '"b": 2}'),
        *tool_block(2, "c2", "noop"),  # no argument fragments at all
        *tool_block(3, "c3", "blank", "  "),
        Done(stop_reason=StopReason.TOOL_USE),
    ]
    message = fold(events)
    assert message.stop_reason is StopReason.TOOL_USE
    assert message.content == [
        Text(text="Calling."),
        ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}),
        ToolCall(id="c2", name="noop", arguments={}),
        ToolCall(id="c3", name="blank", arguments={}),
    ]
    assert [c.partial_json for c in message.tool_calls] == [None, None, None]


@given(
    arguments=st.dictionaries(
        st.text(max_size=6),
        st.none()
        | st.booleans()
        | st.integers()
        | st.text(max_size=10)
        | st.lists(st.integers(), max_size=3),
        max_size=5,
    ),
    data=st.data(),
)
def test_tool_arguments_split_at_arbitrary_points(
    arguments: dict[str, Any], data: st.DataObject
) -> None:
    raw = msgspec.json.encode(arguments).decode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
    parts = [raw[i:j] for i, j in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    assert "".join(parts) == raw
    message = fold([*tool_block(0, "id", "t", *parts), Done(stop_reason=StopReason.TOOL_USE)])
    assert message.content == [ToolCall(id="id", name="t", arguments=arguments)]
    assert message.stop_reason is StopReason.TOOL_USE


def test_tool_call_end_with_object_arguments() -> None:
    events: list[AssistantMessageEvent] = [
        ToolCallStart(index=0, id="c1", name="search", signature="ts", meta={"k": 1}),
        ToolCallEnd(index=0, arguments={"q": "cats"}, signature="te"),
        Done(stop_reason=StopReason.TOOL_USE),
    ]
    assert fold(events).content == [
        ToolCall(id="c1", name="search", arguments={"q": "cats"}, signature="te", meta={"k": 1})
    ]
    # Object arguments win over fragments, and a start signature survives a plain end.
    events = [
        ToolCallStart(index=0, id="c1", name="search", signature="ts"),
        ToolCallDelta(index=0, delta='{"q": "dogs"}'),
        ToolCallEnd(index=0, arguments={"q": "cats"}),
        Done(stop_reason=StopReason.TOOL_USE),
    ]
    assert fold(events).content == [
        ToolCall(id="c1", name="search", arguments={"q": "cats"}, signature="ts")
    ]


def test_extension_block() -> None:
    events: list[AssistantMessageEvent] = [
        ExtensionBlock(index=0, type_name="web_search_result", data={"urls": ["u"]}),
        *text_block(1, "done"),
        Done(),
    ]
    assert fold(events).content == [
        Extension(type_name="web_search_result", data={"urls": ["u"]}),
        Text(text="done"),
    ]


def test_blocks_keep_start_order_even_when_interleaved() -> None:
    events: list[AssistantMessageEvent] = [
        TextStart(index=0),
        ToolCallStart(index=1, id="c", name="t"),
        TextDelta(index=0, delta="a"),
        ToolCallDelta(index=1, delta="{}"),
        TextDelta(index=0, delta="b"),
        ToolCallEnd(index=1),
        TextEnd(index=0),
        Done(stop_reason=StopReason.TOOL_USE),
    ]
    assert fold(events).content == [Text(text="ab"), ToolCall(id="c", name="t", arguments={})]


def test_done_usage_and_provider_cost() -> None:
    usage = Usage(input=1_000_000, output=1_000_000, total=2_000_000, extra={"reasoning": 7})
    cost = Cost(input=1.0, output=2.0, total=3.0)
    acc = Accumulator(MODEL)
    acc.push(Done(usage=usage, cost=cost))
    # The provider's own cost wins over a priced estimate.
    message = acc.finish(pricing_cost=Cost(total=99.0))
    assert message.usage == usage
    assert message.cost == cost


def test_pricing_fallback_when_the_provider_reports_no_cost() -> None:
    pricing = Pricing(input=3.0, output=15.0)
    usage = Usage(input=2_000_000, output=1_000_000, total=3_000_000)
    acc = Accumulator(MODEL)
    acc.push(Done(usage=usage))
    message = acc.finish(pricing_cost=pricing.cost(acc.usage))
    assert message.cost.total == pytest.approx(21.0)
    assert message.cost == pricing.cost(usage)
    # Without either, the cost is zero.
    assert fold([Done(usage=usage)]).cost == Cost()


def test_snapshot_shows_progress_without_parsing_arguments() -> None:
    acc = Accumulator(MODEL)
    for event in [
        *text_block(0, "Hi"),
        ToolCallStart(index=1, id="c", name="t"),
        ToolCallDelta(index=1, delta='{"a": '),
    ]:
        acc.push(event)
    snap = acc.snapshot()
    assert snap.content == [
        Text(text="Hi"),
        ToolCall(id="c", name="t", arguments={}, partial_json='{"a": '),
    ]
    assert not acc.done


# --------------------------------------------------------------------------- terminal errors


def test_error_event_with_kind_and_retry_after() -> None:
    acc = Accumulator(MODEL)
    acc.push(TextStart(index=0))
    acc.push(TextDelta(index=0, delta="partial"))
    usage = Usage(input=5)
    assert (
        acc.push(
            ErrorEvent(
                kind=ErrorKind.THROTTLED, message="429 slow down", retry_after=3.5, usage=usage
            )
        )
        is False
    )
    assert acc.retry_after == 3.5
    message = acc.finish()
    assert_error(message, "429 slow down", kind=ErrorKind.THROTTLED)
    assert message.content == [Text(text="partial")]
    assert message.usage == usage


def test_error_keeps_text_but_drops_tool_calls() -> None:
    events = [
        *text_block(0, "Reading"),
        *tool_block(1, "c1", "read", '{"path": "a"}'),
        ErrorEvent(kind=ErrorKind.NETWORK, message="reset"),
    ]
    message = fold(events)
    assert_error(message, "reset", kind=ErrorKind.NETWORK)
    assert message.content == [Text(text="Reading")]


def test_error_event_without_message_gets_a_readable_one() -> None:
    message = fold([ErrorEvent(kind=ErrorKind.NETWORK)])
    assert_error(message, "network", kind=ErrorKind.NETWORK)


def test_done_with_stop_reason_error_still_explains() -> None:
    assert_error(fold([Done(stop_reason=StopReason.ERROR)]), "model error")


def test_error_event_reporting_abort() -> None:
    events: list[AssistantMessageEvent] = [
        *text_block(0, "I was saying"),
        ToolCallStart(index=1, id="c", name="t"),
        ToolCallDelta(index=1, delta='{"x"'),
        ErrorEvent(stop_reason=StopReason.ABORTED, message="cancelled"),
    ]
    message = fold(events)
    assert message.stop_reason is StopReason.ABORTED
    assert message.content == [Text(text="I was saying")]


def test_caller_abort_drops_unfinished_tool_calls() -> None:
    acc = Accumulator(MODEL)
    for event in [
        *text_block(0, "Let me look"),
        *tool_block(1, "c1", "done_call", "{}"),
        ToolCallStart(index=2, id="c2", name="half"),
        ToolCallDelta(index=2, delta='{"path": "/et'),
    ]:
        acc.push(event)
    acc.abort()
    message = acc.finish()
    assert message.stop_reason is StopReason.ABORTED
    assert message.error_message is None
    assert message.error_kind is None
    assert message.content == [Text(text="Let me look")]
    assert message.tool_calls == []


def test_abort_does_not_hide_an_earlier_error() -> None:
    acc = Accumulator(MODEL)
    acc.push(ErrorEvent(kind=ErrorKind.AUTH, message="bad key"))
    acc.abort()
    assert_error(acc.finish(), "bad key", kind=ErrorKind.AUTH)


def test_fail_keeps_what_arrived() -> None:
    acc = Accumulator(MODEL)
    for event in text_block(0, "so far"):
        acc.push(event)
    acc.fail("connection reset", ErrorKind.NETWORK, retry_after=1.0)
    message = acc.finish()
    assert_error(message, "connection reset", kind=ErrorKind.NETWORK)
    assert message.content == [Text(text="so far")]
    assert acc.retry_after == 1.0


# --------------------------------------------------------------------------- malformed


def test_stream_ending_without_terminal_event() -> None:
    message = fold(text_block(0, "cut"))
    assert_error(message, "without a terminal event", kind=ErrorKind.NETWORK)
    assert message.content == [Text(text="cut")]
    assert_error(fold([]), "without a terminal event", kind=ErrorKind.NETWORK)


@pytest.mark.parametrize(
    ("event", "fragment"),
    [
        (TextDelta(index=0, delta="x"), "text delta for content block 0, which was never started"),
        (
            ThinkingDelta(index=3, delta="x"),
            "thinking delta for content block 3, which was never started",
        ),
        (
            ToolCallDelta(index=1, delta="{"),
            "tool call delta for content block 1, which was never started",
        ),
        (TextEnd(index=0), "text end for content block 0, which was never started"),
        (ThinkingEnd(index=0), "thinking end for content block 0, which was never started"),
        (ToolCallEnd(index=0), "tool call end for content block 0, which was never started"),
    ],
)
def test_event_for_a_block_never_started(event: AssistantMessageEvent, fragment: str) -> None:
    acc = Accumulator(MODEL)
    assert acc.push(event) is False
    assert acc.done
    assert_error(acc.finish(), "malformed provider stream", fragment)


def test_block_started_twice() -> None:
    message = fold([TextStart(index=0), ToolCallStart(index=0, id="c", name="t"), Done()])
    assert_error(message, "content block 0 started twice")


@pytest.mark.parametrize(
    ("start", "event"),
    [
        (TextStart(index=0), ToolCallDelta(index=0, delta="{}")),
        (TextStart(index=0), ThinkingDelta(index=0, delta="x")),
        (ToolCallStart(index=0, id="c", name="t"), TextDelta(index=0, delta="x")),
        (ThinkingStart(index=0), TextEnd(index=0)),
        (ExtensionBlock(index=0, type_name="x"), TextDelta(index=0, delta="x")),
    ],
)
def test_delta_of_the_wrong_kind(
    start: AssistantMessageEvent, event: AssistantMessageEvent
) -> None:
    message = fold([start, event, Done()])
    assert_error(message, "of another kind")


def test_event_after_done() -> None:
    acc = Accumulator(MODEL)
    for event in [*text_block(0, "ok"), Done()]:
        acc.push(event)
    assert acc.push(TextDelta(index=0, delta="late")) is False
    message = acc.finish()
    assert_error(message, "TextDelta after the stream had ended")
    assert message.content == [Text(text="ok")]


def test_first_problem_is_the_one_reported() -> None:
    acc = Accumulator(MODEL)
    acc.push(TextDelta(index=7, delta="x"))
    acc.push(TextDelta(index=8, delta="y"))
    acc.push(Done())
    assert_error(acc.finish(), "content block 7")


def test_event_after_an_error_event_keeps_the_provider_error() -> None:
    acc = Accumulator(MODEL)
    acc.push(ErrorEvent(kind=ErrorKind.THROTTLED, message="overloaded", retry_after=2.0))
    assert acc.push(Done()) is False
    message = acc.finish()
    assert_error(message, "overloaded", kind=ErrorKind.THROTTLED)
    assert acc.retry_after == 2.0


def test_unknown_event_object() -> None:
    acc = Accumulator(MODEL)
    assert acc.push("not an event") is False  # type: ignore[arg-type]
    assert_error(acc.finish(), "unknown stream event")


def test_unparsable_final_arguments_keep_the_call_with_its_raw_text() -> None:
    # Models do send broken JSON: the call is kept (the loop answers it with an error result),
    # the answer is not an error.
    events: list[AssistantMessageEvent] = [
        *tool_block(0, "call_9", "read_file", '{"path": "/etc'),
        Done(stop_reason=StopReason.TOOL_USE),
    ]
    message = fold(events)
    assert message.stop_reason is StopReason.TOOL_USE
    assert message.error_message is None
    assert message.tool_calls == [
        ToolCall(id="call_9", name="read_file", arguments={}, partial_json='{"path": "/etc')
    ]


def test_unparsable_arguments_under_length_are_an_incomplete_call() -> None:
    events: list[AssistantMessageEvent] = [
        *text_block(0, "Writing"),
        *tool_block(1, "call_9", "write_file", '{"path": "/tmp/x", "body": "lo'),
        Done(stop_reason=StopReason.LENGTH, usage=Usage(output=4096)),
    ]
    message = fold(events)
    assert message.stop_reason is StopReason.LENGTH
    assert message.error_message is None
    assert message.error_kind is None
    assert message.content == [
        Text(text="Writing"),
        ToolCall(
            id="call_9",
            name="write_file",
            arguments={},
            partial_json='{"path": "/tmp/x", "body": "lo',
        ),
    ]


def test_length_with_complete_arguments_is_a_complete_call() -> None:
    message = fold([*tool_block(0, "c", "t", '{"a": 1}'), Done(stop_reason=StopReason.LENGTH)])
    assert message.content == [ToolCall(id="c", name="t", arguments={"a": 1})]
    assert message.stop_reason is StopReason.LENGTH


def test_finish_twice_gives_equal_messages() -> None:
    acc = Accumulator(MODEL)
    for event in [*tool_block(0, "c", "t", "{bad"), Done(stop_reason=StopReason.TOOL_USE)]:
        acc.push(event)
    first = acc.finish()
    second = acc.finish()
    assert msgspec.structs.replace(first, timestamp=0) == msgspec.structs.replace(
        second, timestamp=0
    )


# --------------------------------------------------------------------------- robustness


_any_event = st.one_of(
    st.builds(TextStart, index=st.integers(0, 3)),
    st.builds(TextDelta, index=st.integers(0, 3), delta=st.text(max_size=3)),
    st.builds(TextEnd, index=st.integers(0, 3)),
    st.builds(ThinkingStart, index=st.integers(0, 3), redacted=st.booleans()),
    st.builds(ThinkingDelta, index=st.integers(0, 3), delta=st.text(max_size=3)),
    st.builds(ThinkingEnd, index=st.integers(0, 3), signature=st.none() | st.text(max_size=3)),
    st.builds(ToolCallStart, index=st.integers(0, 3), id=st.just("c"), name=st.just("t")),
    st.builds(
        ToolCallDelta,
        index=st.integers(0, 3),
        delta=st.sampled_from(["{", "}", '"a"', ":", "1", ","]),
    ),
    st.builds(ToolCallEnd, index=st.integers(0, 3)),
    st.builds(ExtensionBlock, index=st.integers(0, 3), type_name=st.just("x")),
    st.builds(StreamStart),
    st.builds(Done, stop_reason=st.sampled_from(StopReason)),
    st.builds(ErrorEvent, kind=st.sampled_from(ErrorKind)),
)


@given(st.lists(_any_event, max_size=20), st.booleans())
def test_any_sequence_gives_a_message_never_an_exception(
    events: list[AssistantMessageEvent], abort: bool
) -> None:
    acc = Accumulator(MODEL)
    for event in events:
        acc.push(event)
        acc.snapshot()
    if abort:
        acc.abort()
    message = acc.finish()
    assert isinstance(message, AssistantMessage)
    if message.stop_reason is StopReason.ERROR:
        assert message.error_message
        assert message.error_kind is not None
    else:
        assert message.error_message is None or message.stop_reason is StopReason.ABORTED
    if message.stop_reason in (StopReason.ABORTED, StopReason.ERROR):
        assert message.tool_calls == []
