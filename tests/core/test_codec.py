"""Every message, event and result round-trips through JSON unchanged."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import agentloop
from agentloop import (
    AgentEvent,
    AgentMessage,
    AgentResult,
    AgentToolResult,
    AssistantMessage,
    ContentBlock,
    Cost,
    CustomMessage,
    ErrorKind,
    Extension,
    Image,
    LlmMessage,
    ModelSpec,
    Pricing,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
    ThinkingBudgets,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    TurnEndReason,
    Usage,
    UserMessage,
    _events as ev,
    _stream as se,
    decode,
    encode,
)
from agentloop.loop import AgentContext
from agentloop.stream import AssistantMessageEvent, LlmContext, ToolSchema


class Note(CustomMessage, frozen=True, tag="test-codec-note"):
    """A custom message with a plain field."""

    text: str
    level: int = 0


class Artifact(CustomMessage, frozen=True, tag="test-codec-artifact"):
    """A custom message holding content blocks and free-form data."""

    name: str
    content: list[ContentBlock] = msgspec.field(default_factory=list)
    data: Any = None


class Digest(CustomMessage, frozen=True, tag="test-codec-digest"):
    """A custom message holding other messages, custom ones (and digests) included."""

    replaced: list[AgentMessage]
    title: str = ""


# --------------------------------------------------------------------------- strategies

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=5), json_values, max_size=3)
short_text = st.text(max_size=12)
maybe_text = st.none() | short_text
counts = st.integers(min_value=0, max_value=2**40)
money = st.floats(min_value=0, max_value=1e6, allow_nan=False)
timestamps = st.integers(min_value=0, max_value=2**45)

texts = st.builds(Text, text=short_text)
thinkings = st.builds(
    Thinking,
    thinking=short_text,
    signature=maybe_text,
    redacted=st.booleans(),
    data=maybe_text,
    meta=st.none() | json_objects,
)
tool_calls = st.builds(
    ToolCall,
    id=short_text,
    name=short_text,
    arguments=json_values,
    partial_json=maybe_text,
    signature=maybe_text,
    meta=st.none() | json_objects,
)
images = st.builds(
    Image, media_type=st.sampled_from(["image/png", "image/jpeg"]), data=maybe_text, url=maybe_text
)
extensions = st.builds(Extension, type_name=short_text, data=json_values)
blocks: st.SearchStrategy[ContentBlock] = texts | thinkings | tool_calls | images | extensions
block_lists = st.lists(blocks, max_size=4)

usages = st.builds(
    Usage,
    input=counts,
    output=counts,
    cache_read=counts,
    cache_write=counts,
    total=counts,
    extra=st.dictionaries(short_text, counts, max_size=2),
)
costs = st.builds(
    Cost,
    input=money,
    output=money,
    cache_read=money,
    cache_write=money,
    total=money,
    extra=st.dictionaries(short_text, money, max_size=2),
)
user_messages = st.builds(UserMessage, content=block_lists, timestamp=timestamps)
assistant_messages = st.builds(
    AssistantMessage,
    content=block_lists,
    provider=short_text,
    model_id=short_text,
    usage=usages,
    cost=costs,
    stop_reason=st.sampled_from(StopReason),
    error_message=maybe_text,
    error_kind=st.none() | st.sampled_from(ErrorKind),
    timestamp=timestamps,
)
tool_results = st.builds(
    ToolResultMessage,
    tool_call_id=short_text,
    content=block_lists,
    tool_name=short_text,
    is_error=st.booleans(),
    details=json_values,
    timestamp=timestamps,
)
llm_messages: st.SearchStrategy[LlmMessage] = user_messages | assistant_messages | tool_results
custom_messages: st.SearchStrategy[CustomMessage] = st.builds(
    Note, text=short_text, level=st.integers(-5, 5)
) | st.builds(Artifact, name=short_text, content=block_lists, data=json_values)
digests: st.SearchStrategy[CustomMessage] = st.builds(
    Digest,
    replaced=st.lists(
        llm_messages
        | custom_messages
        | st.builds(Digest, replaced=st.lists(custom_messages, max_size=2), title=short_text),
        max_size=3,
    ),
    title=short_text,
)
agent_messages: st.SearchStrategy[AgentMessage] = llm_messages | custom_messages | digests
tool_results_payload = st.builds(
    AgentToolResult, content=block_lists, details=json_values, is_error=st.booleans()
)

indexes = st.integers(min_value=0, max_value=50)
stream_events: st.SearchStrategy[AssistantMessageEvent] = st.one_of(
    st.builds(se.StreamStart, provider=maybe_text, model_id=maybe_text),
    st.builds(se.TextStart, index=indexes),
    st.builds(se.TextDelta, index=indexes, delta=short_text),
    st.builds(se.TextEnd, index=indexes),
    st.builds(
        se.ThinkingStart,
        index=indexes,
        redacted=st.booleans(),
        data=maybe_text,
        signature=maybe_text,
        meta=st.none() | json_objects,
    ),
    st.builds(se.ThinkingDelta, index=indexes, delta=short_text),
    st.builds(se.ThinkingEnd, index=indexes, signature=maybe_text, data=maybe_text),
    st.builds(
        se.ToolCallStart,
        index=indexes,
        id=short_text,
        name=short_text,
        signature=maybe_text,
        meta=st.none() | json_objects,
    ),
    st.builds(se.ToolCallDelta, index=indexes, delta=short_text),
    st.builds(se.ToolCallEnd, index=indexes, signature=maybe_text),
    st.builds(se.ToolCallEnd, index=indexes, arguments=json_values, signature=maybe_text),
    st.builds(se.ExtensionBlock, index=indexes, type_name=short_text, data=json_values),
    st.builds(
        se.Done, stop_reason=st.sampled_from(StopReason), usage=usages, cost=st.none() | costs
    ),
    st.builds(
        se.ErrorEvent,
        kind=st.sampled_from(ErrorKind),
        message=short_text,
        retry_after=st.none() | st.floats(min_value=0, max_value=1e4),
        stop_reason=st.sampled_from([StopReason.ERROR, StopReason.ABORTED]),
        usage=st.none() | usages,
    ),
)
agent_events: st.SearchStrategy[AgentEvent] = st.one_of(
    st.builds(ev.AgentStart),
    st.builds(ev.AgentEnd, messages=st.lists(agent_messages, max_size=3)),
    st.builds(ev.TurnStart, turn=st.integers(0, 100)),
    st.builds(
        ev.TurnEnd,
        reason=st.sampled_from(TurnEndReason),
        message=st.none() | assistant_messages,
        tool_results=st.lists(tool_results, max_size=2),
        turn=st.integers(0, 100),
    ),
    st.builds(ev.MessageStart, message=agent_messages),
    st.builds(ev.MessageUpdate, event=stream_events),
    st.builds(ev.MessageEnd, message=agent_messages),
    st.builds(
        ev.StreamRetry,
        attempt=st.integers(1, 10),
        delay=st.floats(min_value=0, max_value=100),
        kind=st.sampled_from(ErrorKind),
        message=short_text,
    ),
    st.builds(ev.ToolExecutionStart, call_id=short_text, name=short_text, arguments=json_values),
    st.builds(
        ev.ToolExecutionUpdate, call_id=short_text, name=short_text, update=tool_results_payload
    ),
    st.builds(
        ev.ToolExecutionEnd,
        call_id=short_text,
        name=short_text,
        result=tool_results_payload,
        is_error=st.booleans(),
    ),
    st.builds(
        ev.ContextCompacted, report=short_text, dropped=st.integers(0, 99), details=json_values
    ),
    st.builds(ev.TransferInitiated, source=short_text, target=short_text, reason=short_text),
    st.builds(ev.TransferRejected, source=short_text, target=short_text, reason=short_text),
    st.builds(
        ev.DelegationStart,
        path=st.lists(st.builds(ev.Hop, call_id=short_text, agent=short_text), max_size=3),
        prompt=short_text,
    ),
    st.builds(
        ev.SessionWriteFailed,
        error=short_text,
        unstored=st.integers(0, 99),
        skipped=st.integers(0, 99),
    ),
)
agent_results = st.builds(
    AgentResult,
    messages=st.lists(agent_messages, max_size=4),
    stop_reason=st.sampled_from(StopReason),
    usage=usages,
    cost=costs,
    error=maybe_text,
    error_kind=st.none() | st.sampled_from(ErrorKind),
    stopped_by=maybe_text,
    unsaved_messages=st.integers(0, 9),
    session_error=maybe_text,
    output=short_text,
)


# --------------------------------------------------------------------------- properties

# The nested values below are costly to generate; their parts are covered example by example
# in the simpler properties, so fewer examples suffice, and a loaded machine is no failure.
nested = settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])


@given(blocks)
def test_content_blocks_round_trip(block: ContentBlock) -> None:
    assert decode(encode(block), ContentBlock) == block
    assert msgspec.json.decode(msgspec.json.encode(block), type=ContentBlock) == block


@given(llm_messages)
def test_llm_messages_round_trip(message: LlmMessage) -> None:
    data = encode(message)
    assert decode(data, LlmMessage) == message
    assert decode(data, type(message)) == message
    assert msgspec.json.decode(data, type=LlmMessage) == message


@nested
@given(st.lists(agent_messages, max_size=5))
def test_agent_messages_round_trip_with_custom_messages(messages: list[AgentMessage]) -> None:
    decoded: list[AgentMessage] = decode(encode(messages), list[AgentMessage])
    assert decoded == messages
    assert [type(m) for m in decoded] == [type(m) for m in messages]


@given(custom_messages)
def test_one_custom_message_round_trips(message: CustomMessage) -> None:
    assert decode(encode(message), AgentMessage) == message
    assert decode(encode(message), type(message)) == message


@given(stream_events)
def test_assistant_message_events_round_trip(event: AssistantMessageEvent) -> None:
    assert decode(encode(event), AssistantMessageEvent) == event


@nested
@given(agent_events)
def test_agent_events_round_trip(event: AgentEvent) -> None:
    decoded: AgentEvent = decode(encode(event), AgentEvent)
    assert decoded == event
    assert type(decoded) is type(event)


@nested
@given(agent_results)
def test_agent_results_round_trip(result: AgentResult) -> None:
    assert decode(encode(result), AgentResult) == result


_ASSISTANT = AssistantMessage(
    content=[Text(text="t"), ToolCall(id="c", name="n", arguments={"a": [1, 2.5, None]})],
    usage=Usage(input=1, output=2, extra={"r": 3}),
    cost=Cost(total=0.5),
    stop_reason=StopReason.TOOL_USE,
    timestamp=5,
)
_RESULT = ToolResultMessage(tool_call_id="c", content=[Text(text="ok")], details={"d": 1})
EVENT_EXAMPLES: list[AgentEvent] = [
    ev.AgentStart(),
    ev.AgentEnd(messages=[UserMessage.from_text("q"), _ASSISTANT, _RESULT, Note(text="n")]),
    ev.TurnStart(turn=2),
    ev.TurnEnd(reason=TurnEndReason.TOOLS_EXECUTED, message=_ASSISTANT, tool_results=[_RESULT]),
    ev.TurnEnd(reason=TurnEndReason.ABORTED),
    ev.MessageStart(message=Artifact(name="a", content=[Image(url="u")], data=[1])),
    ev.MessageUpdate(event=se.ToolCallEnd(index=1, arguments={"x": 1})),
    ev.MessageUpdate(event=se.ErrorEvent(kind=ErrorKind.THROTTLED, retry_after=1.5)),
    ev.MessageEnd(message=_ASSISTANT),
    ev.StreamRetry(attempt=1, delay=0.25, kind=ErrorKind.NETWORK, message="reset"),
    ev.ToolExecutionStart(call_id="c", name="n", arguments={"a": 1}),
    ev.ToolExecutionUpdate(call_id="c", name="n", update=AgentToolResult.text("half")),
    ev.ToolExecutionEnd(call_id="c", name="n", result=AgentToolResult.error("no"), is_error=True),
    ev.ContextCompacted(report="dropped 3", dropped=3, details={"ids": [1, 2, 3]}),
    ev.SessionWriteFailed(error="OSError: disk full", unstored=2, skipped=1),
    ev.DelegationStart(path=[ev.Hop(call_id="c", agent="worker")], prompt="do it"),
    ev.DelegationEnd(
        path=[ev.Hop(call_id="c", agent="worker")],
        stop_reason=StopReason.STOP,
        output="done",
        usage=Usage(input=3),
        messages=[UserMessage.from_text("do it")],
    ),
    ev.SubAgentEvent(
        path=[ev.Hop(call_id="c", agent="worker"), ev.Hop(call_id="d", agent="helper")],
        event=ev.ToolExecutionStart(call_id="x", name="n", arguments={}),
    ),
    ev.TransferInitiated(source="triage", target="billing", reason="a refund"),
    ev.TransferRejected(source="billing", target="triage", reason="a cycle"),
]


@pytest.mark.parametrize("event", EVENT_EXAMPLES, ids=lambda e: type(e).__name__)
def test_each_agent_event_variant_round_trips(event: AgentEvent) -> None:
    decoded: AgentEvent = decode(encode(event), AgentEvent)
    assert decoded == event
    assert type(decoded) is type(event)


def test_every_variant_has_an_example() -> None:
    assert {type(e) for e in EVENT_EXAMPLES} == set(AgentEvent.__args__)


def test_every_event_variant_is_covered_by_the_strategies() -> None:
    # The union members, read from the type aliases, against the classes the strategies build.
    assert set(AgentEvent.__args__) == {
        ev.AgentStart,
        ev.AgentEnd,
        ev.TurnStart,
        ev.TurnEnd,
        ev.MessageStart,
        ev.MessageUpdate,
        ev.MessageEnd,
        ev.StreamRetry,
        ev.ToolExecutionStart,
        ev.ToolExecutionUpdate,
        ev.ToolExecutionEnd,
        ev.ContextCompacted,
        ev.SessionWriteFailed,
        ev.DelegationStart,
        ev.DelegationEnd,
        ev.SubAgentEvent,
        ev.TransferInitiated,
        ev.TransferRejected,
    }
    assert len(AssistantMessageEvent.__args__) == 13


# --------------------------------------------------------------------------- examples


def test_model_and_request_types_round_trip() -> None:
    spec = ModelSpec(
        provider="anthropic",
        model_id="claude",
        thinking_level=ThinkingLevel.HIGH,
        thinking_budgets=ThinkingBudgets(budgets={ThinkingLevel.HIGH: 32000}),
        context_window=200_000,
        max_output_tokens=8192,
        pricing=Pricing(input=3.0, output=15.0),
    )
    assert decode(encode(spec), ModelSpec) == spec
    options = StreamOptions(temperature=0.2, max_tokens=10, session_id="s", extra={"k": [1]})
    assert decode(encode(options), StreamOptions) == options
    context = LlmContext(
        system_prompt="be brief",
        messages=[UserMessage.from_text("hi"), AssistantMessage(content=[Text(text="hello")])],
        tools=[ToolSchema(name="add", description="adds", parameters={"type": "object"})],
    )
    assert decode(encode(context), LlmContext) == context


def test_agent_context_messages_round_trip() -> None:
    context = AgentContext(
        system_prompt="sys", messages=[UserMessage.from_text("q"), Note(text="n", level=2)]
    )
    assert decode(encode(context), AgentContext) == context


def test_role_and_type_live_in_the_tag() -> None:
    data = msgspec.json.decode(encode(AssistantMessage(content=[Text(text="x")], timestamp=1)))
    assert data["role"] == "assistant"
    assert data["content"] == [{"type": "text", "text": "x"}]
    assert "type" not in data
    assert msgspec.json.decode(encode(Note(text="n")))["role"] == "test-codec-note"
    assert msgspec.json.decode(encode(ev.AgentStart())) == {"type": "agent_start"}


def test_custom_messages_defined_after_first_decode_are_found() -> None:
    decode(encode([UserMessage.from_text("warm the cache")]), list[AgentMessage])

    class LateNote(CustomMessage, frozen=True, tag="test-codec-late-note"):
        body: str

    messages: list[AgentMessage] = [UserMessage.from_text("q", images=None), LateNote(body="late")]
    assert decode(encode(messages), list[AgentMessage]) == messages
    event = ev.MessageEnd(message=LateNote(body="b"))
    assert decode(encode(event), AgentEvent) == event


def test_custom_messages_nested_in_custom_messages() -> None:
    digest = Digest(
        replaced=[
            UserMessage.from_text("q", images=None),
            Note(text="n"),
            Digest(replaced=[Note(text="deep"), Artifact(name="a")], title="inner"),
        ],
        title="outer",
    )
    for value, tp in ((digest, AgentMessage), (digest, Digest), ([digest], list[AgentMessage])):
        assert decode(encode(value), tp) == value
    decoded: Digest = decode(encode(digest), Digest)
    inner = decoded.replaced[2]
    assert isinstance(inner, Digest)
    assert [type(m) for m in inner.replaced] == [Note, Artifact]
    event = ev.AgentEnd(messages=[digest])
    assert decode(encode(event), AgentEvent) == event


def test_decode_errors_are_msgspec_errors() -> None:
    with pytest.raises(msgspec.DecodeError):
        decode(b"{not json", AgentMessage)
    with pytest.raises(msgspec.ValidationError):
        decode(b'{"role": "nobody-registered-this"}', AgentMessage)
    with pytest.raises(msgspec.ValidationError):
        decode(b'{"role": "user", "content": "not a list"}', LlmMessage)
    with pytest.raises(msgspec.ValidationError):
        decode(b'{"type": "text"}', ContentBlock)


def test_decode_accepts_str() -> None:
    message = UserMessage.from_text("hi")
    assert decode(encode(message).decode(), UserMessage) == message


def test_encode_is_the_public_codec() -> None:
    assert agentloop.encode is encode
    assert agentloop.decode is decode
