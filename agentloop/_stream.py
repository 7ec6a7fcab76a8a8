"""The provider protocol: ``StreamFn``, the events it yields, and the one accumulator.

A provider turns a request into a stream of ``AssistantMessageEvent``: for each content block a
start, any number of deltas and an end, then exactly one terminal event, ``Done`` or
``ErrorEvent``. Providers never build messages themselves; ``Accumulator`` folds the events into
an ``AssistantMessage``, and turns every malformed sequence into a message with stop reason
``error`` and a readable ``error_message`` instead of an exception.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec

from ._types import (
    AssistantMessage,
    ContentBlock,
    Cost,
    ErrorKind,
    Extension,
    ModelSpec,
    StopReason,
    Text,
    Thinking,
    ToolCall,
    Usage,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "Accumulator",
    "AssistantMessageEvent",
    "Done",
    "ErrorEvent",
    "ExtensionBlock",
    "StreamStart",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingStart",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
]


class _Event(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, omit_defaults=True, tag_field="type"
):
    pass


class StreamStart(_Event, frozen=True, tag="start"):
    """Optional first event: which provider and model are answering."""

    provider: str | None = None
    model_id: str | None = None


class TextStart(_Event, frozen=True, tag="text_start"):
    """A text block starts.

    Attributes:
        index: the block's position in the answer's content; its deltas and end carry it too.
    """

    index: int


class TextDelta(_Event, frozen=True, tag="text_delta"):
    """A piece of a text block.

    Attributes:
        index: the block's position, as in its ``TextStart``.
        delta: the text to append.
    """

    index: int
    delta: str


class TextEnd(_Event, frozen=True, tag="text_end"):
    """A text block ends.

    Attributes:
        index: the block's position, as in its ``TextStart``.
    """

    index: int


class ThinkingStart(_Event, frozen=True, tag="thinking_start", gc=True):
    """A reasoning block starts; redacted blocks carry their opaque ``data`` here."""

    index: int
    redacted: bool = False
    data: str | None = None
    signature: str | None = None
    meta: dict[str, Any] | None = None


class ThinkingDelta(_Event, frozen=True, tag="thinking_delta"):
    """A piece of a reasoning block's text.

    Attributes:
        index: the block's position, as in its ``ThinkingStart``.
        delta: the text to append.
    """

    index: int
    delta: str


class ThinkingEnd(_Event, frozen=True, tag="thinking_end"):
    """A reasoning block ends; ``signature`` (or opaque ``data``) may only arrive now."""

    index: int
    signature: str | None = None
    data: str | None = None


class ToolCallStart(_Event, frozen=True, tag="tool_call_start", gc=True):
    """A tool call starts; its arguments follow as ``ToolCallDelta`` fragments.

    Attributes:
        index: the block's position in the answer's content.
        id: the call's id, which its result will name.
        name: the tool called.
        signature: an opaque signature the provider wants back with the call (Gemini's
            thought signatures).
        meta: provider details kept with the call for replaying it (item ids and the like).
    """

    index: int
    id: str
    name: str
    signature: str | None = None
    meta: dict[str, Any] | None = None


class ToolCallDelta(_Event, frozen=True, tag="tool_call_delta"):
    """A fragment of the call's JSON arguments; fragments are parsed once, at the end."""

    index: int
    delta: str


class ToolCallEnd(_Event, frozen=True, tag="tool_call_end", gc=True):
    """A tool call ends. Providers that receive arguments as an object pass it as ``arguments``."""

    index: int
    arguments: Any = msgspec.UNSET
    signature: str | None = None


class ExtensionBlock(_Event, frozen=True, tag="extension", gc=True):
    """A whole content block of a kind the library does not model, kept as ``Extension``."""

    index: int
    type_name: str
    data: Any = None


class Done(_Event, frozen=True, tag="done"):
    """The answer is complete.

    ``usage`` is what the provider reported; ``None`` when it reported nothing (never zeros in
    its place), so the loop can estimate it (see ``Usage.estimated``).
    """

    stop_reason: StopReason = StopReason.STOP
    usage: Usage | None = None
    cost: Cost | None = None


class ErrorEvent(_Event, frozen=True, tag="error"):
    """The call failed. ``kind`` classifies it; ``retry_after`` is the provider's hint (seconds).

    ``stop_reason`` is ``error``, or ``aborted`` when the provider saw its request cancelled.
    ``context_window`` is the model's context window in tokens, for a ``context_overflow``
    whose provider learned it (a local server states it in its error); the loop's recovery
    then trims to that window when the model's spec does not say how large it is.
    """

    kind: ErrorKind = ErrorKind.OTHER
    message: str = ""
    retry_after: float | None = None
    stop_reason: StopReason = StopReason.ERROR
    usage: Usage | None = None
    context_window: int | None = None


