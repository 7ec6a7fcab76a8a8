"""The activities: a model call, a tool call, describing the tools, publishing events.

They run on the workers, outside the sandbox, with whatever the worker was given: stream
functions by name, tools, dependencies, API keys, the event sink. Each heartbeats while it
runs (so a lost worker is noticed within the heartbeat timeout and the call tried again
elsewhere) and publishes what it streams, tagged with its attempt.

A tool call runs through the core loop itself, as a one-call batch: validation, ``ToolContext``
and ``deps``, worker threads for plain functions, timeouts and progress updates behave exactly
as they do in process. A tool that fails returns an error result (data, never retried); only a
lost worker or a timeout makes the activity fail and Temporal try it again.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import aclosing
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import msgspec
from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentloop import (
    AgentEvent,
    AgentTool,
    AgentToolResult,
    ErrorKind,
    MessageUpdate,
    ModelError,
    ModelSpec,
    StopReason,
    ToolCall,
    ToolExecutionEnd,
    ToolExecutionUpdate,
    Toolset,
    Usage,
    UserMessage,
)
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.policy import CONTINUE, PolicyContext, PolicyVerdict, Stop
from agentloop.retry import NoRetry
from agentloop.stream import (
    AssistantMessageEvent,
    Done,
    ErrorEvent,
    LlmContext,
    StreamStart,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

from ._data import (
    DESCRIBE_ACTIVITY,
    MODEL_ACTIVITY,
    PUBLISH_ACTIVITY,
    TOOL_ACTIVITY,
    ModelCall,
    ModelReply,
    PublishInput,
    ToolCallInput,
    ToolReply,
    ToolSpec,
    from_payload,
    to_payload,
)
from ._records import EventSink, StreamRecord

if TYPE_CHECKING:
    from agentloop.abc import StreamFn

__all__ = ["AgentActivities"]

log = logging.getLogger("agentloop.temporal")

T = TypeVar("T")
GetApiKey = Callable[[str], Awaitable[str | None]]

# Failures Temporal retries (the activity's retry policy); the others are the run's to handle
# (context overflow recovery, an error answer), returned as data.
_RETRYABLE = frozenset({ErrorKind.THROTTLED, ErrorKind.NETWORK})
_DELTAS = (TextDelta, ThinkingDelta, ToolCallDelta)
_MIN_SECRET = 4


def _merge(events: Iterable[AssistantMessageEvent]) -> list[AssistantMessageEvent]:
    """The events with consecutive deltas of one block merged (the reply the history keeps).

    Tool calls with a missing or repeated id get a fresh one here, on the worker: the loop would
    draw a random one, which a workflow must not.
    """
    out: list[AssistantMessageEvent] = []
    seen: set[str] = set()
    for event in events:
        cls = type(event)
        if cls in _DELTAS and out:
            last = out[-1]
            if type(last) is cls and last.index == event.index:  # type: ignore[union-attr]
                merged = last.delta + event.delta  # type: ignore[union-attr]
                out[-1] = msgspec.structs.replace(last, delta=merged)
                continue
        if cls is ToolCallStart:
            assert isinstance(event, ToolCallStart)
            if not event.id or event.id in seen:
                event = msgspec.structs.replace(event, id=f"call_{uuid.uuid4().hex[:24]}")
            seen.add(event.id)
        out.append(event)
    return out


def _classify(exc: Exception) -> tuple[ErrorKind, float | None]:
    if isinstance(exc, ModelError):
        return exc.kind, exc.retry_after
    if isinstance(exc, OSError | EOFError | anyio.BrokenResourceError | anyio.EndOfStream):
        return ErrorKind.NETWORK, None
    return ErrorKind.OTHER, None


def _redact(text: str, secret: str | None) -> str:
    if secret and len(secret) >= _MIN_SECRET:
        return text.replace(secret, "***")
    return text


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    while len(group.exceptions) == 1 and isinstance(group.exceptions[0], BaseExceptionGroup):
        group = group.exceptions[0]
    return group.exceptions[0] if len(group.exceptions) == 1 else group


async def _heartbeating(work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` while heartbeating several times per heartbeat timeout.

    Heartbeats are how Temporal learns that the worker is alive, and how a cancellation (an
    abort, steering, a timeout in the workflow) reaches the activity.
    """
    timeout = activity.info().heartbeat_timeout or timedelta(seconds=30)
    interval = max(timeout.total_seconds() / 4, 0.05)

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await anyio.sleep(interval)

    result: list[T] = []
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(beat)
            result.append(await work())
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise _single(group) from None
    return result[0]


