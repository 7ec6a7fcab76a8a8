"""The loop's event order, spelled out for the cases a reader should see."""

from __future__ import annotations

import anyio
import pytest
from anyio import wait_all_tasks_blocked

import agentloop as al
from agentloop.testing import (
    ScriptedStream,
    ScriptItem,
    reply_error,
    reply_text,
    reply_tool_calls,
)

from ._helpers import MODEL, Recorder, config, names, paired

pytestmark = pytest.mark.anyio


@al.tool
async def echo(text: str) -> str:
    """Echo the text."""
    return text


async def test_text_only_turn() -> None:
    rec = Recorder()
    result = await al.loop.run_loop(
        [al.UserMessage.from_text("hi")],
        al.loop.AgentContext(),
        config([reply_text("hello")]),
        on_event=rec,
    )
    assert names(rec.events) == [
        "AgentStart",
        "TurnStart",
        "MessageStart",  # the prompt
        "MessageEnd",
        "MessageStart",  # the answer
        "MessageUpdate",
        "MessageEnd",
        "TurnEnd",
        "AgentEnd",
    ]
    turn_end = rec.of(al.TurnEnd)[0]
    assert turn_end.reason is al.TurnEndReason.COMPLETE
    assert turn_end.message.text == "hello"
    assert result.stop_reason is al.StopReason.STOP
    assert result.text == "hello"
    assert rec.of(al.AgentEnd)[0].messages == result.messages
    assert [type(m) for m in result.messages] == [al.UserMessage, al.AssistantMessage]


async def test_two_turns_with_one_tool_call_each() -> None:
    rec = Recorder()
    script = [
        reply_tool_calls(("echo", {"text": "a"})),
        reply_tool_calls(("echo", {"text": "b"})),
        reply_text("done"),
    ]
    result = await al.loop.run_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        config(script, tools=[echo]),
        on_event=rec,
    )
    turn_with_tool = [
        "TurnStart",
        "MessageStart",
        "MessageUpdate",
        "MessageEnd",
        "ToolExecutionStart",
        "ToolExecutionEnd",
        "MessageStart",  # the tool result
        "MessageEnd",
        "TurnEnd",
    ]
    assert names(rec.events) == [
        "AgentStart",
        "TurnStart",
        "MessageStart",
        "MessageEnd",
        *turn_with_tool[1:],
        *turn_with_tool,
        "TurnStart",
        "MessageStart",
        "MessageUpdate",
        "MessageEnd",
        "TurnEnd",
        "AgentEnd",
    ]
    reasons = [e.reason for e in rec.of(al.TurnEnd)]
    assert reasons == [
        al.TurnEndReason.TOOLS_EXECUTED,
        al.TurnEndReason.TOOLS_EXECUTED,
        al.TurnEndReason.COMPLETE,
    ]
    assert [e.turn for e in rec.of(al.TurnStart)] == [0, 1, 2]
    ends = rec.of(al.ToolExecutionEnd)
    assert [e.result.content[0].text for e in ends] == ["a", "b"]
    assert paired(result.messages)
    assert result.text == "done"


async def test_model_error_ends_the_run() -> None:
    rec = Recorder()
    follow_ups = 0

    async def follow_up() -> list[al.AgentMessage]:
        nonlocal follow_ups
        follow_ups += 1
        return []

    result = await al.loop.run_loop(
        [al.UserMessage.from_text("hi")],
        al.loop.AgentContext(),
        config([reply_error(al.ErrorKind.AUTH, "bad key")], get_follow_up_messages=follow_up),
        on_event=rec,
    )
    assert names(rec.events)[-3:] == ["MessageEnd", "TurnEnd", "AgentEnd"]
    assert rec.of(al.TurnEnd)[0].reason is al.TurnEndReason.ERROR
    assert result.stop_reason is al.StopReason.ERROR
    assert result.error == "bad key"
    assert result.error_kind is al.ErrorKind.AUTH
    assert isinstance(result.messages[-1], al.AssistantMessage)
    assert result.messages[-1].error_message == "bad key"
    assert follow_ups == 0
    with pytest.raises(al.StreamError):
        result.raise_for_error()


