"""Failing examples the properties found, reduced to plain tests.

Each test pins one loop bug; its docstring gives the failing example, what was expected, what
happened and why. A test for an open bug fails until the fix lands, and ``checks.KNOWN_BUGS``
names the tolerance the properties keep meanwhile, to be turned off with the fix. README.md
lists which are fixed.
"""

from __future__ import annotations

import anyio
import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from .checks import paired
from .fakes import MODEL, Queue, Tracker, ZeroDelayRetry, make_tools
from .grammar import check_events

pytestmark = pytest.mark.anyio


def _config(stream: al.stream.StreamFn, **kwargs: object) -> al.loop.AgentLoopConfig:
    return al.loop.AgentLoopConfig(
        model=MODEL,
        stream_fn=stream,
        tools=make_tools(Tracker()),
        retry_strategy=ZeroDelayRetry(),
        **kwargs,  # type: ignore[arg-type]
    )


async def test_error_answer_tool_calls_get_results() -> None:
    """An answer that ends in an error after a complete tool call leaves the call unanswered.

    Expected: the call gets a ToolExecutionStart/End pair and an error result, as every call of
    a turn does (the aborted path strips calls; close_turn answers calls that never reached
    dispatch). Actual: the error path of ``_turn_body`` emits ``TurnEnd(error)`` directly, so
    the history holds a tool call without a result and no tool events were emitted for it.
    """
    answer: list[al.stream.AssistantMessageEvent] = [
        al.stream.ToolCallStart(index=0, id="c1", name="ok"),
        al.stream.ToolCallDelta(index=0, delta='{"n": 0}'),
        al.stream.ToolCallEnd(index=0),
        al.stream.ErrorEvent(kind=al.ErrorKind.AUTH, message="denied"),
    ]
    events: list[al.AgentEvent] = []
    result = await al.loop.run_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        _config(ScriptedStream([answer])),
        on_event=events.append,
    )
    assert result.stop_reason is al.StopReason.ERROR
    assert paired(result.messages) is None
    check_events(events)


async def test_abort_during_retry_backoff_ends_the_open_answer() -> None:
    """An abort while the loop waits to retry a failed model call leaves the answer open.

    Expected: the answer's ``MessageStart`` is closed by a ``MessageEnd`` (an empty answer with
    stop reason ``aborted``) before ``TurnEnd(aborted)``. Actual: ``_stream`` sets ``run.acc =
    None`` before ``anyio.sleep(delay)``, so ``close_turn`` finds neither an answer nor an
    accumulator and emits ``TurnEnd`` with the message still open.
    """
    scope = anyio.CancelScope()
    events: list[al.AgentEvent] = []

    def on_event(event: al.AgentEvent) -> None:
        events.append(event)
        if isinstance(event, al.StreamRetry):
            scope.cancel()

    result = await al.loop.run_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        _config(
            ScriptedStream([al.stream.ErrorEvent(kind=al.ErrorKind.NETWORK), reply_text("hi")])
        ),
        on_event=on_event,
        cancel_scope=scope,
    )
    assert result.stop_reason is al.StopReason.ABORTED
    starts = sum(isinstance(e, al.MessageStart) for e in events)
    ends = sum(isinstance(e, al.MessageEnd) for e in events)
    assert starts == ends
    check_events(events)


async def test_abort_at_turn_end_leaves_follow_ups_queued() -> None:
    """An abort requested as the last turn ends still polls (and consumes) a follow-up.

    Expected: the run ends aborted without polling follow-ups; "later" stays queued. Actual:
    ``_turns`` awaits ``get_follow_up_messages()`` with no cancellation check (the poll itself
    need not checkpoint), so the follow-up is taken, committed in a new turn, and only then
    does the abort take effect: the history ends with an unanswered "later".
    """
    follow_up = Queue("one_at_a_time")
    follow_up.put(al.UserMessage.from_text("later"))
    scope = anyio.CancelScope()

    def on_event(event: al.AgentEvent) -> None:
        if isinstance(event, al.TurnEnd):
            scope.cancel()

    result = await al.loop.run_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        _config(ScriptedStream([reply_text("hi")]), get_follow_up_messages=follow_up),
        on_event=on_event,
        cancel_scope=scope,
    )
    assert [m for _, taken in follow_up.polls for m in taken] == []
    assert len(follow_up.items) == 1
    assert result.stop_reason is al.StopReason.ABORTED