class _Publisher:
    """Publishes one activity attempt's live output, tagged with its key and attempt."""

    def __init__(self, sink: EventSink | None, key: str, source: Any, enabled: bool) -> None:
        info = activity.info()
        self._sink = sink if enabled else None
        self._base = {
            "workflow_id": info.workflow_id or "",
            "run_id": info.workflow_run_id or "",
            "source": source,
            "key": key,
            "attempt": info.attempt,
        }
        self._seq = 0
        self.pending: list[StreamRecord] = []

    def add(self, event: AgentEvent) -> None:
        if self._sink is not None:
            self.pending.append(StreamRecord(seq=self._seq, event=event, **self._base))
            self._seq += 1

    async def flush(self) -> None:
        sink = self._sink
        if sink is None or not self.pending:
            return
        records, self.pending = self.pending, []
        try:
            await sink.publish(records)
        except Exception:
            log.exception("publishing to %r failed; this call's stream stops", sink)
            self._sink = None


class _OneTurn:
    """Ends the one-call run after its only batch (the activity never asks a model)."""

    name = "one_call"

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        return Stop(reason="done") if ctx.turn > 0 else CONTINUE


_NOBODY = ModelSpec(provider="agentloop_temporal", model_id="tool-call")


def _asking(call: ToolCall) -> StreamFn:
    """A stream that asks for ``call`` and nothing else."""

    async def stream(
        model: ModelSpec, context: LlmContext, options: Any
    ) -> AsyncIterator[AssistantMessageEvent]:
        yield StreamStart()
        yield ToolCallStart(index=0, id=call.id, name=call.name)
        yield ToolCallEnd(index=0, arguments=call.arguments)
        yield Done(stop_reason=StopReason.TOOL_USE, usage=Usage())

    return stream


