"""A conformance check for ``StreamFn`` implementations: ``check_stream_fn``.

A provider author runs it against their own ``StreamFn``, pointed at the real API or at a fake
server, the way anyio's and httpx's implementers run their test suites. It makes a few model
calls, each with a fixed request, and checks what the provider protocol promises:

- **Grammar.** Every item is an ``AssistantMessageEvent`` whose fields have their declared
  types; each content block starts once, gets deltas of its own kind and ends once; exactly one
  terminal event (``Done`` or ``ErrorEvent``) comes last, nothing after it; a ``Done`` comes
  after every block ended; the accumulated message is not a malformed stream.
- **Scripts.** ``text``: a text answer (``Done``, some text, no tool calls). ``tool``: with one
  tool offered and ``tool_choice`` naming it, a call of that tool with a JSON object for
  arguments and stop reason ``tool_use``. ``thinking`` (when asked): with a thinking level set,
  a thinking block. ``error`` (when given options that make the call fail, a bad key say): an
  ``ErrorEvent`` with a kind, a message, and no exception.
- **Closing.** The stream is an async generator (or has ``aclose``): closed after its first
  event, and closed before its first, it finishes promptly; cancelled while it waits for its
  next event, the cancellation goes through (it is not swallowed) and the stream still closes.
  (That it really drops its connection, only the server can tell: check that on your fake.)
- **Failures are data.** No call raises anything but a cancellation.

The calls are made in this order, each with its own request: text, tool, thinking, error,
close after the first event, close before the first, cancel while waiting. A fake server can
answer them by looking at the request (tools offered, thinking asked for, the key).

Example::

    from agentloop.testing import check_stream_fn

    async def test_my_provider_conforms() -> None:
        report = await check_stream_fn(
            MyProvider(base_url=fake.url),
            ModelSpec(provider="mine", model_id="m"),
            error_options=StreamOptions(api_key="not-a-valid-key"),
        )
        assert report.messages["tool"].tool_calls
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from ._stream import (
    _EVENT_CLASSES,
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
from ._types import (
    AssistantMessage,
    ErrorKind,
    LlmContext,
    LlmMessage,
    ModelSpec,
    StopReason,
    StreamOptions,
    Thinking,
    ThinkingLevel,
    ToolSchema,
    UserMessage,
)

if TYPE_CHECKING:
    from ._abc import StreamFn

__all__ = ["ConformanceError", "ConformanceReport", "check_stream_fn"]

WEATHER_TOOL = ToolSchema(
    name="get_weather",
    description="The current weather in a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city's name."}},
        "required": ["city"],
    },
)
_SYSTEM = "You are a helpful assistant. Answer briefly."
_KIND: dict[type, str] = {
    TextStart: "text",
    TextDelta: "text",
    TextEnd: "text",
    ThinkingStart: "thinking",
    ThinkingDelta: "thinking",
    ThinkingEnd: "thinking",
    ToolCallStart: "tool call",
    ToolCallDelta: "tool call",
    ToolCallEnd: "tool call",
}
_STARTS = (TextStart, ThinkingStart, ToolCallStart)
_ENDS = (TextEnd, ThinkingEnd, ToolCallEnd)


class ConformanceError(AssertionError):
    """The ``StreamFn`` broke the protocol; ``problems`` lists every finding, by script."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(
            f"{len(problems)} conformance problem(s):\n" + "\n".join(f"- {p}" for p in problems)
        )
        self.problems = problems


@dataclasses.dataclass
class ConformanceReport:
    """What each script streamed (``events``) and the message it folded into (``messages``)."""

    events: dict[str, list[AssistantMessageEvent]] = dataclasses.field(default_factory=dict)
    messages: dict[str, AssistantMessage] = dataclasses.field(default_factory=dict)


