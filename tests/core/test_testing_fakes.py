"""The fake providers in ``agentloop.testing``."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import msgspec
import pytest
from hypothesis import given, strategies as st

from agentloop import (
    AssistantMessage,
    ContentBlock,
    Cost,
    ErrorKind,
    Extension,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
    ToolCall,
    Usage,
    UserMessage,
)
from agentloop.stream import (
    Accumulator,
    AssistantMessageEvent,
    Done,
    ErrorEvent,
    LlmContext,
    TextDelta,
    TextStart,
    ToolCallDelta,
)
from agentloop.testing import (
    FunctionStream,
    ScriptedStream,
    events_for,
    reply_error,
    reply_text,
    reply_tool_calls,
)

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="fake", model_id="fake-1")
OPTIONS = StreamOptions()


def context(text: str = "hi") -> LlmContext:
    return LlmContext(system_prompt="sys", messages=[UserMessage.from_text(text)])


async def collect(
    stream: ScriptedStream | FunctionStream, ctx: LlmContext | None = None
) -> list[AssistantMessageEvent]:
    async with aclosing(stream(MODEL, ctx or context(), OPTIONS)) as events:  # type: ignore[type-var]
        return [event async for event in events]


async def answer(
    stream: ScriptedStream | FunctionStream, ctx: LlmContext | None = None
) -> AssistantMessage:
    acc = Accumulator(MODEL)
    for event in await collect(stream, ctx):
        acc.push(event)
    return acc.finish()


def comparable(message: AssistantMessage) -> AssistantMessage:
    return msgspec.structs.replace(message, timestamp=0)


# --------------------------------------------------------------------------- events_for (sync)

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
assistant_blocks: st.SearchStrategy[ContentBlock] = st.one_of(
    st.builds(Text, text=st.text(max_size=40)),
    st.builds(
        Thinking,
        thinking=st.text(max_size=40),
        signature=st.none() | st.text(min_size=1, max_size=8),
        redacted=st.booleans(),
        data=st.none() | st.text(max_size=8),
        meta=st.none() | st.dictionaries(st.text(max_size=4), json_values, max_size=2),
    ),
    st.builds(
        ToolCall,
        id=st.text(min_size=1, max_size=6),
        name=st.text(min_size=1, max_size=6),
        arguments=st.dictionaries(st.text(max_size=4), json_values, max_size=3),
        signature=st.none() | st.text(max_size=5),
    ),
    st.builds(Extension, type_name=st.text(max_size=6), data=json_values),
)
usages = st.builds(Usage, input=st.integers(0, 10**6), output=st.integers(0, 10**6))


@given(
    content=st.lists(assistant_blocks, max_size=5),
    stop=st.sampled_from([StopReason.STOP, StopReason.TOOL_USE, StopReason.LENGTH]),
    usage=usages,
    chunk_size=st.integers(1, 16),
)
def test_events_fold_back_into_an_equal_message(
    content: list[ContentBlock], stop: StopReason, usage: Usage, chunk_size: int
) -> None:
    message = AssistantMessage(
        content=content, stop_reason=stop, usage=usage, provider="fake", model_id="fake-1"
    )
    events = events_for(message, chunk_size=chunk_size)
    for event in events:
        if isinstance(event, TextDelta | ToolCallDelta):
            assert len(event.delta) <= chunk_size
    acc = Accumulator(MODEL)
    for event in events:
        acc.push(event)
    assert comparable(acc.finish()) == comparable(message)


def test_error_messages_stream_as_error_events() -> None:
    message = AssistantMessage(
        content=[Text(text="partial answer")],
        stop_reason=StopReason.ERROR,
        error_kind=ErrorKind.CONTEXT_OVERFLOW,
        error_message="prompt is too long",
        usage=Usage(input=9),
    )
    events = events_for(message)
    assert isinstance(events[-1], ErrorEvent)
    acc = Accumulator(MODEL)
    for event in events:
        acc.push(event)
    folded = acc.finish()
    assert folded.stop_reason is StopReason.ERROR
    assert folded.error_kind is ErrorKind.CONTEXT_OVERFLOW
    assert folded.error_message == "prompt is too long"
    assert folded.content == message.content
    assert folded.usage == message.usage


def test_long_text_is_streamed_in_small_chunks() -> None:
    events = events_for(reply_text("abcdefghij" * 3), chunk_size=8)
    deltas = [e.delta for e in events if isinstance(e, TextDelta)]
    assert deltas == ["abcdefgh", "ijabcdef", "ghijabcd", "efghij"]


def test_reported_cost_is_kept_and_zero_cost_left_to_pricing() -> None:
    priced = AssistantMessage(content=[Text(text="x")], cost=Cost(input=0.5, total=0.5))
    done = events_for(priced)[-1]
    assert isinstance(done, Done)
    assert done.cost == Cost(input=0.5, total=0.5)
    done = events_for(reply_text("x"))[-1]
    assert isinstance(done, Done)
    assert done.cost is None


def test_reply_helpers() -> None:
    assert reply_text("hi", usage=Usage(output=1)).content == [Text(text="hi")]
    calls = reply_tool_calls(
        ("add", {"a": 1}), ToolCall(id="mine", name="sub"), ("mul", {}), text="ok"
    )
    assert calls.stop_reason is StopReason.TOOL_USE
    assert calls.content == [
        Text(text="ok"),
        ToolCall(id="call_1", name="add", arguments={"a": 1}),
        ToolCall(id="mine", name="sub"),
        ToolCall(id="call_3", name="mul", arguments={}),
    ]
    assert reply_error(ErrorKind.THROTTLED, "busy", retry_after=1.5) == ErrorEvent(
        kind=ErrorKind.THROTTLED, message="busy", retry_after=1.5
    )


# --------------------------------------------------------------------------- ScriptedStream


async def test_successive_calls_play_successive_replies() -> None:
    first = reply_tool_calls(("add", {"a": 1, "b": 2}), usage=Usage(input=3, output=4))
    second = reply_text("The answer is 3, as computed by the tool.", usage=Usage(input=8))
    model = ScriptedStream([first, second], chunk_size=5)
    assert model.remaining == 2
    got_first = await answer(model)
    assert model.remaining == 1
    got_second = await answer(model)
    assert model.remaining == 0
    for got, want in ((got_first, first), (got_second, second)):
        assert got.content == want.content
        assert got.stop_reason is want.stop_reason
        assert got.usage == want.usage


async def test_replies_arrive_as_start_delta_end_chunks() -> None:
    events = await collect(ScriptedStream([reply_text("hello world")], chunk_size=4))
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "StreamStart",
        "TextStart",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "TextEnd",
        "Done",
    ]


async def test_callables_receive_the_context() -> None:
    seen: list[LlmContext] = []

    def sync_reply(ctx: LlmContext) -> AssistantMessage:
        seen.append(ctx)
        return reply_text(f"you said {len(ctx.messages)} thing(s)")

    async def async_reply(ctx: LlmContext) -> AssistantMessage:
        seen.append(ctx)
        return reply_text(ctx.system_prompt)

    model = ScriptedStream([sync_reply, async_reply])
    ctx = context()
    assert (await answer(model, ctx)).text == "you said 1 thing(s)"
    assert (await answer(model, ctx)).text == "sys"
    assert seen == [ctx, ctx]


async def test_error_event_items() -> None:
    model = ScriptedStream([reply_error(ErrorKind.THROTTLED, "slow down", retry_after=2.0)])
    events = await collect(model)
    assert events == [ErrorEvent(kind=ErrorKind.THROTTLED, message="slow down", retry_after=2.0)]


async def test_callable_may_return_an_error_event() -> None:
    model = ScriptedStream([lambda ctx: reply_error(ErrorKind.NETWORK, "reset")])
    message = await answer(model)
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.NETWORK


async def test_exceptions_are_raised_by_the_stream() -> None:
    model = ScriptedStream([ConnectionResetError("peer went away"), reply_text("after")])
    with pytest.raises(ConnectionResetError, match="peer went away"):
        await collect(model)
    assert (await answer(model)).text == "after"


async def test_raw_event_lists_are_played_as_given() -> None:
    raw: list[AssistantMessageEvent] = [TextStart(index=0), TextDelta(index=0, delta="cut")]
    model = ScriptedStream([raw])
    assert await collect(model) == raw
    message = await answer(ScriptedStream([raw]))
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.NETWORK


async def test_exhausted_script_fails_with_an_error_event() -> None:
    model = ScriptedStream([reply_text("only")])
    await collect(model)
    events = await collect(model)
    assert len(events) == 1
    assert isinstance(events[0], ErrorEvent)
    assert "script exhausted" in events[0].message
    assert model.remaining == 0
    assert len(model.calls) == 2


async def test_calls_record_copies_of_the_contexts() -> None:
    model = ScriptedStream([reply_text("a"), reply_text("b")])
    messages: list[Any] = [UserMessage.from_text("first")]
    ctx = LlmContext(system_prompt="s", messages=messages)
    options = StreamOptions(temperature=0.1)
    async with aclosing(model(MODEL, ctx, options)) as events:  # type: ignore[type-var]
        async for _ in events:
            pass
    messages.append(UserMessage.from_text("second"))  # the caller reuses its list
    await collect(model, ctx)
    assert [len(c.context.messages) for c in model.calls] == [1, 2]
    assert model.calls[0].model == MODEL
    assert model.calls[0].options == options
    assert model.calls[0].context.system_prompt == "s"


async def test_call_is_recorded_even_if_never_iterated() -> None:
    model = ScriptedStream([reply_text("a")])
    stream = model(MODEL, context(), OPTIONS)
    assert len(model.calls) == 1
    assert model.remaining == 0
    await stream.aclose()  # type: ignore[attr-defined]


async def test_delay_does_not_change_what_is_streamed() -> None:
    reply = reply_text("tiny delays")
    assert await collect(ScriptedStream([reply], delay=0.001)) == await collect(
        ScriptedStream([reply])
    )


# --------------------------------------------------------------------------- FunctionStream


async def test_function_stream_computes_each_reply() -> None:
    def echo(ctx: LlmContext) -> AssistantMessage:
        last = ctx.messages[-1]
        assert isinstance(last, UserMessage)
        return reply_text(f"echo: {last.content[0].text}")  # type: ignore[union-attr]

    model = FunctionStream(echo)
    assert (await answer(model, context("one"))).text == "echo: one"
    assert (await answer(model, context("two"))).text == "echo: two"
    assert len(model.calls) == 2


async def test_function_stream_async_and_errors() -> None:
    async def flaky(ctx: LlmContext) -> AssistantMessage | ErrorEvent:
        if len(ctx.messages) == 1:
            return reply_error(ErrorKind.NETWORK, "blip")
        return reply_text("ok")

    model = FunctionStream(flaky)
    assert (await answer(model)).error_kind is ErrorKind.NETWORK
    two = LlmContext(messages=[UserMessage.from_text("a"), UserMessage.from_text("b")])
    assert (await answer(model, two)).text == "ok"