async def test_abort_during_streaming() -> None:
    rec = Recorder()
    started = anyio.Event()

    async def stalls(ctx: al.stream.LlmContext) -> al.AssistantMessage:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    stream = ScriptedStream([stalls])
    scope = anyio.CancelScope()
    result: al.AgentResult | None = None

    async def run() -> None:
        nonlocal result
        result = await al.loop.run_loop(
            [al.UserMessage.from_text("hi")],
            al.loop.AgentContext(),
            config(stream),
            on_event=rec,
            cancel_scope=scope,
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        scope.cancel()
    assert result is not None
    assert result.stop_reason is al.StopReason.ABORTED
    assert names(rec.events)[-4:] == ["MessageStart", "MessageEnd", "TurnEnd", "AgentEnd"]
    assert rec.of(al.TurnEnd)[-1].reason is al.TurnEndReason.ABORTED
    assert result.messages[-1].stop_reason is al.StopReason.ABORTED  # type: ignore[union-attr]


async def test_abort_during_tools_pairs_every_call() -> None:
    rec = Recorder()
    running = 0
    all_running = anyio.Event()
    finished: list[str] = []

    @al.tool
    async def slow(n: int) -> str:
        """Never finishes by itself."""
        nonlocal running
        running += 1
        if running == 2:
            all_running.set()
        try:
            await anyio.sleep_forever()
        finally:
            finished.append(f"slow{n}")
        return "unreachable"

    script = [reply_tool_calls(("echo", {"text": "quick"}), ("slow", {"n": 1}), ("slow", {"n": 2}))]
    scope = anyio.CancelScope()
    result: al.AgentResult | None = None

    async def run() -> None:
        nonlocal result
        result = await al.loop.run_loop(
            [al.UserMessage.from_text("hi")],
            al.loop.AgentContext(),
            config(script, tools=[echo, slow]),
            on_event=rec,
            cancel_scope=scope,
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await all_running.wait()
        await wait_all_tasks_blocked()
        scope.cancel()
    assert result is not None
    assert result.stop_reason is al.StopReason.ABORTED
    assert sorted(finished) == ["slow1", "slow2"]  # both tool tasks ended with the run
    assert paired(result.messages)
    results = [m for m in result.messages if isinstance(m, al.ToolResultMessage)]
    assert [r.is_error for r in results] == [False, True, True]
    assert "aborted" in results[1].text
    starts, ends = rec.of(al.ToolExecutionStart), rec.of(al.ToolExecutionEnd)
    assert sorted(e.call_id for e in starts) == sorted(e.call_id for e in ends)
    assert len(ends) == 3
    assert names(rec.events)[-2:] == ["TurnEnd", "AgentEnd"]
    assert rec.of(al.TurnEnd)[-1].reason is al.TurnEndReason.ABORTED


async def test_cancelling_the_caller_emits_closing_events_and_propagates() -> None:
    rec = Recorder()
    started = anyio.Event()

    async def stalls(ctx: al.stream.LlmContext) -> al.AssistantMessage:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    with anyio.CancelScope() as outer:

        async def cancel_when_started() -> None:
            await started.wait()
            outer.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_when_started)
            await al.loop.run_loop(
                [al.UserMessage.from_text("hi")],
                al.loop.AgentContext(),
                config([stalls]),
                on_event=rec,
            )
            raise AssertionError("run_loop should have been cancelled")
    assert outer.cancelled_caught
    assert names(rec.events)[-2:] == ["TurnEnd", "AgentEnd"]


async def test_cancelling_the_caller_from_a_callback_ends_the_run_at_its_next_await() -> None:
    # The loop's own abort checks read the run's cancel scope; a cancellation of the caller's
    # scope, asked synchronously by a callback of the run, takes effect where the run next
    # waits (here: for the tool, which would otherwise wait forever). Nothing hangs, every
    # event closes, and the model is not asked again.
    rec = Recorder()
    requests = 0

    @al.tool
    async def forever() -> str:
        """Wait until cancelled."""
        await anyio.sleep_forever()
        return "never"

    def answer(ctx: al.stream.LlmContext) -> al.AssistantMessage:
        nonlocal requests
        requests += 1
        return reply_tool_calls(("forever", {}))

    with anyio.CancelScope() as outer:

        def cancel_on_the_answer(event: al.AgentEvent) -> None:
            rec(event)
            if isinstance(event, al.MessageEnd) and isinstance(event.message, al.AssistantMessage):
                outer.cancel()

        await al.loop.run_loop(
            [al.UserMessage.from_text("go")],
            al.loop.AgentContext(),
            config([answer, answer], tools=[forever]),
            on_event=cancel_on_the_answer,
        )
        raise AssertionError("run_loop should have been cancelled")
    assert outer.cancelled_caught
    assert requests == 1
    ends = rec.of(al.ToolExecutionEnd)
    assert [(e.name, e.is_error) for e in ends] == [("forever", True)]
    assert names(rec.events)[-2:] == ["TurnEnd", "AgentEnd"]
    assert rec.of(al.TurnEnd)[-1].reason is al.TurnEndReason.ABORTED


async def test_an_abort_read_from_the_stream_mid_batch_ends_every_call_before_its_result() -> None:
    # The consumer reads the first call's start and aborts while the other call waits at a
    # checkpoint: that call's task is cancelled and ends before the run's task hears of the
    # abort. Its end event must still come, and before its result is committed. (Found by the
    # conformance suite; the batch's wait returned normally and the result was committed with
    # no ToolExecutionEnd.)
    @al.tool
    async def quick() -> str:
        """Return at once."""
        return "quick"

    @al.tool
    async def stepping() -> str:
        """Wait one checkpoint, then return."""
        await anyio.lowlevel.checkpoint()
        return "stepped"

    async def never(context: al.stream.LlmContext) -> al.AssistantMessage:
        # The run may finish its batch before the consumer is scheduled (trio shuffles the
        # tasks it wakes together): the next request waits for the abort, so that it always
        # comes while the run is still going.
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    script: list[ScriptItem] = [reply_tool_calls(("quick", {}), ("stepping", {})), never]
    scope = anyio.CancelScope()
    seen: list[al.AgentEvent] = []
    cfg = config(script, tools=[quick, stepping])
    async with al.loop.agent_loop(
        [al.UserMessage.from_text("go")], al.loop.AgentContext(), cfg, cancel_scope=scope
    ) as events:
        async for event in events:
            seen.append(event)
            if isinstance(event, al.ToolExecutionStart):
                scope.cancel()
    assert events.result.stop_reason is al.StopReason.ABORTED
    started = [e.call_id for e in seen if isinstance(e, al.ToolExecutionStart)]
    assert started
    ended: set[str] = set()
    for event in seen:
        if isinstance(event, al.ToolExecutionEnd):
            ended.add(event.call_id)
        if isinstance(event, al.MessageStart) and isinstance(event.message, al.ToolResultMessage):
            assert event.message.tool_call_id in ended, "a result committed before its call ended"
    assert set(started) <= ended
    assert names(seen)[-2:] == ["TurnEnd", "AgentEnd"]


async def test_event_stream_yields_the_same_events_as_the_callback() -> None:
    script = [reply_tool_calls(("echo", {"text": "a"})), reply_text("done " * 50)]
    rec = Recorder()
    await al.loop.run_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        config(script, tools=[echo]),
        on_event=rec,
    )
    streamed: list[al.AgentEvent] = []
    async with al.loop.agent_loop(
        [al.UserMessage.from_text("go")], al.loop.AgentContext(), config(script, tools=[echo])
    ) as events:
        async for event in events:
            streamed.append(event)
    assert [type(e) for e in streamed] == [type(e) for e in rec.events]
    assert events.result.text == ("done " * 50)