async def test_polled_steering_survives_a_stopping_policy() -> None:
    """Steering polled during a tool batch is lost when a post-turn policy stops the run.

    Expected: the steering message is committed (or stays queued). Actual: the batch moves it
    to ``run.pending``, the post-turn ``Stop`` sets ``run.ended``, and ``_turns`` returns
    without committing pending messages: the message is in neither the history nor the queue.
    ``Agent.pause()`` is such a policy, so pausing a run loses steering given during its last
    batch.
    """
    steering = Queue("one_at_a_time")

    class StopAfterTurn:
        def evaluate(self, ctx: al.policy.PolicyContext) -> al.policy.PolicyVerdict:
            return al.policy.Stop(reason="enough")

    steer = al.UserMessage.from_text("change course")

    def on_event(event: al.AgentEvent) -> None:
        if isinstance(event, al.ToolExecutionStart) and not steering.polls:
            steering.put(steer)

    result = await al.loop.run_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        _config(
            ScriptedStream([reply_tool_calls(("ok", {"n": 0}), ("ok", {"n": 1}))]),
            get_steering_messages=steering,
            steering_interrupt="after_call",  # the first poll is after a call ends
            post_turn_policies=[StopAfterTurn()],
        ),
        on_event=on_event,
    )
    assert [m for _, polled in steering.polls for m in polled] == [steer]
    assert result.stopped_by == "StopAfterTurn: enough"
    assert result.messages.count(steer) == 1


async def test_abort_during_a_batch_ends_that_turn_on_every_backend() -> None:
    """Asyncio and trio end an abort during a tool batch differently.

    Sequential batch of two calls that finish without a checkpoint; abort requested when the
    second starts. Expected (asyncio today): the turn ends ``aborted`` and no other turn
    starts. Actual on trio: the results are committed, the turn ends ``tools_executed`` and the
    abort only takes effect in the next turn. Cause: ``Batch.execute`` relies on the task
    group's exit to notice the cancellation; anyio's asyncio task group raises there when its
    scope is cancelled, trio's nursery does not once its children have finished. An explicit
    ``await anyio.lowlevel.checkpoint_if_cancelled()`` after each group makes both the same.
    """
    scope = anyio.CancelScope()
    events: list[al.AgentEvent] = []

    def on_event(event: al.AgentEvent) -> None:
        events.append(event)
        if isinstance(event, al.ToolExecutionStart) and event.call_id == "call_2":
            scope.cancel()

    result = await al.loop.run_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        _config(
            ScriptedStream([reply_tool_calls(("ok", {"n": 0}), ("ok", {"n": 0})), reply_text("x")]),
            tool_execution="sequential",
        ),
        on_event=on_event,
        cancel_scope=scope,
    )
    assert result.stop_reason is al.StopReason.ABORTED
    turn_ends = [e for e in events if isinstance(e, al.TurnEnd)]
    assert [e.reason for e in turn_ends] == [al.TurnEndReason.ABORTED]


async def test_steering_polled_in_an_aborted_batch_is_not_lost() -> None:
    """Steering polled by a tool task after the abort was requested vanishes.

    Concurrent batch of two calls that finish without a checkpoint; "change course" queued
    before the run; abort requested when the first call starts. Expected: the message is
    still queued (not polled after the abort) or committed exactly once. Actual: the first
    call's task finishes, ``Batch._poll_steering`` takes the message into ``batch.steering``,
    the group then raises the cancellation, and ``close_turn`` drops ``batch.steering``
    (``flush_pending`` only sees ``run.pending``): it is in neither the history nor the queue.
    """
    steering = Queue("one_at_a_time")
    steer = al.UserMessage.from_text("change course")
    steering.put(steer)
    scope = anyio.CancelScope()

    def on_event(event: al.AgentEvent) -> None:
        if isinstance(event, al.ToolExecutionStart):
            scope.cancel()

    result = await al.loop.run_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        _config(
            ScriptedStream([reply_tool_calls(("ok", {"n": 0}), ("ok", {"n": 0}))]),
            get_steering_messages=steering,
        ),
        on_event=on_event,
        cancel_scope=scope,
    )
    assert result.stop_reason is al.StopReason.ABORTED
    assert result.messages.count(steer) + list(steering.items).count(steer) == 1


