"""One turn: prepare the request, stream the answer (with retries), run its tools.

The order within a turn: inject pending messages → async transform → sync transform (the
overflow signal is reset after it) → convert to LLM messages → pre-turn policies → resolve the
API key → stream with retry → accumulate → commit → tools → post-turn policies → commit the
tool results → ``TurnEnd``. The system prompt is computed once per turn and reused by an
overflow retry; all retries of a turn share one ``MessageStart``/``MessageEnd`` pair.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable
from inspect import isawaitable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import msgspec

from ._dispatch import Batch
from ._errors import HookFailed, ModelError, error_for_kind
from ._events import MessageStart, MessageUpdate, StreamRetry, TurnEndReason
from ._policy import Inject, Replace, Stop
from ._redaction import redact
from ._stream import Accumulator, ErrorEvent
from ._types import (
    AgentMessage,
    AssistantMessage,
    ErrorKind,
    LlmContext,
    StopReason,
    StreamOptions,
    ToolCall,
    ToolResultMessage,
    Usage,
)

if TYPE_CHECKING:
    from ._instrumentation import Hook, ModelCallInfo
    from ._loop import _Run

__all__ = ["resume_turn", "run_turn"]

log = logging.getLogger("agentloop.loop")
_NONE: frozenset[str] = frozenset()
_encode = msgspec.json.encode


async def _system_prompt(run: _Run) -> str:
    dynamic = run.config.system_prompt
    if dynamic is None:
        return run.system_prompt
    try:
        value = dynamic()
        if isinstance(value, Awaitable):
            value = await value
    except Exception as exc:
        raise HookFailed.wrap("system_prompt", exc) from exc
    return str(value)


async def _request(run: _Run, system_prompt: str) -> LlmContext:
    """Build the request context: transformers, conversion, history repair.

    Raises:
        HookFailed: a transformer or the converter raised.
    """
    config = run.config
    messages: list[AgentMessage] | None = None
    if config.async_transform_context is not None:
        try:
            messages = await config.async_transform_context(
                run.messages, run.transform_context(run.overflow_signal, system_prompt)
            )
        except Exception as exc:
            raise HookFailed.wrap("async_transform_context", exc) from exc
    if config.transform_context is not None:
        try:
            messages = config.transform_context(
                run.messages if messages is None else messages,
                run.transform_context(run.overflow_signal, system_prompt),
            )
        except Exception as exc:
            raise HookFailed.wrap("transform_context", exc) from exc
    elif messages is None and run.overflow_signal:
        # No transformer to prune after an overflow: a sliding window does it for this request.
        messages = _overflow_window(run, system_prompt)
    run.signal_overflow(False)
    return LlmContext(
        system_prompt=system_prompt,
        messages=run.history.request_messages(messages),
        tools=run.tool_schemas,
    )


def _overflow_window(run: _Run, system_prompt: str) -> list[AgentMessage] | None:
    """The history trimmed by a default sliding window after an overflow (``None``: no change).

    The budget is the window's overflow budget for the model's context window (the one its
    provider stated in the overflow error when the spec has none), or, when nothing says how
    large the window is, half the estimated size of the history.
    """
    from ._context import EstimatingCounter, SlidingWindow

    window = SlidingWindow()
    ctx = run.transform_context(True, system_prompt)
    if window.budget(run.budget_model, overflow=True) is None:
        counter = EstimatingCounter()
        total = counter.count_text(system_prompt) + sum(map(counter.count, run.messages))
        window = SlidingWindow(max_tokens=max(total // 2, 1), overflow_tokens=max(total // 2, 1))
    kept = window(run.messages, ctx)
    return kept if len(kept) < len(run.messages) else None


def _classify(exc: Exception) -> ErrorKind:
    if isinstance(exc, ModelError):
        return exc.kind
    if isinstance(exc, OSError | EOFError | anyio.BrokenResourceError | anyio.EndOfStream):
        return ErrorKind.NETWORK
    return ErrorKind.OTHER


def _estimated_usage(request: LlmContext, answer: AssistantMessage) -> Usage:
    """Usage for a provider that reported none: the default estimator's count of the request
    (system prompt, messages and tool schemas) and of the answer, marked ``estimated``.

    It walks the whole request, which the loop otherwise never does per turn; only answers
    without reported usage (local servers, mostly) pay for it.
    """
    from ._context import EstimatingCounter, estimate_tokens

    counter = EstimatingCounter()
    tools = sum(
        counter.count_text(t.name) + counter.count_text(t.description) + len(_encode(t.parameters))
        for t in request.tools
    )
    prompt = estimate_tokens(request.messages, system_prompt=request.system_prompt) + tools // 4
    output = counter.count(answer) - counter.message_overhead if answer.content else 0
    return Usage(input=prompt, output=output, total=prompt + output, estimated=True)


def _redacted_error(event: ErrorEvent, key: str | None) -> ErrorEvent:
    """``event`` with its message redacted: outside text, where a server may echo any key the
    process holds (``_redaction``)."""
    clean = redact(event.message, key)
    return event if clean == event.message else msgspec.structs.replace(event, message=clean)


def _turn_options(run: _Run) -> StreamOptions:
    """The stream options of this turn's model calls, as ``turn_options`` changes them."""
    config = run.config
    assert config.turn_options is not None
    try:
        return config.turn_options(run.policy_context(), config.stream_options)
    except Exception as exc:
        raise HookFailed.wrap("turn_options", exc) from exc