def _grammar(events: list[Any]) -> list[str]:
    """Problems with the order and shape of one stream's events."""
    problems: list[str] = []
    open_blocks: dict[int, str] = {}
    seen: set[int] = set()
    for position, event in enumerate(events):
        cls = type(event)
        where = f"event {position} ({cls.__name__})"
        if cls not in _EVENT_CLASSES:
            problems.append(f"{where} is not an AssistantMessageEvent")
            continue
        try:
            msgspec.convert(msgspec.to_builtins(event), cls)
        except (msgspec.ValidationError, TypeError, ValueError) as exc:
            problems.append(f"{where} has a field of the wrong type: {exc}")
            continue
        if cls is Done or cls is ErrorEvent:
            if position != len(events) - 1:
                problems.append(f"{where} is terminal but {len(events) - position - 1} follow")
            if cls is Done and open_blocks:
                problems.append(f"Done while blocks {sorted(open_blocks)} were not ended")
            continue
        if cls is StreamStart:
            continue
        index = event.index
        if cls is ExtensionBlock:
            if index in seen:
                problems.append(f"{where}: block {index} started twice")
            seen.add(index)
            continue
        kind = _KIND[cls]
        if cls in _STARTS:
            if index in seen:
                problems.append(f"{where}: block {index} started twice")
            seen.add(index)
            open_blocks[index] = kind
        elif open_blocks.get(index) != kind:
            state = "never started or already ended" if index not in open_blocks else "another kind"
            problems.append(f"{where}: for {kind} block {index}, which is {state}")
        elif cls in _ENDS:
            del open_blocks[index]
    if not events or type(events[-1]) not in (Done, ErrorEvent):
        problems.append("the stream ended without a terminal event (Done or ErrorEvent)")
    return problems


async def _collect(
    stream_fn: StreamFn,
    model: ModelSpec,
    context: LlmContext,
    options: StreamOptions,
    seconds: float,
) -> tuple[list[Any], str | None]:
    """Every event of one call, or what it raised."""
    events: list[Any] = []
    stream = stream_fn(model, context, options)
    closing: Any = (
        contextlib.aclosing(stream) if hasattr(stream, "aclose") else contextlib.nullcontext()
    )
    try:
        with anyio.fail_after(seconds):
            async with closing:
                async for event in stream:
                    events.append(event)
    except TimeoutError:
        return events, f"no end within {seconds:g}s"
    except Exception as exc:
        return events, f"the stream raised {type(exc).__name__}: {exc}"
    return events, None


async def _closing(
    stream_fn: StreamFn, model: ModelSpec, context: LlmContext, options: StreamOptions, t: float
) -> list[str]:
    """Problems with closing a stream: after its first event, before it, and on cancellation."""
    problems: list[str] = []
    stream = stream_fn(model, context, options)
    aclose = getattr(stream, "aclose", None)
    if aclose is None:
        return [
            "the stream has no aclose(): return an async generator so the loop can close it "
            "(and its connection) when a run is aborted"
        ]
    try:
        with anyio.fail_after(t):
            await anext(stream)
            await aclose()
        with anyio.fail_after(t):
            try:
                await anext(stream)
            except StopAsyncIteration:
                pass
            else:
                problems.append("close: the stream yielded again after aclose()")
    except TimeoutError:
        problems.append(f"close: the first event and aclose() took over {t:g}s")
    except Exception as exc:
        problems.append(f"close: {type(exc).__name__}: {exc}")
    try:
        unopened = stream_fn(model, context, options)
        with anyio.fail_after(t):
            await unopened.aclose()  # type: ignore[attr-defined]
    except Exception as exc:
        problems.append(f"close before the first event: {type(exc).__name__}: {exc}")
    stream = stream_fn(model, context, options)
    after: list[Any] = []
    try:
        with anyio.fail_after(t * 2):
            with anyio.CancelScope() as scope:
                await anext(stream)
                scope.cancel()
                async for event in stream:  # the next wait must be interrupted
                    after.append(event)
            with anyio.fail_after(t):
                await stream.aclose()  # type: ignore[attr-defined]
    except TimeoutError:
        problems.append(f"cancel: the stream did not end within {t * 2:g}s of its cancellation")
    except Exception as exc:
        problems.append(f"cancel: {type(exc).__name__}: {exc}")
    else:
        # A stream that had its whole answer at hand may finish without waiting again; one
        # that waited must let the cancellation through, not end in an error or silently.
        if not scope.cancelled_caught and (not after or type(after[-1]) is not Done):
            problems.append(
                "cancel: the cancellation was swallowed (the stream ended "
                + (f"with {type(after[-1]).__name__})" if after else "without a word)")
            )
    return problems


