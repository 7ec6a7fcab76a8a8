"""The loop's entry points: ``agent_loop``, ``agent_loop_continue`` and ``run_loop``.

``agent_loop`` is an async context manager (a class, not a generator: nothing here yields
from inside a task group or cancel scope) that runs the loop in a task group it owns and hands
the events to the ``async for`` in its body through an ``EventChannel``. Leaving the block early
cancels the run. ``run_loop`` awaits the loop directly and calls an optional callback per
event, with no channel at all.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Generic, cast

import anyio

from ._channel import EventChannel
from ._errors import InvalidContinue, NoMessages, single_exception
from ._events import MessageUpdate
from ._history import is_failed_answer
from ._loop import _Run
from ._stream import TextDelta
from ._types import AgentContext, AgentMessage, AgentResult, AssistantMessage, OutputT

if TYPE_CHECKING:
    from types import AsyncGeneratorType, TracebackType
    from typing import Self

    from anyio.abc import TaskGroup

    from ._config import AgentLoopConfig
    from ._events import AgentEvent
    from ._history import History

__all__ = ["EventStream", "agent_loop", "agent_loop_continue", "run_loop", "safe_callback"]

log = logging.getLogger("agentloop.loop")

EventCallback = Callable[["AgentEvent"], object]


def safe_callback(run: _Run, callback: EventCallback) -> None:
    """Tell ``callback`` the run's events: one that raises is logged, then told nothing more.

    Updates, once per streamed token, go to ``callback`` itself, with no wrapper in between:
    the loop catches what it raises and calls ``run.update_failed``.
    """
    active: list[EventCallback] = [callback]

    def drop() -> None:
        if active:
            log.exception("event callback %r raised; it is removed", active[0])
            active.clear()
            run.observed = False

    def emit(event: AgentEvent) -> None:
        if active:
            try:
                active[0](event)
            except Exception:
                drop()

    run.emit = emit
    run.emit_update = callback
    run.update_failed = drop


def _ignore(event: AgentEvent) -> None:
    return None


def check_continue(context: AgentContext) -> None:
    """Raise if there is nothing the loop could continue from.

    A failed answer (stop reason ``error``) may be continued from: the continued run retries
    the request (after a context overflow, with the overflow signal set for the transformers).

    Raises:
        NoMessages: the history is empty.
        InvalidContinue: the last message is the assistant's (and not a failed answer).
    """
    if not context.messages:
        raise NoMessages("cannot continue: the history is empty")
    last = context.messages[-1]
    if isinstance(last, AssistantMessage) and not is_failed_answer(last):
        raise InvalidContinue("cannot continue: the last message is the assistant's")


class EventStream(Generic[OutputT]):
    """The events of one run: ``async with`` it, then ``async for`` over it.

    After the iteration ended, ``result`` holds the run's ``AgentResult``. ``text_deltas()``
    iterates the answer's text as it streams instead of the events.

    Every event, in the order a run emits it, and what a display does with it:

    - ``AgentStart`` / ``AgentEnd``: exactly one each, first and last (``AgentEnd`` carries
      every message the run committed).
    - ``TurnStart`` / ``TurnEnd``: around each turn; ``TurnEnd.reason`` says how it ended.
    - ``MessageStart`` / ``MessageEnd``: around every committed message. For the assistant's
      answer, ``MessageUpdate`` events come between them with the provider's events as they
      stream (text, thinking and tool-call deltas).
    - ``StreamRetry``: the model call failed and will be tried again after ``delay`` seconds.
      Whatever the failed attempt streamed since ``MessageStart`` is void: discard it. The
      retry's events follow under the same ``MessageStart``.
    - ``ToolExecutionStart`` / ``ToolExecutionUpdate`` / ``ToolExecutionEnd``: each call of a
      batch, concurrently; every start has exactly one end.
    - ``ContextCompacted``: a transformer dropped or summarised messages before a request; the
      committed history is unchanged (only the request is shorter).
    """

    def __init__(
        self,
        prompts: Sequence[AgentMessage],
        context: AgentContext,
        config: AgentLoopConfig,
        *,
        on_event: Callable[[AgentEvent], None] | None = None,
        cancel_scope: anyio.CancelScope | None = None,
        capacity: int = 256,
        history: History | None = None,
    ) -> None:
        self._channel = EventChannel(capacity)
        # The channel's own buffer and boxes (never replaced), read per event by ``__anext__``.
        self._buffer = self._channel.buffer
        self._boxed = self._channel.boxed
        channel_send = self._channel.send
        if on_event is None:
            emit: Callable[[AgentEvent], None] = channel_send
        else:
            before = on_event

            def emit(event: AgentEvent) -> None:
                before(event)
                channel_send(event)

        self._prompts = prompts
        self._run = _Run(
            context,
            config,
            emit,
            cancel_scope=cancel_scope,
            channel=self._channel,
            history=history,
        )
        self._tg: TaskGroup | None = None
        self._events: AsyncGeneratorType[AgentEvent, None] | None = None  # see ``__aiter__``
        self._result: AgentResult[OutputT] | None = None
        self._fatal: BaseException | None = None

    @property
    def result(self) -> AgentResult[OutputT]:
        """The run's result.

        Raises:
            RuntimeError: the run has not finished.
        """
        if self._result is None:
            raise RuntimeError("the run has not finished")
        return self._result

    @property
    def run(self) -> _Run:
        """The run behind the stream (internal: ``Agent`` reaches the run's state through it)."""
        return self._run

    def steering_arrived(self) -> None:
        """Tell the run that its steering source (``get_steering_messages``) has messages.

        With ``steering_interrupt="now"`` the running tool calls are cancelled at once and the
        source is polled; otherwise the run finds them at its next poll. Safe from any thread.
        (``Agent.steer`` does this for an agent's own queue.)
        """
        self._run.steering_arrived_threadsafe()

    async def _main(self) -> None:
        try:
            self._result = await self._run.run(self._prompts)  # type: ignore[assignment]
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:
            # KeyboardInterrupt or SystemExit from the run (after its closing events). It must
            # not escape this child task (asyncio would stop the event loop): ``__aexit__``
            # raises it in the consumer's task.
            self._fatal = exc
        finally:
            self._channel.close_sender()

    async def __aenter__(self) -> Self:
        if self._tg is not None:
            raise RuntimeError("an EventStream can be entered only once")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        tg.start_soon(self._main)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg = self._tg
        assert tg is not None
        self._channel.close_receiver()
        events, self._events = self._events, None
        if events is not None and not events.ag_running:
            await events.aclose()  # (at a ``yield``: it ends at once)
        tg.cancel_scope.cancel()
        try:
            suppress = await tg.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            raise single_exception(group) from None
        fatal, self._fatal = self._fatal, None
        if fatal is not None:
            raise fatal
        return suppress

    _USAGE = "async with agent_loop(...) as events: async for event in events: ..."

    def _check_entered(self) -> None:
        if self._tg is None:
            raise TypeError(f"enter the event stream before iterating it: {self._USAGE}")

    def __aiter__(self) -> AsyncGenerator[AgentEvent, None]:
        # An async generator: it hands over each buffered event without a coroutine per event
        # (``__anext__`` makes one). The same one for every ``async for`` while it runs; after
        # an exception (a cancelled consumer, say) went through it, the next loop gets a new
        # one, which goes on from the first event not yet taken.
        self._check_entered()
        events = self._events
        if events is None or events.ag_frame is None:
            events = self._events = cast("AsyncGeneratorType[AgentEvent, None]", self._drain())
        return events

    async def _drain(self) -> AsyncGenerator[AgentEvent, None]:
        buffer = self._buffer
        boxed = self._boxed
        popleft = buffer.popleft
        channel = self._channel
        while True:
            while buffer and not boxed:
                yield popleft()
            event = channel.receive_nowait()  # an update coalesced in a box, if one waits
            if event is None:
                try:
                    event = await channel.receive()
                except anyio.EndOfStream:
                    return
            yield event

    async def __anext__(self) -> AgentEvent:
        buffer = self._buffer
        if buffer:  # buffered (so entered): no await, no call (once per token)
            if not self._boxed:
                return buffer.popleft()  # type: ignore[no-any-return]
            event = self._channel.receive_nowait()
            if event is not None:
                return event
        if self._tg is None:
            self._check_entered()
        try:
            return await self._channel.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def text_deltas(self) -> AsyncIterator[str]:
        """The answer's text as it streams, delta by delta, across every turn of the run.

        Iterates the events (use it instead of ``async for event in events``). Text a failed
        attempt streamed before a ``StreamRetry`` is not taken back: watch the events instead
        where that matters.
        """
        async for event in self:
            if type(event) is MessageUpdate:
                assert isinstance(event, MessageUpdate)
                update = event.event
                if type(update) is TextDelta:
                    yield update.delta


def agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    *,
    cancel_scope: anyio.CancelScope | None = None,
) -> EventStream[str]:
    """Run the loop with new ``prompts``; use as ``async with agent_loop(...) as events``.

    ``context`` is not modified. Cancelling ``cancel_scope`` aborts the run (it ends with stop
    reason ``aborted`` and its closing events); leaving the ``async with`` block early cancels
    it too.
    """
    return EventStream(prompts, context, config, cancel_scope=cancel_scope)


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    *,
    cancel_scope: anyio.CancelScope | None = None,
) -> EventStream[str]:
    """Run the loop from ``context`` as it is (after a tool result or a queued message).

    Raises:
        NoMessages: the history is empty.
        InvalidContinue: the last message is the assistant's.
    """
    check_continue(context)
    return EventStream((), context, config, cancel_scope=cancel_scope)


async def run_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    *,
    on_event: EventCallback | None = None,
    cancel_scope: anyio.CancelScope | None = None,
    continue_: bool = False,
) -> AgentResult[str]:
    """Run the loop to the end and return its result; ``on_event`` sees every event.

    ``on_event`` is called synchronously, before the loop proceeds; one that raises is logged
    and removed, and the run goes on. Cancelling ``cancel_scope`` aborts the run and returns
    its result (stop reason ``aborted``); cancelling the caller emits the closing events and
    then propagates the cancellation.

    Raises:
        NoMessages: with ``continue_=True``, the history is empty.
        InvalidContinue: with ``continue_=True``, the last message is the assistant's.
    """
    if continue_:
        check_continue(context)
    run = _Run(context, config, _ignore, cancel_scope=cancel_scope, observed=False)
    if on_event is None:
        return await run.run(prompts)
    safe_callback(run, on_event)
    run.observed = True
    try:
        return await run.run(prompts)
    finally:
        # The callback's wrappers refer to the run: let go of them, so that reference counting
        # alone frees the run.
        run.emit = run.emit_update = _ignore
        run.update_failed = None