async def _stream(run: _Run, request: LlmContext, base: StreamOptions) -> AssistantMessage:
    """Call the model, retrying as the strategy allows; returns the finished answer."""
    config = run.config
    model = config.model
    pricing = model.pricing
    emit = run.emit
    channel = run.channel
    # The stream's buffer, checked per event without a call: full means wait for the consumer.
    backlog = channel.buffer if channel is not None else None
    capacity = channel.capacity if channel is not None else 0
    # When the event stream is all that is told of updates (it always is), they go straight
    # into its buffer (the check after each bounds it; once the consumer has gone,
    # ``wait_writable`` empties it).
    direct = run.observed and channel is not None and run.emit_update == channel.send
    observer = run.observer
    # What the instrumentation is shown: the options never carry the key.
    shown = base if base.api_key is None else msgspec.structs.replace(base, api_key=None)
    attempt = 0
    while True:
        # The caller checked for cancellation just before, and a retry's sleep does.
        attempt += 1
        options = base
        if config.get_api_key is not None:
            try:
                key = await config.get_api_key(model.provider)
            except Exception as exc:
                raise HookFailed.wrap("get_api_key", exc) from exc
            if key:
                options = msgspec.structs.replace(options, api_key=key)
        acc = run.acc = Accumulator(model)  # the attempt ``close_turn`` would commit
        push = acc.push
        info: ModelCallInfo | None = None
        hook: Hook | None = None
        if observer is not None:
            info, hook = observer.model_call(run.turn, attempt, model, request, shown)
        first = info  # told when the first event arrives, then dropped
        delay: float | None = None
        try:
            try:
                events = config.stream_fn(model, request, options)
                try:
                    # The accumulator's per-token path (see ``hot_type``), without a call, read
                    # into locals: only ``push`` changes it while the loop runs.
                    hot_type = acc.hot_type
                    hot_index: Any = None
                    hot_append: Any = None
                    async for event in events:
                        if first is not None:
                            first.first_chunk = time.perf_counter()
                            first = None
                        if type(event) is hot_type and event.index is hot_index:  # type: ignore[union-attr]
                            hot_append(event.delta)  # type: ignore[union-attr]
                        else:
                            if type(event) is ErrorEvent:
                                event = _redacted_error(event, options.api_key)
                            if not push(event):
                                break
                            hot_type = acc.hot_type
                            if hot_type is not None:
                                hot_index, hot_append = acc.hot_index, acc.hot_append
                        if run.observed:
                            if direct:
                                backlog.append(MessageUpdate(event=event))  # type: ignore[union-attr]
                                if channel.reader is not None:  # type: ignore[union-attr]
                                    channel.wake_reader()  # type: ignore[union-attr]
                                if len(backlog) >= capacity:  # type: ignore[arg-type]
                                    await channel.wait_writable()  # type: ignore[union-attr]
                                continue
                            try:
                                # Read per event: an agent's subscribers may change mid-answer.
                                run.emit_update(MessageUpdate(event=event))
                            except Exception:
                                if run.update_failed is None:
                                    raise
                                run.update_failed()
                        if backlog is not None and len(backlog) >= capacity:
                            # The consumer is behind: let it drain before streaming on.
                            assert channel is not None
                            await channel.wait_writable()
                finally:
                    # Closed at once (not left to the GC), also when the loop broke off early.
                    aclose = getattr(events, "aclose", None)
                    if aclose is not None:
                        await aclose()
            except Exception as exc:
                text = redact(f"{type(exc).__name__}: {exc}", options.api_key)
                if options.api_key:
                    log.debug("stream function raised %s", text)  # its traceback may hold the key
                else:
                    log.debug("stream function raised", exc_info=True)
                retry_after = exc.retry_after if isinstance(exc, ModelError) else None
                acc.fail(text, _classify(exc), retry_after)
            if not acc.usage_reported and (
                acc.stop_reason is not StopReason.ERROR or acc.has_content
            ):
                acc.usage = _estimated_usage(request, acc.snapshot())
            cost = pricing.cost(acc.usage) if pricing is not None else None
            message = acc.finish(cost)
            kind = message.error_kind
            if kind is ErrorKind.CONTEXT_OVERFLOW and acc.context_window is not None:
                run.learned_window = acc.context_window
            if message.stop_reason is StopReason.ERROR and kind is not ErrorKind.CONTEXT_OVERFLOW:
                error = error_for_kind(
                    kind or ErrorKind.OTHER,
                    message.error_message or "model error",
                    retry_after=acc.retry_after,
                    model=model.model_id,
                )
                if config.retry_strategy.should_retry(error, attempt):
                    delay = config.retry_strategy.delay(attempt, error)
                    emit(
                        StreamRetry(
                            attempt=attempt,
                            delay=delay,
                            kind=error.kind,
                            message=error.message,
                        )
                    )
        except BaseException as exc:
            if hook is not None:
                hook.exit(exc)
            raise
        if hook is not None:
            assert info is not None
            info.message = message
            info.retry_delay = delay
            info.response_model = acc.model_id if acc.reported_model else None
            hook.exit(None)
        if delay is None:
            return message
        run.acc = None  # what the failed attempt said is void
        await anyio.sleep(delay)