class AgentActivities:
    """What a worker runs for agent workflows, with what it was given.

    Args:
        stream_fns: the providers, by the name a run asks for (``RunInput.stream_fn``).
        tools: the tools runs may use (by name).
        toolsets: sources of tools read when a run starts (MCP servers, say).
        sink: where the runs' events are published (``None``: nowhere).
        deps: what tools reach as ``ToolContext.deps``.
        get_api_key: resolves a provider's API key before each model call.
        tool_timeout: seconds a tool call may run (a tool's own ``timeout`` wins).
    """

    def __init__(
        self,
        *,
        stream_fns: Mapping[str, StreamFn],
        tools: Sequence[AgentTool] = (),
        toolsets: Sequence[Toolset] = (),
        sink: EventSink | None = None,
        deps: Any = None,
        get_api_key: GetApiKey | None = None,
        tool_timeout: float | None = None,
    ) -> None:
        self._stream_fns = dict(stream_fns)
        self._tools = {t.name: t for t in tools}
        self._toolsets = list(toolsets)
        self._sink = sink
        self._deps = deps
        self._get_api_key = get_api_key
        self._tool_timeout = tool_timeout

    def activities(self) -> list[Callable[..., Any]]:
        """The activity functions, for ``Worker(activities=...)``."""
        return [self.model_call, self.tool_call, self.describe_tools, self.publish]

    def _all_tools(self) -> dict[str, AgentTool]:
        tools = dict(self._tools)
        for toolset in self._toolsets:
            tools.update({t.name: t for t in toolset.get_tools()})
        return tools

    @activity.defn(name=DESCRIBE_ACTIVITY)
    async def describe_tools(self, names: list[str] | None) -> list[dict[str, Any]]:
        """The specs of the named tools (of every tool when ``names`` is ``None``)."""
        tools = self._all_tools()
        if names is None:
            names = list(tools)
        missing = [name for name in names if name not in tools]
        if missing:
            raise ApplicationError(
                f"the workers have no tool named {', '.join(map(repr, missing))}",
                type="UnknownTool",
                non_retryable=True,
            )
        specs = [
            ToolSpec(
                name=tool.name,
                description=tool.description,
                label=getattr(tool, "label", "") or "",
                parameters=tool.parameters,
                requires_approval=bool(getattr(tool, "requires_approval", False)),
                read_only=bool(getattr(tool, "read_only", False)),
            )
            for tool in (tools[name] for name in names)
        ]
        return [to_payload(spec) for spec in specs]

    @activity.defn(name=MODEL_ACTIVITY)
    async def model_call(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Call the model and return its events; throttling and network errors are raised for
        Temporal to retry, other failures returned as the reply's ``ErrorEvent``."""
        call = from_payload(payload, ModelCall)
        stream_fn = self._stream_fns.get(call.stream_fn)
        if stream_fn is None:
            raise ApplicationError(
                f"the workers have no stream function named {call.stream_fn!r}",
                type=ErrorKind.OTHER.value,
                non_retryable=True,
            )
        options = call.options
        if self._get_api_key is not None:
            key = await self._get_api_key(call.model.provider)
            if key:
                options = msgspec.structs.replace(options, api_key=key)
        publisher = _Publisher(self._sink, call.key, "model", call.publish)
        events: list[AssistantMessageEvent] = []

        async def stream() -> None:
            try:
                source = stream_fn(call.model, call.context, options)
                async with aclosing(source):  # type: ignore[type-var]
                    async for event in source:
                        events.append(event)
                        publisher.add(MessageUpdate(event=event))
                        await publisher.flush()
                        if type(event) is Done or type(event) is ErrorEvent:
                            break
            except Exception as exc:
                kind, retry_after = _classify(exc)
                text = _redact(f"{type(exc).__name__}: {exc}", options.api_key)
                events.append(ErrorEvent(kind=kind, message=text, retry_after=retry_after))

        await _heartbeating(stream)
        last = events[-1] if events else None
        if (
            type(last) is ErrorEvent
            and last.kind in _RETRYABLE
            and last.stop_reason is StopReason.ERROR
        ):
            assert isinstance(last, ErrorEvent)
            delay = None if last.retry_after is None else timedelta(seconds=last.retry_after)
            raise ApplicationError(last.message, type=last.kind.value, next_retry_delay=delay)
        return to_payload(ModelReply(events=_merge(events)))  # type: ignore[no-any-return]

    @activity.defn(name=TOOL_ACTIVITY)
    async def tool_call(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Run one tool call; its result, an error result when the tool failed."""
        request = from_payload(payload, ToolCallInput)
        call = request.call
        key = activity.info().activity_id
        publisher = _Publisher(self._sink, key, "tool", request.publish)
        tool = self._all_tools().get(call.name)
        if tool is None:
            reply = ToolReply(
                result=AgentToolResult.error(f"the workers have no tool named {call.name!r}")
            )
        else:
            reply = await _heartbeating(lambda: self._run_call(tool, call, publisher))
        return to_payload(reply)  # type: ignore[no-any-return]

    async def _run_call(self, tool: AgentTool, call: ToolCall, publisher: _Publisher) -> ToolReply:
        results: list[AgentToolResult] = []
        send, receive = anyio.create_memory_object_stream[ToolExecutionUpdate](math.inf)

        def on_event(event: AgentEvent) -> None:
            cls = type(event)
            if cls is ToolExecutionEnd:
                assert isinstance(event, ToolExecutionEnd)
                results.append(event.result)
            elif cls is ToolExecutionUpdate:
                assert isinstance(event, ToolExecutionUpdate)
                send.send_nowait(event)

        async def relay() -> None:
            async with receive:
                async for update in receive:
                    publisher.add(update)
                    await publisher.flush()

        config = AgentLoopConfig(
            model=_NOBODY,
            stream_fn=_asking(call),
            tools=[tool],
            deps=self._deps,
            tool_timeout=self._tool_timeout,
            retry_strategy=NoRetry(),
            pre_turn_policies=[_OneTurn()],
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(relay)
                with send:
                    prompt = UserMessage.from_text("")
                    # The one-call run's usage is what its sub-agents spent (the call itself
                    # asks no model): it goes back to the workflow's run.
                    ran = await run_loop([prompt], AgentContext(), config, on_event=on_event)
        except BaseExceptionGroup as group:
            raise _single(group) from None
        if not results:
            result = AgentToolResult.error(f"tool call {call.name!r} produced no result")
            return ToolReply(result=result, usage=ran.usage, cost=ran.cost)
        return ToolReply(result=results[0], usage=ran.usage, cost=ran.cost)

    @activity.defn(name=PUBLISH_ACTIVITY)
    async def publish(self, payload: dict[str, Any]) -> None:
        """Hand the workflow's own events to the sink (a local activity)."""
        if self._sink is None:
            return
        records = from_payload(payload, PublishInput).records
        try:
            await self._sink.publish(records)
        except Exception:
            log.exception("publishing to %r failed; %d events dropped", self._sink, len(records))