async def check_stream_fn(
    stream_fn: StreamFn,
    model: ModelSpec,
    *,
    options: StreamOptions | None = None,
    tool: ToolSchema = WEATHER_TOOL,
    thinking: bool = False,
    error_options: StreamOptions | None = None,
    per_call: float = 60.0,
) -> ConformanceReport:
    """Check ``stream_fn`` against the provider protocol (see the module docstring).

    Args:
        stream_fn: the provider under test.
        model: the model to call (its ``thinking_level`` is raised to ``low`` for the thinking
            script).
        options: the options of every call but the error one (``tool_choice`` is set for the
            tool script).
        tool: the tool offered in the tool script, which must call it.
        thinking: run the thinking script (for models that show their reasoning).
        error_options: options that make a call fail (a bad ``api_key``, say); ``None``
            leaves the error script out.
        per_call: seconds each call, and each close, may take.

    Returns:
        The events and the message of every script.

    Raises:
        ConformanceError: the stream function broke the protocol (every problem is listed).
    """
    options = options or StreamOptions()
    report = ConformanceReport()
    problems: list[str] = []
    ask = [UserMessage.from_text("Say hello in a few words.")]
    text = LlmContext(system_prompt=_SYSTEM, messages=list(ask))
    scripts: list[tuple[str, ModelSpec, LlmContext, StreamOptions]] = [
        ("text", model, text, options),
        (
            "tool",
            model,
            LlmContext(
                system_prompt=_SYSTEM,
                messages=[UserMessage.from_text("What is the weather in Paris? Use the tool.")],
                tools=[tool],
            ),
            msgspec.structs.replace(options, tool_choice=tool.name),
        ),
    ]
    if thinking:
        level = model.thinking_level
        thinker = (
            model
            if level is not ThinkingLevel.OFF
            else msgspec.structs.replace(model, thinking_level=ThinkingLevel.LOW)
        )
        question: list[LlmMessage] = [
            UserMessage.from_text("What is 17 times 23? Think it through first.")
        ]
        scripts.append(
            ("thinking", thinker, LlmContext(system_prompt=_SYSTEM, messages=question), options)
        )
    if error_options is not None:
        scripts.append(("error", model, text, error_options))
    for name, spec, context, call_options in scripts:
        events, raised = await _collect(stream_fn, spec, context, call_options, per_call)
        report.events[name] = events
        if raised is not None:
            problems.append(f"{name}: {raised}")
        problems.extend(f"{name}: {p}" for p in _grammar(events))
        accumulator = Accumulator(spec)
        for event in events:
            accumulator.push(event)
        message = report.messages[name] = accumulator.finish()
        problems.extend(f"{name}: {p}" for p in _expect(name, message, tool))
    problems.extend(await _closing(stream_fn, model, text, options, per_call))
    if problems:
        raise ConformanceError(problems)
    return report


def _expect(name: str, message: AssistantMessage, tool: ToolSchema) -> list[str]:
    """What the script's answer must hold."""
    problems: list[str] = []
    failed = message.stop_reason in (StopReason.ERROR, StopReason.ABORTED)
    if "malformed provider stream" in (message.error_message or ""):
        problems.append(message.error_message or "")
    if name == "error":
        if not failed:
            problems.append(f"expected an ErrorEvent, the call ended with {message.stop_reason}")
        elif not isinstance(message.error_kind, ErrorKind) or not message.error_message:
            problems.append("the ErrorEvent has no kind or no message")
        return problems
    if failed:
        return [*problems, f"the call failed: {message.error_kind}: {message.error_message}"]
    if name == "text":
        if not message.text.strip():
            problems.append("no text in the answer")
        if message.tool_calls:
            problems.append("tool calls in a request that offered no tools")
    elif name == "tool":
        calls = message.tool_calls
        if not calls:
            problems.append(f"no tool call although tool_choice named {tool.name!r}")
        for call in calls:
            if call.name != tool.name:
                problems.append(f"a call of {call.name!r}; only {tool.name!r} was offered")
            if call.partial_json is not None or not isinstance(call.arguments, dict):
                problems.append(f"the arguments of {call.name!r} are not a JSON object")
        if calls and message.stop_reason is not StopReason.TOOL_USE:
            problems.append(f"stop reason {message.stop_reason} after tool calls, not tool_use")
    elif name == "thinking" and not any(type(b) is Thinking for b in message.content):
        problems.append("no thinking block although a thinking level was set")
    return problems