def _normalise_ids(message: AssistantMessage) -> AssistantMessage:
    """Give a fresh unique id to every tool call whose id is missing or repeated."""
    content = message.content
    if len(content) == 1:  # the usual answer: one text, or one call
        block = content[0]
        if type(block) is not ToolCall or block.id:
            return message
    else:
        seen: set[str] = set()
        for block in content:
            if type(block) is ToolCall:
                if not block.id or block.id in seen:
                    break
                seen.add(block.id)
        else:
            return message  # every id present and distinct: nothing to build
    seen = set()
    renamed: list[Any] = []
    for block in content:
        if type(block) is ToolCall:
            if not block.id or block.id in seen:
                block = msgspec.structs.replace(block, id=f"call_{os.urandom(12).hex()}")
            seen.add(block.id)
        renamed.append(block)
    return msgspec.structs.replace(message, content=renamed)


async def _post_turn(
    run: _Run, message: AssistantMessage | None, results: list[ToolResultMessage]
) -> list[ToolResultMessage]:
    """Run the post-turn policies; returns the (possibly replaced) tool results."""
    policies = run.config.post_turn_policies
    if not policies:
        return results
    ctx = run.policy_context(message, results)
    for policy in policies:
        verdict = run.evaluate(policy, ctx, None, "post-turn")
        if isawaitable(verdict):  # heavy work, off the event loop
            verdict = await run.settle(verdict, policy, None, "post-turn")
        kind = type(verdict)
        if kind is Replace:
            assert isinstance(verdict, Replace)
            new = list(verdict.tool_results)
            if [r.tool_call_id for r in new] != [r.tool_call_id for r in results]:
                log.error(
                    "policy %s replaced tool results with ones answering other calls; ignored",
                    run.policy_name(policy),
                )
                continue
            results = new
            ctx.tool_results = results
            run.note_verdict("post_turn", policy, "replace")
        elif kind is Stop:
            assert isinstance(verdict, Stop)
            run.note_verdict("post_turn", policy, "stop", verdict.reason)
            run.stop(f"{run.policy_name(policy)}: {verdict.reason}")
            break
        elif kind is Inject:
            assert isinstance(verdict, Inject)
            run.note_verdict("post_turn", policy, "inject")
            run.queue(verdict.messages)
    return results