async def test_messages_flushed_after_an_abort_get_a_new_turn_number() -> None:
    """The turn that commits polled messages after an aborted turn repeats its number.

    Concurrent batch ``ok`` + ``long`` with steering queued: ``ok`` ends, the steering is
    polled and interrupts ``long``; the abort is requested when ``long``'s end is emitted.
    Expected: ``TurnEnd(aborted, turn=0)``, then the steering committed in ``TurnStart(turn=1)``
    ... ``TurnEnd(turn=1)``. Actual: the flush turn is ``TurnStart(turn=0)`` again: on the
    abort path ``close_turn`` ends turn 0 but nothing advances ``run.turn`` (``_turns`` does it
    only after a turn returns normally), and ``flush_pending`` uses ``run.turn`` as it is.
    Advancing ``self.turn`` at the end of ``close_turn`` fixes it.
    """
    steering = Queue("one_at_a_time")
    steering.put(al.UserMessage.from_text("change course"))
    scope = anyio.CancelScope()
    events: list[al.AgentEvent] = []

    def on_event(event: al.AgentEvent) -> None:
        events.append(event)
        if isinstance(event, al.ToolExecutionEnd) and event.name == "long":
            scope.cancel()

    result = await al.loop.run_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        _config(
            ScriptedStream([reply_tool_calls(("ok", {"n": 0}), ("long", {"n": 0}))]),
            get_steering_messages=steering,
        ),
        on_event=on_event,
        cancel_scope=scope,
    )
    assert result.stop_reason is al.StopReason.ABORTED
    starts = [e.turn for e in events if isinstance(e, al.TurnStart)]
    assert starts == list(range(len(starts)))
    check_events(events)


async def test_no_model_call_after_an_abort_during_pre_turn_injection() -> None:
    """An abort requested while a pre-turn policy's message is committed still calls the model.

    Expected: the turn ends aborted before the model is called (no answer ``MessageStart``, no
    call of the stream function: with a real provider, no request is sent). Actual: between
    the pre-turn policies and the model call there is no cancellation check, so the answer's
    ``MessageStart`` is emitted and ``stream_fn`` is called; with this provider (which never
    checkpoints) the whole answer streams and the run ends ``stop``, the abort ignored. An ``await
    anyio.lowlevel.checkpoint_if_cancelled()`` before emitting the answer's ``MessageStart`` in
    ``_turn_body`` (and before each attempt in ``_stream``) fixes it.
    """

    class InjectOnce:
        def evaluate(self, ctx: al.policy.PolicyContext) -> al.policy.PolicyVerdict:
            if ctx.turn == 0:
                return al.policy.Inject(messages=[al.UserMessage.from_text("injected")])
            return al.policy.CONTINUE

    scope = anyio.CancelScope()
    events: list[al.AgentEvent] = []

    def on_event(event: al.AgentEvent) -> None:
        events.append(event)
        if (
            isinstance(event, al.MessageEnd)
            and isinstance(event.message, al.UserMessage)
            and event.message.content == [al.Text(text="injected")]
        ):
            scope.cancel()

    stream = ScriptedStream([reply_text("hi")])
    result = await al.loop.run_loop(
        [al.UserMessage.from_text("go")],
        al.loop.AgentContext(),
        _config(stream, pre_turn_policies=[InjectOnce()]),
        on_event=on_event,
        cancel_scope=scope,
    )
    assert result.stop_reason is al.StopReason.ABORTED
    assert stream.calls == []
    assert not [
        e
        for e in events
        if isinstance(e, al.MessageStart) and isinstance(e.message, al.AssistantMessage)
    ]