AssistantMessageEvent: TypeAlias = (
    StreamStart
    | TextStart
    | TextDelta
    | TextEnd
    | ThinkingStart
    | ThinkingDelta
    | ThinkingEnd
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | ExtensionBlock
    | Done
    | ErrorEvent
)
"""Any event a provider yields (a ``StreamFn`` yields these; the loop's ``Accumulator`` folds
them into an ``AssistantMessage``)."""


# --------------------------------------------------------------------------- accumulator

_TEXT, _THINKING, _TOOL, _EXT = 0, 1, 2, 3
_DELTA_KIND: dict[type, int] = {TextDelta: _TEXT, ToolCallDelta: _TOOL, ThinkingDelta: _THINKING}
_json_decode = msgspec.json.decode
# Shared by every accumulator: both are frozen, and most answers report no cost of their own.
_NO_USAGE = Usage()
_NO_COST = Cost()


class _Slot:
    __slots__ = ("data", "extra", "kind", "parts")

    def __init__(self, kind: int, extra: dict[str, Any] | None = None) -> None:
        self.kind = kind
        self.parts: list[str] = []
        self.extra: dict[str, Any] = extra or {}
        self.data: Any = None


class StreamFailure(Exception):
    """Raised inside the accumulator for a malformed sequence; never escapes ``push``."""


_EVENT_CLASSES = frozenset(
    {
        StreamStart,
        TextStart,
        TextDelta,
        TextEnd,
        ThinkingStart,
        ThinkingDelta,
        ThinkingEnd,
        ToolCallStart,
        ToolCallDelta,
        ToolCallEnd,
        ExtensionBlock,
        Done,
        ErrorEvent,
    }
)
_SHAPE_ERRORS = (msgspec.ValidationError, TypeError, ValueError, RecursionError)


def _well_typed(event: Any) -> AssistantMessageEvent:
    """``event`` with every field of its declared type (a copy: strings become enum members).

    Struct constructors check nothing, so a provider can build an event holding a number where a
    string belongs; converting through builtins checks (and normalises) every field.

    Raises:
        StreamFailure: ``event`` is not an event, or a field cannot have its declared type.
    """
    cls = type(event)
    if cls not in _EVENT_CLASSES:
        raise StreamFailure(f"unknown stream event {cls.__name__}")
    try:
        return msgspec.convert(msgspec.to_builtins(event), cls)  # type: ignore[no-any-return]
    except _SHAPE_ERRORS as exc:
        raise StreamFailure(f"{cls.__name__} with a field of the wrong type: {exc}") from None


# Checks that an event built with fields of the right types already is what ``_well_typed``
# would return (a copy equal to it): a few type tests, where the conversion costs a microsecond.
# They answer ``False`` for anything they do not cover (``meta``, tool arguments given as an
# object, error events, integers outside 0 <= n < 2**63), which then takes the conversion.
# (Tests inlined: this runs for every structural event of every answer.)


def _simple(event: Any) -> bool:  # TextStart, TextEnd
    index = event.index
    return type(index) is int and not index >> 63


def _stream_start(event: Any) -> bool:
    provider, model_id = event.provider, event.model_id
    return (provider is None or type(provider) is str) and (
        model_id is None or type(model_id) is str
    )


def _tool_call_start(event: Any) -> bool:
    index, signature = event.index, event.signature
    return (
        type(index) is int
        and not index >> 63
        and type(event.id) is str
        and type(event.name) is str
        and (signature is None or type(signature) is str)
        and event.meta is None
    )


def _tool_call_end(event: Any) -> bool:
    index, signature = event.index, event.signature
    return (
        type(index) is int
        and not index >> 63
        and event.arguments is msgspec.UNSET
        and (signature is None or type(signature) is str)
    )


def _thinking_start(event: Any) -> bool:
    index, data, signature = event.index, event.data, event.signature
    return (
        type(index) is int
        and not index >> 63
        and type(event.redacted) is bool
        and (data is None or type(data) is str)
        and (signature is None or type(signature) is str)
        and event.meta is None
    )


def _thinking_end(event: Any) -> bool:
    index, data, signature = event.index, event.data, event.signature
    return (
        type(index) is int
        and not index >> 63
        and (data is None or type(data) is str)
        and (signature is None or type(signature) is str)
    )