async def test_leaving_the_stream_early_cancels_the_run() -> None:
    finished = anyio.Event()
    cancelled = False

    @al.tool
    async def forever() -> str:
        """Runs until cancelled."""
        nonlocal cancelled
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled = True
            raise
        finally:
            finished.set()
        return ""

    async with al.loop.agent_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        config([reply_tool_calls(("forever", {}))], tools=[forever]),
    ) as events:
        async for event in events:
            if isinstance(event, al.ToolExecutionStart):
                break
    assert finished.is_set()
    assert cancelled


async def test_continue_checks_the_history() -> None:
    with pytest.raises(al.NoMessages):
        al.loop.agent_loop_continue(al.loop.AgentContext(), config([]))
    ctx = al.loop.AgentContext(messages=[al.UserMessage.from_text("q"), al.AssistantMessage()])
    with pytest.raises(al.InvalidContinue):
        al.loop.agent_loop_continue(ctx, config([]))
    with pytest.raises(al.InvalidContinue):
        await al.loop.run_loop([], ctx, config([]), continue_=True)


async def test_continue_from_a_user_message() -> None:
    ctx = al.loop.AgentContext(messages=[al.UserMessage.from_text("q")])
    async with al.loop.agent_loop_continue(ctx, config([reply_text("a")])) as events:
        seen = [e async for e in events]
    assert isinstance(seen[0], al.AgentStart)
    assert events.result.text == "a"
    assert len(events.result.messages) == 1  # only the answer is new
    assert len(ctx.messages) == 1  # the caller's context is not modified


