"""Retries, overflow and max-tokens recovery, transformers, history repair, follow-ups."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_error, reply_text, reply_tool_calls

from ._helpers import MODEL, Recorder, config, names, paired, results_of

pytestmark = pytest.mark.anyio


@al.tool
async def echo(text: str) -> str:
    """Echo."""
    return text


def prompt(text: str = "go") -> list[al.AgentMessage]:
    return [al.UserMessage.from_text(text)]


async def test_throttling_is_retried_within_one_message_lifecycle() -> None:
    stream = ScriptedStream(
        [
            reply_error(al.ErrorKind.THROTTLED, "slow down", retry_after=0.0),
            reply_error(al.ErrorKind.NETWORK, "reset"),
            reply_text("finally"),
        ]
    )
    rec = Recorder()
    result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), config(stream), on_event=rec)
    assert result.text == "finally"
    assert len(stream.calls) == 3
    retries = rec.of(al.StreamRetry)
    assert [(r.attempt, r.kind) for r in retries] == [
        (1, al.ErrorKind.THROTTLED),
        (2, al.ErrorKind.NETWORK),
    ]
    # One MessageStart/MessageEnd for the answer, whatever the attempts.
    assert len(rec.of(al.MessageStart)) == 2  # the prompt and the answer
    assert names(rec.events).count("StreamRetry") == 2


async def test_retries_run_out_and_non_retryable_errors_are_not_retried() -> None:
    stream = ScriptedStream([reply_error(al.ErrorKind.THROTTLED, "busy")] * 5)
    result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), config(stream))
    assert len(stream.calls) == 3  # max_attempts=3 in the helper's strategy
    assert result.error_kind is al.ErrorKind.THROTTLED
    with pytest.raises(al.ModelThrottled):
        result.raise_for_error()

    stream = ScriptedStream([reply_error(al.ErrorKind.CONTENT_FILTERED, "no"), reply_text("x")])
    result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), config(stream))
    assert len(stream.calls) == 1
    assert result.error_kind is al.ErrorKind.CONTENT_FILTERED


async def test_a_provider_that_raises_becomes_an_error_message() -> None:
    stream = ScriptedStream([ConnectionResetError("peer reset"), ValueError("bug in adapter")])
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(stream, retry_strategy=al.retry.NoRetry())
    )
    assert result.stop_reason is al.StopReason.ERROR
    assert result.error_kind is al.ErrorKind.NETWORK
    assert "peer reset" in (result.error or "")
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(stream, retry_strategy=al.retry.NoRetry())
    )
    assert result.error_kind is al.ErrorKind.OTHER


async def test_malformed_streams_end_as_typed_errors() -> None:
    cases: list[list[al.stream.AssistantMessageEvent]] = [
        [al.stream.TextDelta(index=0, delta="x"), al.stream.Done()],
        [al.stream.TextStart(index=0), al.stream.TextDelta(index=0, delta="never ends")],
    ]
    for events in cases:
        rec = Recorder()
        result = await al.loop.run_loop(
            prompt(),
            al.loop.AgentContext(),
            config(ScriptedStream([events]), tools=[echo], retry_strategy=al.retry.NoRetry()),
            on_event=rec,
        )
        assert result.stop_reason is al.StopReason.ERROR
        assert "malformed provider stream" in (result.error or "")
        assert isinstance(rec.events[-1], al.AgentEnd)
        assert paired(result.messages)


async def test_a_tool_call_with_broken_json_is_answered_and_the_run_goes_on() -> None:
    broken: list[al.stream.AssistantMessageEvent] = [
        al.stream.ToolCallStart(index=0, id="c", name="echo"),
        al.stream.ToolCallDelta(index=0, delta='{"text": '),
        al.stream.ToolCallEnd(index=0),
        al.stream.Done(stop_reason=al.StopReason.TOOL_USE),
    ]
    stream = ScriptedStream([broken, reply_text("sorry, fixed")])
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(stream, tools=[echo], retry_strategy=al.retry.NoRetry()),
    )
    assert result.stop_reason is al.StopReason.STOP
    assert result.text == "sorry, fixed"
    results = [m for m in result.messages if isinstance(m, al.ToolResultMessage)]
    assert len(results) == 1 and results[0].is_error
    assert "arguments are not valid JSON" in results[0].text
    assert '{"text": ' in results[0].text  # what the model sent, so it can correct itself
    # The model saw the error result on its next call.
    assert stream.calls[1].context.messages[-1] == results[0]
    assert paired(result.messages)


async def test_overflow_is_recovered_once_per_turn() -> None:
    seen: list[tuple[bool, int]] = []

    def window(
        messages: list[al.AgentMessage], ctx: al.loop.TransformContext
    ) -> list[al.AgentMessage]:
        seen.append((ctx.overflow, len(messages)))
        if ctx.overflow:
            ctx.report("dropped everything but the last message", dropped=len(messages) - 1)
            return messages[-1:]
        return messages

    history: list[al.AgentMessage] = [al.UserMessage.from_text(f"old {i}") for i in range(4)]
    stream = ScriptedStream(
        [reply_error(al.ErrorKind.CONTEXT_OVERFLOW, "prompt is too long"), reply_text("fits now")]
    )
    rec = Recorder()
    result = await al.loop.run_loop(
        prompt("new"),
        al.loop.AgentContext(messages=history),
        config(stream, transform_context=window),
        on_event=rec,
    )
    assert result.text == "fits now"
    assert seen == [(False, 5), (True, 5)]
    assert len(stream.calls[1].context.messages) == 1
    compacted = rec.of(al.ContextCompacted)
    assert [c.dropped for c in compacted] == [4]
    assert len(rec.of(al.MessageStart)) == 2  # prompt + one answer lifecycle
    assert not any(isinstance(m, al.AssistantMessage) and m.error_message for m in result.messages)

    stream = ScriptedStream([reply_error(al.ErrorKind.CONTEXT_OVERFLOW, "still too long")] * 3)
    result = await al.loop.run_loop(
        prompt("new"),
        al.loop.AgentContext(messages=history),
        config(stream, transform_context=window),
    )
    assert len(stream.calls) == 2  # one recovery attempt, not more
    assert result.error_kind is al.ErrorKind.CONTEXT_OVERFLOW
    with pytest.raises(al.ContextWindowOverflow):
        result.raise_for_error()


async def test_transformers_run_in_order_every_turn_and_messages_convert_once() -> None:
    log: list[str] = []

    async def async_transform(
        messages: list[al.AgentMessage], ctx: al.loop.TransformContext
    ) -> list[al.AgentMessage]:
        log.append(f"async {ctx.turn}")
        return messages

    def transform(
        messages: list[al.AgentMessage], ctx: al.loop.TransformContext
    ) -> list[al.AgentMessage]:
        log.append(f"sync {ctx.turn}")
        return messages

    def convert(message: al.AgentMessage) -> al.LlmMessage | None:
        log.append("convert")
        return al.loop.default_convert_to_llm(message)

    script = [reply_tool_calls(("echo", {"text": "a"})), reply_text("done")]
    await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(
            script,
            tools=[echo],
            transform_context=transform,
            async_transform_context=async_transform,
            convert_to_llm=convert,
        ),
    )
    # Each turn runs the asynchronous transformer, then the synchronous one; each message is
    # converted once, when it is committed, never again for a later turn's request.
    transforms = [entry for entry in log if entry != "convert"]
    assert transforms == ["async 0", "sync 0", "async 1", "sync 1"]
    # prompt, answer with a call, its result, final answer: four messages, four conversions.
    assert log.count("convert") == 4
    assert log.index("sync 1") > log.index("convert")


async def test_custom_messages_are_kept_but_not_sent() -> None:
    class Note(al.CustomMessage, frozen=True, tag="test_note"):
        text: str

    stream = ScriptedStream([reply_text("ok")])
    result = await al.loop.run_loop(
        [Note(text="for the UI"), al.UserMessage.from_text("q")],
        al.loop.AgentContext(),
        config(stream),
    )
    assert isinstance(result.messages[0], Note)
    assert all(not isinstance(m, Note) for m in stream.calls[0].context.messages)


async def test_max_tokens_recovery_replaces_incomplete_calls() -> None:
    ran: list[str] = []

    @al.tool
    async def echo2(text: str) -> str:
        """Echo."""
        ran.append(text)
        return text

    cut = al.AssistantMessage(
        content=[
            al.ToolCall(id="ok", name="echo2", arguments={"text": "complete"}),
            al.ToolCall(id="cut", name="echo2", partial_json='{"text": "trunc'),
        ],
        stop_reason=al.StopReason.LENGTH,
    )
    stream = ScriptedStream([cut, reply_text("retrying shorter")])
    rec = Recorder()
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(stream, tools=[echo2]), on_event=rec
    )
    assert ran == ["complete"]
    results = results_of(result.messages)
    assert [r.tool_call_id for r in results] == ["ok", "cut"]
    assert results[1].is_error and "token limit" in results[1].text
    assert result.error is None
    assert paired(result.messages)
    assert result.text == "retrying shorter"


async def test_history_repair_answers_orphan_calls() -> None:
    history: list[al.AgentMessage] = [
        al.UserMessage.from_text("earlier"),
        al.AssistantMessage(
            content=[al.ToolCall(id="lost", name="echo", arguments={"text": "x"})],
            stop_reason=al.StopReason.TOOL_USE,
        ),
        al.ToolResultMessage(tool_call_id="stray", content=[al.Text(text="no call")]),
    ]
    stream = ScriptedStream([reply_text("ok")])
    await al.loop.run_loop(
        prompt(), al.loop.AgentContext(messages=history), config(stream, tools=[echo])
    )
    sent = stream.calls[0].context.messages
    assert [type(m).__name__ for m in sent] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "UserMessage",
    ]
    repaired = sent[2]
    assert isinstance(repaired, al.ToolResultMessage)
    assert repaired.tool_call_id == "lost" and repaired.is_error


async def test_dynamic_system_prompt_once_per_turn_and_api_key_per_call() -> None:
    prompts = iter(["first prompt", "second prompt"])
    computed = 0
    keys: list[str] = []

    def system_prompt() -> str:
        nonlocal computed
        computed += 1
        return next(prompts)

    async def get_key(provider: str) -> str:
        keys.append(provider)
        return f"key-{len(keys)}"

    stream = ScriptedStream(
        [
            reply_error(al.ErrorKind.CONTEXT_OVERFLOW, "too long"),
            reply_tool_calls(("echo", {"text": "a"})),
            reply_text("done"),
        ]
    )

    def prune(
        messages: list[al.AgentMessage], ctx: al.loop.TransformContext
    ) -> list[al.AgentMessage]:
        return messages[-1:] if ctx.overflow else messages

    earlier: list[al.AgentMessage] = [
        al.UserMessage.from_text("earlier"),
        al.AssistantMessage(content=[al.Text(text="earlier answer")]),
    ]
    await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(system_prompt="static", messages=earlier),
        config(
            stream,
            tools=[echo],
            system_prompt=system_prompt,
            get_api_key=get_key,
            transform_context=prune,
        ),
    )
    assert computed == 2  # two turns, the overflow retry reused the first
    assert [c.context.system_prompt for c in stream.calls] == [
        "first prompt",
        "first prompt",
        "second prompt",
    ]
    assert keys == [MODEL.provider] * 3
    assert [c.options.api_key for c in stream.calls] == ["key-1", "key-2", "key-3"]
    assert "key-1" not in repr(stream.calls[0].options)


async def test_follow_ups_continue_the_run_and_steering_after_a_text_turn() -> None:
    follow: list[al.AgentMessage] = [al.UserMessage.from_text("and then?")]
    steer_after_text: list[al.AgentMessage] = [al.UserMessage.from_text("also this")]
    polls = {"steer": 0, "follow": 0}

    async def poll_follow() -> list[al.AgentMessage]:
        polls["follow"] += 1
        taken = list(follow)
        follow.clear()
        return taken

    async def poll_steer() -> list[al.AgentMessage]:
        polls["steer"] += 1
        taken = list(steer_after_text)
        steer_after_text.clear()
        return taken

    stream = ScriptedStream([reply_text("one"), reply_text("two"), reply_text("three")])
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(stream, get_follow_up_messages=poll_follow, get_steering_messages=poll_steer),
    )
    user_texts = [m.content[0].text for m in result.messages if isinstance(m, al.UserMessage)]  # type: ignore[union-attr]
    assert user_texts == ["go", "also this", "and then?"]
    assert result.text == "three"
    assert polls["follow"] == 2


async def test_error_and_abort_never_poll_follow_ups() -> None:
    polled = 0

    async def poll_follow() -> list[al.AgentMessage]:
        nonlocal polled
        polled += 1
        return [al.UserMessage.from_text("more")]

    await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config([reply_error(al.ErrorKind.AUTH, "no")], get_follow_up_messages=poll_follow),
    )
    scope = anyio.CancelScope()
    scope.cancel()
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config([reply_text("x")], get_follow_up_messages=poll_follow),
        cancel_scope=scope,
    )
    assert result.stop_reason is al.StopReason.ABORTED
    assert polled == 0


async def test_raising_hooks_end_the_run_cleanly() -> None:
    def broken(
        messages: list[al.AgentMessage], ctx: al.loop.TransformContext
    ) -> list[al.AgentMessage]:
        raise KeyError("oops")

    rec = Recorder()
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config([reply_text("x")], transform_context=broken),
        on_event=rec,
    )
    assert result.stop_reason is al.StopReason.ERROR
    assert "KeyError" in (result.error or "")
    assert names(rec.events)[-2:] == ["TurnEnd", "AgentEnd"]
    assert rec.of(al.TurnEnd)[0].reason is al.TurnEndReason.ERROR


async def test_a_raising_callback_is_dropped_and_the_run_goes_on() -> None:
    calls = 0

    def bad(event: al.AgentEvent) -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("subscriber bug")

    script = [reply_tool_calls(("echo", {"text": "a"})), reply_text("done")]
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[echo]), on_event=bad
    )
    assert calls == 1
    assert result.text == "done"


async def test_a_callback_raising_at_a_streamed_delta_is_dropped_and_the_answer_stands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Deltas reach ``on_event`` with no wrapper in between: the loop catches what it raises.
    seen: list[str] = []

    def bad(event: al.AgentEvent) -> None:
        inner = event.event if isinstance(event, al.MessageUpdate) else event
        seen.append(type(inner).__name__)
        if isinstance(inner, al.stream.TextDelta):
            raise RuntimeError("subscriber bug")

    script = [reply_text("a long answer, streamed in several deltas")]
    result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), config(script), on_event=bad)
    assert result.text == "a long answer, streamed in several deltas"
    assert result.stop_reason is al.StopReason.STOP
    assert seen[-3:] == ["StreamStart", "TextStart", "TextDelta"]  # nothing after it
    assert "event callback" in caplog.text and "subscriber bug" in caplog.text


async def test_no_task_outlives_an_abort() -> None:
    alive: set[str] = set()
    both = anyio.Event()

    @al.tool
    async def linger(name: str) -> str:
        """Shields its cleanup for a moment, then ends."""
        alive.add(name)
        if len(alive) == 2:
            both.set()
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                for _ in range(5):
                    await anyio.lowlevel.checkpoint()
            alive.discard(name)
        return ""

    scope = anyio.CancelScope()
    before = len(anyio.get_running_tasks())
    script = [reply_tool_calls(("linger", {"name": "a"}), ("linger", {"name": "b"}))]
    result: list[al.AgentResult] = []

    async def run() -> None:
        result.append(
            await al.loop.run_loop(
                prompt(), al.loop.AgentContext(), config(script, tools=[linger]), cancel_scope=scope
            )
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await both.wait()
        scope.cancel()
    assert not alive
    assert result[0].stop_reason is al.StopReason.ABORTED
    assert len(anyio.get_running_tasks()) == before
    assert paired(result[0].messages)


async def test_usage_and_cost_are_summed_and_priced() -> None:
    priced = al.ModelSpec(provider="test", model_id="m", pricing=al.Pricing(input=1.0, output=2.0))
    stream = ScriptedStream(
        [
            reply_tool_calls(
                ("echo", {"text": "a"}), usage=al.Usage(input=1000, output=100, total=1100)
            ),
            reply_text("done", usage=al.Usage(input=2000, output=50, total=2050)),
        ]
    )
    cfg = config(stream, tools=[echo])
    cfg.model = priced
    result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), cfg)
    assert result.usage == al.Usage(input=3000, output=150, total=3150)
    assert result.cost.total == pytest.approx((3000 * 1.0 + 150 * 2.0) / 1_000_000)
    per_message: Any = [m.cost.total for m in result.messages if isinstance(m, al.AssistantMessage)]
    assert sum(per_message) == pytest.approx(result.cost.total)


@pytest.mark.parametrize("answers", [0, 1], ids=["no answer", "one answer"])
async def test_each_run_has_usage_and_cost_of_its_own(answers: int) -> None:
    # A run's sums start from shared empty values: what one run's result holds must never be
    # another's (their ``extra`` maps are mutable).
    async def one() -> al.AgentResult[str]:
        cfg = config([reply_text("hi", usage=al.Usage(input=1, extra={"a": 1}))], tools=[])
        scope = anyio.CancelScope()
        if not answers:
            scope.cancel()  # aborted before the request: nothing spent
        return await al.loop.run_loop(prompt(), al.loop.AgentContext(), cfg, cancel_scope=scope)

    first = await one()
    first.usage.extra["leak"] = 1
    first.cost.extra["leak"] = 1.0
    second = await one()
    assert "leak" not in second.usage.extra and "leak" not in second.cost.extra
    assert second.usage.input == answers
    assert second.usage.extra == ({"a": 1} if answers else {})