async def run_turn(run: _Run) -> bool | None:
    """Run one turn, which the caller has begun (``run.begin_turn()``); returns whether the
    model needs another turn (tools were run), or ``None`` when the turn waits for the run's
    task group: the run's first batch of calls to execute is kept in ``run.suspended``, and
    the run opens its task group and calls ``resume_turn``. (A run that never runs a tool
    opens none: a task group costs about ten microseconds.)

    A cancellation propagates from here with the turn open: the run closes it as aborted.
    """
    config = run.config
    emit = run.emit
    if run.pending:
        for message in run.take_pending():
            run.commit(message)
    if config.toolsets:
        run.refresh_tools()
    system_prompt = run.system_prompt if config.system_prompt is None else await _system_prompt(run)
    if run.incremental and not run.overflow_signal:
        # No transformer and nothing to prune: the request is the history as converted.
        request = LlmContext(
            system_prompt=system_prompt,
            messages=run.history.request_messages(None),
            tools=run.tool_schemas,
        )
    else:
        request = await _request(run, system_prompt)
    if config.pre_turn_policies:
        stop, injected = run.run_turn_policies(
            config.pre_turn_policies, run.policy_context(), "pre-turn"
        )
        if stop is not None:
            run.stop(stop)
            run.end_turn(TurnEndReason.COMPLETE, None)
            return False
        if injected:
            for message in injected:
                run.commit(message)
            request = LlmContext(
                system_prompt=system_prompt,
                messages=run.history.request_messages(None),
                tools=run.tool_schemas,
            )
    model = config.model
    # The last point before a request leaves: an abort that came in meanwhile (by a callback,
    # a policy, a tool of another task) sends nothing. Only the run's own scope is looked at
    # (an attribute, where a full check costs microseconds): a cancellation from outside the
    # run takes effect at the request's first await, before anything is sent.
    if run.scope.cancel_called:
        await anyio.lowlevel.checkpoint_if_cancelled()
    options = config.stream_options if config.turn_options is None else _turn_options(run)
    run.answer_open = True  # from here, an abnormal end must commit an answer
    if run.observed:
        emit(
            MessageStart(message=AssistantMessage(provider=model.provider, model_id=model.model_id))
        )
    message = await _stream(run, request, options)
    if message.error_kind is ErrorKind.CONTEXT_OVERFLOW and message.stop_reason is StopReason.ERROR:
        # One recovery attempt per turn: the transformers (or a default sliding window) prune
        # harder, same message lifecycle. A request that did not shrink is not sent again.
        run.signal_overflow()
        retry = await _request(run, system_prompt)
        if len(retry.messages) < len(request.messages) or retry.messages != request.messages:
            await anyio.lowlevel.checkpoint_if_cancelled()
            message = await _stream(run, retry, options)
    message = _normalise_ids(message)
    run.answered(message)
    stop_reason = message.stop_reason

    if stop_reason is StopReason.ERROR or stop_reason is StopReason.ABORTED:
        if config.post_turn_policies:
            await _post_turn(run, message, [])
        run.end_with(message)
        reason = TurnEndReason.ERROR if stop_reason is StopReason.ERROR else TurnEndReason.ABORTED
        run.end_turn(reason, message)
        return False

    run.stop_reason = stop_reason  # the run's so far (stop, length, tool use)
    calls = message.tool_calls
    if not calls:
        if config.post_turn_policies:
            await _post_turn(run, message, [])
        run.end_turn(TurnEndReason.COMPLETE, message)
        return False

    batch = run.batch = Batch(run, calls)
    incomplete = (
        {c.id for c in calls if c.partial_json is not None}
        if stop_reason is StopReason.LENGTH
        else _NONE
    )
    ready = await batch.prepare(incomplete)
    if batch.stopped is None and ready:
        if run.tasks is None:
            run.suspended = (message, ready)
            return None
        await batch.execute(ready)
    results = batch.results()
    if config.post_turn_policies:
        results = await _post_turn(run, message, results)
    return _tools_done(run, message, batch, results)


async def resume_turn(run: _Run) -> bool:
    """Finish the turn ``run_turn`` left waiting for the run's task group (now open)."""
    assert run.suspended is not None and run.batch is not None
    (message, ready), run.suspended = run.suspended, None
    batch = run.batch
    await batch.execute(ready)
    results = batch.results()
    if run.config.post_turn_policies:
        results = await _post_turn(run, message, results)
    return _tools_done(run, message, batch, results)


def _tools_done(
    run: _Run, message: AssistantMessage, batch: Batch, results: list[ToolResultMessage]
) -> bool:
    """Commit a batch's results and end its turn; whether the model needs another turn."""
    run.batch = None
    for result in results:
        run.commit(result)
    if batch.stopped is not None:
        run.stop(batch.stopped)
    if batch.steering:
        run.queue(batch.steering)
    reason = TurnEndReason.STEERING_INTERRUPT if batch.interrupted else TurnEndReason.TOOLS_EXECUTED
    run.end_turn(reason, message, results)
    return not run.ended