async def test_model_name_and_context_reach_the_provider() -> None:
    stream = ScriptedStream([reply_text("x")])
    ctx = al.loop.AgentContext(
        system_prompt="be brief", messages=[al.UserMessage.from_text("earlier")]
    )
    await al.loop.run_loop([al.UserMessage.from_text("now")], ctx, config(stream, tools=[echo]))
    call = stream.calls[0]
    assert call.model == MODEL
    assert call.context.system_prompt == "be brief"
    assert [m.content[0].text for m in call.context.messages] == ["earlier", "now"]  # type: ignore[union-attr]
    assert [t.name for t in call.context.tools] == ["echo"]
    assert call.context.tools[0].parameters["required"] == ["text"]


async def test_a_run_no_one_observes_makes_only_the_events_its_owner_keeps() -> None:
    # Every event but ``MessageEnd`` exists for observers; with none (an Agent without
    # subscribers, run_loop without on_event), the run makes none of them. ``MessageEnd`` is
    # always made: an agent keeps the message, records it and hands it to ``on_message``.
    from agentloop._loop import _Run

    def script() -> list[al.AssistantMessage]:
        return [reply_tool_calls(("echo", {"text": "a"})), reply_text("done")]

    kept: list[al.AgentEvent] = []
    run = _Run(al.loop.AgentContext(), config(script(), tools=[echo]), kept.append, observed=False)
    result = await run.run([al.UserMessage.from_text("go")])
    assert result.text == "done"
    assert names(kept) == ["MessageEnd"] * 4  # the prompt, the call, its result, the answer
    assert [e.message for e in kept if isinstance(e, al.MessageEnd)] == result.messages
    # Observed, the same run makes the whole lifecycle, the same message ends among it.
    everything: list[al.AgentEvent] = []
    run = _Run(al.loop.AgentContext(), config(script(), tools=[echo]), everything.append)
    await run.run([al.UserMessage.from_text("go")])
    assert [n for n in names(everything) if n == "MessageEnd"] == names(kept)
    assert names(everything)[:3] == ["AgentStart", "TurnStart", "MessageStart"]
    assert {"ToolExecutionStart", "ToolExecutionEnd"} <= set(names(everything))
    assert names(everything)[-2:] == ["TurnEnd", "AgentEnd"]