def _done(event: Any) -> bool:
    if type(event.stop_reason) is not StopReason or event.cost is not None:
        return False
    usage = event.usage
    if usage is None:
        return True
    if type(usage) is not Usage:
        return False
    a, b, c, d, e = usage.input, usage.output, usage.cache_read, usage.cache_write, usage.total
    return (
        type(a) is int
        and type(b) is int
        and type(c) is int
        and type(d) is int
        and type(e) is int
        and not (a | b | c | d | e) >> 63
        and type(usage.estimated) is bool
        and type(usage.extra) is dict
        and not usage.extra
    )


_ALREADY_TYPED: dict[type, Any] = {
    StreamStart: _stream_start,
    TextStart: _simple,
    TextEnd: _simple,
    ThinkingStart: _thinking_start,
    ThinkingEnd: _thinking_end,
    ToolCallStart: _tool_call_start,
    ToolCallEnd: _tool_call_end,
    Done: _done,
}


def _join(parts: list[Any]) -> tuple[str, bool]:
    """The parts as one string, and whether every part was a string (deltas are not checked
    one by one on the per-token path; a wrong one is left out here)."""
    try:
        return "".join(parts), True
    except TypeError:
        return "".join(p for p in parts if isinstance(p, str)), False


class Accumulator:
    """Folds ``AssistantMessageEvent`` values into one ``AssistantMessage``.

    ``push`` returns ``True`` while the event was part of a well-formed sequence; after a
    terminal event, or once the sequence is known to be malformed, ``done`` is true and
    ``finish()`` gives the message. ``finish()`` may be called at any time: a stream that ended
    early yields an error message saying so. ``usage_reported`` says whether the provider
    reported any usage (``Done.usage`` or ``ErrorEvent.usage``); ``usage`` is zero when not.
    A tool call whose arguments are not valid JSON is kept with its raw text in
    ``ToolCall.partial_json`` (the loop answers it with an error result).

    Total: whatever objects are pushed (events with fields of the wrong type, an unhashable
    index, things that are not events), ``push``, ``snapshot`` and ``finish`` never raise, and
    the message is well-typed (it survives a typed ``msgspec`` round trip).
    """

    __slots__ = (
        "_order",
        "_slots",
        "context_window",
        "cost",
        "done",
        "error_kind",
        "error_message",
        "hot_append",
        "hot_index",
        "hot_type",
        "model_id",
        "provider",
        "reported_model",
        "retry_after",
        "stop_reason",
        "usage",
        "usage_reported",
    )

    hot_index: Any
    hot_append: Callable[[Any], None]

    def __init__(self, model: ModelSpec | None = None) -> None:
        self._slots: dict[int, _Slot] = {}
        self._order: list[_Slot] = []
        # The class and index of the last delta ``push`` took, and its block's
        # ``parts.append``: the next delta like it (``type(event) is hot_type and event.index
        # is hot_index``) may be folded in by ``hot_append(event.delta)`` instead of ``push``
        # (the loop does, once per token). Blocks are never replaced nor change kind, so this
        # holds until the stream ends, when ``hot_type`` becomes ``None``.
        # (``hot_index`` and ``hot_append`` are set with ``hot_type``, and read only after it.)
        self.hot_type: type | None = None
        self.provider = model.provider if model is not None else ""
        self.model_id = model.model_id if model is not None else ""
        self.reported_model = False  # whether the stream named the model that answered
        self.done = False
        self.stop_reason: StopReason | None = None
        self.usage = _NO_USAGE
        self.usage_reported = False
        self.cost: Cost | None = None
        self.error_message: str | None = None
        self.error_kind: ErrorKind | None = None
        self.retry_after: float | None = None
        self.context_window: int | None = None  # learned from an overflow error

    # ---------------------------------------------------------------- feeding

    def push(self, event: AssistantMessageEvent) -> bool:
        """Fold one event in. Returns ``False`` if the stream is (now) finished or malformed."""
        cls = type(event)
        kind = _DELTA_KIND.get(cls)
        if kind is not None:
            # A delta for an open block of its own kind (the per-token path: it also becomes
            # ``hot_type``); anything else takes the checked path below.
            try:
                slot = self._slots.get(event.index)  # type: ignore[union-attr]
            except TypeError:  # an unhashable index: the checked path below says so
                slot = None
            if slot is not None and slot.kind == kind and not self.done:
                append = slot.parts.append
                append(event.delta)  # type: ignore[union-attr]
                self.hot_type = cls
                self.hot_index = event.index  # type: ignore[union-attr]
                self.hot_append = append
                return True
        if self.done:
            # Only a stream that had ended well is spoilt by a late event; after an error or an
            # abort, the first cause is the one worth reporting.
            if self.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
                self._fail(f"event {type(event).__name__} after the stream had ended")
            return False
        try:
            typed = _ALREADY_TYPED.get(cls)
            self._apply(event if typed is not None and typed(event) else _well_typed(event))
        except StreamFailure as exc:
            self._fail(str(exc))
            return False
        if self.done:
            self.hot_type = None
            return False
        return True

    def _start(self, index: int, slot: _Slot) -> None:
        if index in self._slots:
            raise StreamFailure(f"content block {index} started twice")
        self._slots[index] = slot
        self._order.append(slot)

    def _slot(self, index: int, kind: int, what: str) -> _Slot:
        slot = self._slots.get(index)
        if slot is None:
            raise StreamFailure(f"{what} for content block {index}, which was never started")
        if slot.kind != kind:
            raise StreamFailure(f"{what} for content block {index} of another kind")
        return slot

    def _apply(self, event: AssistantMessageEvent) -> None:
        cls = type(event)
        # The events every answer has first (a well-formed delta never comes here: ``push``
        # takes it on its own path).
        if cls is Done:
            assert isinstance(event, Done)
            self.done = True
            self.stop_reason = event.stop_reason
            if event.usage is not None:
                self.usage = event.usage
                self.usage_reported = True
            self.cost = event.cost
            if event.stop_reason is StopReason.ERROR:
                # Providers should send ErrorEvent; an error must still say something.
                self.error_kind = ErrorKind.OTHER
                self.error_message = "model error (the provider gave no details)"
        elif cls is StreamStart:
            assert isinstance(event, StreamStart)
            if event.provider:
                self.provider = event.provider
            if event.model_id:
                self.model_id = event.model_id
                self.reported_model = True
        elif cls is ToolCallStart:
            assert isinstance(event, ToolCallStart)
            extra = {
                "id": event.id,
                "name": event.name,
                "meta": event.meta,
                "signature": event.signature,
            }
            self._start(event.index, _Slot(_TOOL, extra))
        elif cls is ToolCallEnd:
            assert isinstance(event, ToolCallEnd)
            slot = self._slot(event.index, _TOOL, "tool call end")
            if event.arguments is not msgspec.UNSET:
                slot.data = event.arguments
                slot.extra["has_args"] = True
            if event.signature is not None:
                slot.extra["signature"] = event.signature
        elif cls is TextStart:
            self._start(event.index, _Slot(_TEXT))  # type: ignore[union-attr]
        elif cls is TextEnd:
            self._slot(event.index, _TEXT, "text end")  # type: ignore[union-attr]
        elif cls is TextDelta:
            self._slot(event.index, _TEXT, "text delta").parts.append(event.delta)  # type: ignore[union-attr]
        elif cls is ToolCallDelta:
            self._slot(event.index, _TOOL, "tool call delta").parts.append(event.delta)  # type: ignore[union-attr]
        elif cls is ThinkingDelta:
            self._slot(event.index, _THINKING, "thinking delta").parts.append(event.delta)  # type: ignore[union-attr]
        elif cls is ThinkingStart:
            assert isinstance(event, ThinkingStart)
            slot = _Slot(_THINKING, {"signature": event.signature, "meta": event.meta})
            slot.extra["redacted"] = event.redacted
            slot.data = event.data
            self._start(event.index, slot)
        elif cls is ThinkingEnd:
            assert isinstance(event, ThinkingEnd)
            slot = self._slot(event.index, _THINKING, "thinking end")
            if event.signature is not None:
                slot.extra["signature"] = event.signature
            if event.data is not None:
                slot.data = event.data
        elif cls is ExtensionBlock:
            assert isinstance(event, ExtensionBlock)
            slot = _Slot(_EXT, {"type_name": event.type_name})
            slot.data = event.data
            self._start(event.index, slot)
        elif cls is ErrorEvent:
            assert isinstance(event, ErrorEvent)
            self.done = True
            self.stop_reason = (
                StopReason.ABORTED if event.stop_reason is StopReason.ABORTED else StopReason.ERROR
            )
            self.error_kind = event.kind
            self.error_message = event.message or f"model error ({event.kind})"
            self.retry_after = event.retry_after
            window = event.context_window
            if type(window) is int and window > 0:
                self.context_window = window
            if event.usage is not None:
                self.usage = event.usage
                self.usage_reported = True
        else:
            raise StreamFailure(f"unknown stream event {type(event).__name__}")

    def _fail(self, message: str, kind: ErrorKind = ErrorKind.OTHER) -> None:
        self.hot_type = None
        self.done = True
        self.stop_reason = StopReason.ERROR
        self.error_kind = kind
        self.error_message = f"malformed provider stream: {message}"

    def fail(self, message: str, kind: ErrorKind, retry_after: float | None = None) -> None:
        """End the stream as failed (a provider that raised, say), keeping what arrived."""
        self.hot_type = None
        self.done = True
        self.stop_reason = StopReason.ERROR
        self.error_kind = kind
        self.error_message = message
        self.retry_after = retry_after

    def abort(self) -> None:
        """End the stream as aborted by the caller, keeping what arrived."""
        self.hot_type = None
        if not self.done or self.stop_reason is not StopReason.ERROR:
            self.done = True
            self.stop_reason = StopReason.ABORTED
            self.error_message = None
            self.error_kind = None

    # ---------------------------------------------------------------- results

    @property
    def has_content(self) -> bool:
        """Whether any content block has started."""
        return bool(self._order)

    def _blocks(self, *, final: bool) -> tuple[list[ContentBlock], str | None]:
        blocks: list[ContentBlock] = []
        problem: str | None = None
        for slot in self._order:
            kind = slot.kind
            whole = True
            if kind == _TEXT:
                text, whole = _join(slot.parts)
                blocks.append(Text(text=text))
            elif kind == _THINKING:
                text, whole = _join(slot.parts)
                blocks.append(
                    Thinking(
                        thinking=text,
                        signature=slot.extra.get("signature"),
                        redacted=bool(slot.extra.get("redacted")),
                        data=slot.data,
                        meta=slot.extra.get("meta"),
                    )
                )
            elif kind == _EXT:
                blocks.append(Extension(type_name=slot.extra["type_name"], data=slot.data))
            else:
                raw, whole = _join(slot.parts)
                partial: str | None = None
                if slot.extra.get("has_args"):
                    arguments = slot.data
                elif not final:
                    arguments, partial = {}, raw
                elif not raw.strip():
                    arguments = {}
                else:
                    try:
                        arguments = _json_decode(raw)
                    except (msgspec.DecodeError, ValueError, RecursionError):
                        # Models do send broken JSON. The call is kept, with its raw text, and
                        # never run: the loop answers it with an error result the model can read
                        # (and a cut-off one under ``length`` as an incomplete call).
                        arguments, partial = {}, raw
                blocks.append(
                    ToolCall(
                        id=slot.extra["id"],
                        name=slot.extra["name"],
                        arguments=arguments,
                        partial_json=partial,
                        signature=slot.extra.get("signature"),
                        meta=slot.extra.get("meta"),
                    )
                )
            if not whole and problem is None:
                problem = "a delta that is not a string"
        return blocks, problem

    def snapshot(self) -> AssistantMessage:
        """The message as far as it has streamed (tool arguments not yet parsed)."""
        blocks, _ = self._blocks(final=False)
        return AssistantMessage(
            content=blocks,
            provider=self.provider,
            model_id=self.model_id,
            usage=self.usage,
            stop_reason=self.stop_reason or StopReason.STOP,
        )

    def finish(self, pricing_cost: Cost | None = None) -> AssistantMessage:
        """The final message. An unterminated stream becomes an error (kind ``network``).

        ``pricing_cost`` is used when the provider reported no cost of its own.
        """
        if not self.done:
            self.fail(
                "malformed provider stream: the stream ended without a terminal event",
                ErrorKind.NETWORK,
            )
        blocks, problem = self._blocks(final=True)
        if problem is not None and self.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
            self._fail(problem)
        stop_reason = self.stop_reason or StopReason.ERROR
        if stop_reason is StopReason.ABORTED or stop_reason is StopReason.ERROR:
            # A failed or aborted answer keeps what it said but none of its tool calls: they
            # will not run, and a call without a result would be refused when the history is
            # replayed.
            blocks = [b for b in blocks if type(b) is not ToolCall]
        cost = self.cost if self.cost is not None else (pricing_cost or _NO_COST)
        return AssistantMessage(
            content=blocks,
            provider=self.provider,
            model_id=self.model_id,
            usage=self.usage,
            cost=cost,
            stop_reason=stop_reason,
            error_message=self.error_message,
            error_kind=self.error_kind,
        )
