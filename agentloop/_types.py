"""The data model: content blocks, messages, usage and cost, model specification, results.

Everything here is a msgspec Struct. Variants are tagged unions, so any value round-trips
through ``msgspec.json`` with no custom code; the role of a message lives in its tag, never in a
field that could contradict it.

Only structs that provably cannot be part of a reference cycle opt out of the cyclic garbage
collector (``gc=False``): those whose fields hold scalars and such structs only. Anything with an
``Any`` field (tool arguments, ``details``, ``meta``), a message, or a user's subclass stays
collectable; msgspec leaves an instance untracked anyway when none of its values is tracked.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import time
import typing
import warnings
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, overload

import msgspec

from ._errors import (
    Aborted,
    AgentError,
    ErrorKind,
    HookFailed,
    StructuredOutputFailed,
    error_for_kind,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from typing_extensions import TypeVar

    OutputT = TypeVar("OutputT", default=str)
else:
    # Type checkers see the default above (PEP 696); 3.11's TypeVar takes none.
    OutputT = typing.TypeVar("OutputT")

__all__ = [
    "AgentContext",
    "AgentMessage",
    "AgentResult",
    "AssistantMessage",
    "ContentBlock",
    "Cost",
    "CustomMessage",
    "ErrorKind",
    "Extension",
    "Image",
    "LlmContext",
    "LlmMessage",
    "ModelSpec",
    "OutputT",
    "Pricing",
    "StopReason",
    "StreamOptions",
    "Text",
    "Thinking",
    "ThinkingBudgets",
    "ThinkingLevel",
    "ToolCall",
    "ToolResultMessage",
    "ToolSchema",
    "Usage",
    "UserMessage",
    "add_cost",
    "add_usage",
    "extract_text",
    "now_ms",
    "use_clock",
]

_clock: contextvars.ContextVar[Callable[[], int] | None] = contextvars.ContextVar(
    "agentloop_clock", default=None
)


def now_ms() -> int:
    """Milliseconds since the epoch, the unit of every ``timestamp`` field: the wall clock, or
    the clock in use (``use_clock``)."""
    clock = _clock.get()
    if clock is None:
        return time.time_ns() // 1_000_000
    return clock()


@contextlib.contextmanager
def use_clock(clock: Callable[[], int]) -> Iterator[None]:
    """Timestamp the messages built inside the block with ``clock()`` (milliseconds).

    It covers the block's task and the tasks started from it (a run started inside, its tool
    calls), not other tasks. For runtimes that replay a run and need the same timestamps every
    time (a Temporal workflow passes its deterministic time), and for tests comparing histories.
    """
    token = _clock.set(clock)
    try:
        yield
    finally:
        _clock.reset(token)


# --------------------------------------------------------------------------- content blocks


class _Block(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, omit_defaults=True, tag_field="type"
):
    pass


class Text(_Block, frozen=True, tag="text"):
    """Plain text."""

    text: str


class Thinking(_Block, frozen=True, tag="thinking", gc=True):
    """Reasoning the model showed (or hid) before answering.

    ``signature`` proves the block to the provider that made it; ``redacted`` blocks carry only
    opaque ``data`` (redacted thinking, encrypted reasoning) that must be replayed verbatim.
    ``meta`` keeps provider-specific replay details (item ids and the like).
    """

    thinking: str = ""
    signature: str | None = None
    redacted: bool = False
    data: str | None = None
    meta: dict[str, Any] | None = None


class ToolCall(_Block, frozen=True, tag="tool_call", gc=True):
    """A request from the model to run a tool.

    ``arguments`` is the parsed JSON the model sent (normally an object). ``partial_json`` holds
    the raw text, with ``arguments`` left empty, when that text is not valid JSON: a call the
    model never finished (output cut off by the token limit), or one it sent broken. Such a call
    is never run; it is answered with an error result the model can read.
    """

    id: str
    name: str
    arguments: Any = msgspec.field(default_factory=dict)
    partial_json: str | None = None
    signature: str | None = None
    meta: dict[str, Any] | None = None


class Image(_Block, frozen=True, tag="image"):
    """An image, inline as base64 ``data`` or by ``url``."""

    media_type: str = "image/png"
    data: str | None = None
    url: str | None = None


class Extension(_Block, frozen=True, tag="extension", gc=True):
    """A block of a kind this library does not model (server tools, citations, ...), kept as is."""

    type_name: str
    data: Any = None


ContentBlock: TypeAlias = Text | Thinking | ToolCall | Image | Extension
"""One block of a message's content (a tagged union: ``type`` names the class on the wire)."""


def extract_text(blocks: list[ContentBlock] | tuple[ContentBlock, ...]) -> str:
    """Concatenate the text of every ``Text`` block, ignoring the other kinds."""
    return "".join([b.text for b in blocks if type(b) is Text])


# --------------------------------------------------------------------------- enums


class StopReason(enum.StrEnum):
    """Why the model stopped producing output."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_USE = "tool_use"
    ABORTED = "aborted"
    ERROR = "error"


class ThinkingLevel(enum.StrEnum):
    """How much reasoning to ask of the model."""

    OFF = "off"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    EXTRA_HIGH = "extra_high"


# --------------------------------------------------------------------------- usage and cost


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    if not b:
        return dict(a) if a else {}
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0) + value
    return out


class Usage(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Token counts. Adds with ``+`` (and ``+=``), ``extra`` key by key.

    ``estimated`` marks counts the loop estimated (from the request and the answer, with the
    default token estimator) because the provider reported none: local servers often do not.
    A sum is estimated when any of its parts is. A provider that reports no usage says so by
    leaving ``Done.usage`` unset, never by reporting zeros.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total: int = 0
    extra: dict[str, int] = msgspec.field(default_factory=dict)
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            total=self.total + other.total,
            extra=_merge(self.extra, other.extra) if self.extra or other.extra else {},
            estimated=self.estimated or other.estimated,
        )

    def merge(self, other: Usage) -> Usage:
        """The same as ``self + other``."""
        return self + other

    @property
    def is_empty(self) -> bool:
        """Whether every count is zero (no usage reported)."""
        return self == _EMPTY_USAGE


_EMPTY_USAGE = Usage()


def _sums(start: Any, items: list[Any]) -> tuple[Any, Any, Any, Any, Any, dict[str, Any]]:
    """``start`` plus each of ``items`` (a ``Usage`` or ``Cost`` each), field by field, in order,
    and their ``extra`` maps merged into a dict of the sum's own."""
    i, o, r, w, t = start.input, start.output, start.cache_read, start.cache_write, start.total
    extra = start.extra
    for item in items:
        i += item.input
        o += item.output
        r += item.cache_read
        w += item.cache_write
        t += item.total
        if item.extra:
            extra = _merge(extra, item.extra)
    return i, o, r, w, t, dict(extra) if extra is start.extra else extra


def add_usage(start: Usage, usages: list[Usage]) -> Usage:
    """``start`` plus each of ``usages``: what ``+`` gives, one ``Usage`` made in all."""
    i, o, r, w, t, extra = _sums(start, usages)
    estimated = start.estimated or any(u.estimated for u in usages)
    return Usage(
        input=i, output=o, cache_read=r, cache_write=w, total=t, extra=extra, estimated=estimated
    )


class Cost(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Money spent, per category and in total. Adds like ``Usage``."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0
    extra: dict[str, float] = msgspec.field(default_factory=dict)

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            total=self.total + other.total,
            extra=_merge(self.extra, other.extra) if self.extra or other.extra else {},
        )


def add_cost(start: Cost, costs: list[Cost]) -> Cost:
    """``start`` plus each of ``costs``: what ``+`` gives, one ``Cost`` made in all."""
    i, o, r, w, t, extra = _sums(start, costs)
    return Cost(input=i, output=o, cache_read=r, cache_write=w, total=t, extra=extra)


class Pricing(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Prices in currency units per million tokens, used to price usage a provider reports."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost(self, usage: Usage) -> Cost:
        """The cost of ``usage`` at these prices."""
        m = 1_000_000.0
        i = usage.input * self.input / m
        o = usage.output * self.output / m
        cr = usage.cache_read * self.cache_read / m
        cw = usage.cache_write * self.cache_write / m
        return Cost(input=i, output=o, cache_read=cr, cache_write=cw, total=i + o + cr + cw)


# --------------------------------------------------------------------------- model


class ThinkingBudgets(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Per-level token budgets for providers that take reasoning budgets in tokens."""

    budgets: dict[ThinkingLevel, int] = msgspec.field(default_factory=dict)

    def get(self, level: ThinkingLevel) -> int | None:
        """The budget for ``level``, or ``None`` when none is set."""
        return self.budgets.get(level)


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Which model to call. Only ``provider`` and ``model_id`` are required.

    ``context_window`` and ``pricing`` are optional facts about the model; with ``pricing`` the
    loop prices usage when a provider reports no cost.
    """

    provider: str
    model_id: str
    thinking_level: ThinkingLevel = ThinkingLevel.OFF
    thinking_budgets: ThinkingBudgets | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    pricing: Pricing | None = None


class StreamOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Per-call options passed through to the provider.

    ``api_key`` is filled in by the loop from ``get_api_key`` before each call; it is never shown
    by ``repr`` and never travels in an event. ``tool_choice`` is ``"auto"`` (the provider's
    default when ``None``), ``"none"`` (no tool may be called), ``"required"`` (some tool must
    be) or a tool's name (that tool must be); set it for one turn with
    ``AgentLoopConfig.turn_options``.
    """

    temperature: float | None = None
    max_tokens: int | None = None
    session_id: str | None = None
    transport: str = "sse"
    api_key: str | None = None
    tool_choice: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    def __repr__(self) -> str:
        key = None if self.api_key is None else "***"
        return (
            f"StreamOptions(temperature={self.temperature!r}, max_tokens={self.max_tokens!r}, "
            f"session_id={self.session_id!r}, transport={self.transport!r}, api_key={key!r}, "
            f"tool_choice={self.tool_choice!r}, extra={self.extra!r})"
        )

    __str__ = __repr__

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        # msgspec's own __rich_repr__ (used by rich and friends) would show the key.
        return [
            ("temperature", self.temperature),
            ("max_tokens", self.max_tokens),
            ("session_id", self.session_id),
            ("transport", self.transport),
            ("api_key", None if self.api_key is None else "***"),
            ("tool_choice", self.tool_choice),
            ("extra", self.extra),
        ]


# --------------------------------------------------------------------------- messages


class _Message(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="role"):
    pass


class _TextOrConstructor:
    """``UserMessage.text``: on a message, its text (as on every message); on the class, the
    constructor's old name, kept for one release (``UserMessage.from_text``)."""

    @overload
    def __get__(self, instance: None, owner: type[UserMessage]) -> Callable[..., UserMessage]: ...
    @overload
    def __get__(self, instance: UserMessage, owner: type[UserMessage]) -> str: ...
    def __get__(
        self, instance: UserMessage | None, owner: type[UserMessage]
    ) -> str | Callable[..., UserMessage]:
        if instance is None:
            warnings.warn(
                "UserMessage.text(...) as a constructor is deprecated and will be removed; "
                "use UserMessage.from_text(...)",
                DeprecationWarning,
                stacklevel=2,
            )
            return owner.from_text
        return extract_text(instance.content)


class UserMessage(_Message, frozen=True, tag="user"):
    """A message from the user: text and images. ``UserMessage.from_text`` builds one."""

    content: list[ContentBlock]
    timestamp: int = msgspec.field(default_factory=now_ms)

    @classmethod
    def from_text(cls, text: str, *, images: list[Image] | None = None) -> UserMessage:
        """A user message holding ``text`` followed by any ``images``."""
        content: list[ContentBlock] = [Text(text=text)]
        if images:
            content.extend(images)
        return cls(content=content)

    text = _TextOrConstructor()
    """The message's text blocks, concatenated."""


class AssistantMessage(_Message, frozen=True, tag="assistant"):
    """A finished answer from the model."""

    content: list[ContentBlock] = msgspec.field(default_factory=list)
    provider: str = ""
    model_id: str = ""
    usage: Usage = _EMPTY_USAGE
    cost: Cost = msgspec.field(default_factory=Cost)
    stop_reason: StopReason = StopReason.STOP
    error_message: str | None = None
    error_kind: ErrorKind | None = None
    timestamp: int = msgspec.field(default_factory=now_ms)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls in this message, in order."""
        return [b for b in self.content if type(b) is ToolCall]

    @property
    def text(self) -> str:
        """The message's text blocks, concatenated."""
        return extract_text(self.content)


class ToolResultMessage(_Message, frozen=True, tag="tool_result"):
    """The result of one tool call, sent back to the model.

    ``details`` is for logs and displays only; providers never send it to the model.
    """

    tool_call_id: str
    content: list[ContentBlock]
    tool_name: str = ""
    is_error: bool = False
    details: Any = None
    timestamp: int = msgspec.field(default_factory=now_ms)

    @property
    def text(self) -> str:
        """The result's text blocks, concatenated."""
        return extract_text(self.content)


LlmMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage
"""A message a model sees: the user's, the assistant's, or a tool's result."""


class CustomMessage(_Message, frozen=True, tag=True):
    """Base class for application messages the model does not see directly.

    Subclass it (``class Note(CustomMessage, frozen=True, tag="note"): text: str``; type
    checkers want ``frozen=True`` repeated); subclasses register themselves so they round-trip
    through JSON by their tag (see ``agentloop.decode``).
    ``convert_to_llm`` decides whether and how the model sees one; by default it does not.
    """

    @staticmethod
    def registered() -> dict[str, type[CustomMessage]]:
        """Every subclass defined so far, by tag."""
        out: dict[str, type[CustomMessage]] = {}
        stack: list[type[CustomMessage]] = list(CustomMessage.__subclasses__())
        while stack:
            cls = stack.pop()
            stack.extend(cls.__subclasses__())
            tag = cls.__struct_config__.tag
            if tag in {"user", "assistant", "tool_result"}:
                raise TypeError(f"custom message tag {tag!r} clashes with an LLM message role")
            out[str(tag)] = cls
        return out


AgentMessage: TypeAlias = LlmMessage | CustomMessage
"""A message of an agent's history: one a model sees, or an application's ``CustomMessage``."""


class ToolSchema(msgspec.Struct, frozen=True, kw_only=True):
    """What a provider is told about one tool."""

    name: str
    description: str
    parameters: dict[str, Any]


class MessageLog(list[LlmMessage]):
    """A list of LLM messages that is only ever appended to: the loop's own conversation.

    While a conversation only grows, the loop passes the same ``MessageLog`` as
    ``LlmContext.messages`` call after call. A provider that meets the same object again may
    rely on what it saw then: its first ``n`` items are the very objects they were, ``n`` being
    its length at the time. That is what lets a provider build only the new part of a request
    without checking the rest (``agentloop_providers``' request cache). Anything that is not
    the loop's own log (a window's slice, a repaired history, a user's list) is a plain list.
    """

    __slots__ = ()


class LlmContext(msgspec.Struct, frozen=True, kw_only=True):
    """What a provider receives for one call: the system prompt, LLM messages and tool schemas.

    The message list is valid for the duration of the call; a provider that keeps it longer must
    copy it.
    """

    system_prompt: str = ""
    messages: list[LlmMessage] = msgspec.field(default_factory=list)
    tools: list[ToolSchema] = msgspec.field(default_factory=list)


class AgentContext(msgspec.Struct, kw_only=True):
    """The input of a loop run: system prompt, history and tools (``AgentTool`` objects)."""

    system_prompt: str = ""
    messages: list[AgentMessage] = msgspec.field(default_factory=list)
    tools: list[Any] = msgspec.field(default_factory=list)


class _ResultFields(msgspec.Struct, Generic[OutputT], frozen=True, kw_only=True):
    """The fields of ``AgentResult``: see there."""

    messages: list[AgentMessage]
    stop_reason: StopReason
    usage: Usage = _EMPTY_USAGE
    cost: Cost = msgspec.field(default_factory=Cost)
    error: str | None = None
    error_kind: ErrorKind | None = None
    stopped_by: str | None = None
    unsaved_messages: int = 0
    session_error: str | None = None
    output: OutputT
    # A typed run that ended without a valid value: why, and after how many attempts.
    output_error: str | None = None
    output_attempts: int = 0


# The stored ``output``, read past the property that refuses a failed run's.
_stored_output = _ResultFields.__dict__["output"].__get__


class AgentResult(_ResultFields[OutputT], frozen=True, kw_only=True):
    """What a finished run produced.

    ``output`` is the run's output: the final answer's text, or, for an agent or prompt given an
    ``output_type``, the validated value of that type. **A run that failed has no output**:
    reading ``output`` of a run that ended in a model error, a hook failure or an abort (or of a
    typed run that ended without a valid value, ``output_error`` says why) raises that run's
    typed ``AgentError``, the same one ``Agent.prompt`` raises unless told
    ``raise_on_error=False``. ``ok`` says whether there is an output.

    ``stop_reason`` comes from the last assistant message (``aborted`` when the run was
    cancelled); ``usage`` and ``cost`` are summed over every assistant message of the run.
    ``error`` and ``error_kind`` are set when the run ended in a model error, ``stopped_by``
    when a policy ended it. ``unsaved_messages`` counts committed messages the agent's session
    store did not take (``session_error`` says why); they never make a run fail.
    """

    @property  # type: ignore[misc]
    def output(self) -> OutputT:
        """The run's output: the final text, or the typed value.

        Raises:
            ModelError: the run ended in a model error (``ContextWindowOverflow``,
                ``ModelThrottled``, ``NetworkError``, ``StreamError``); it carries this result
                as ``.result``, as the errors below do.
            HookFailed: application code the loop calls raised.
            Aborted: the run was aborted.
            StructuredOutputFailed: a typed run ended without a valid value.
        """
        if (
            self.stop_reason is StopReason.ERROR
            or self.stop_reason is StopReason.ABORTED
            or self.output_error is not None
        ):
            self.raise_for_error()
        value: OutputT = _stored_output(self)
        return value

    @property
    def ok(self) -> bool:
        """Whether the run has an output: it ended neither in error nor aborted, and a typed
        run got its value."""
        return self.exception() is None

    @property
    def final_message(self) -> AssistantMessage | None:
        """The last assistant message of the run, if any."""
        for message in reversed(self.messages):
            if type(message) is AssistantMessage:
                return message
        return None

    @property
    def text(self) -> str:
        """The text of the last assistant message ("" when there is none)."""
        final = self.final_message
        return "" if final is None else final.text

    def exception(self) -> AgentError | None:
        """The typed error of a run that failed (``None`` for one that did not); it carries
        this result as ``.result``."""
        error: AgentError
        if self.stop_reason is StopReason.ABORTED:
            error = Aborted("the run was aborted")
        elif self.stop_reason is StopReason.ERROR:
            if self.error_kind is ErrorKind.HOOK:
                hook = (self.error or "").partition(" raised ")[0]
                error = HookFailed(self.error or "a hook failed", hook=hook)
            else:
                error = error_for_kind(
                    self.error_kind or ErrorKind.OTHER, self.error or "model error"
                )
        elif self.output_error is not None:
            error = StructuredOutputFailed(max(self.output_attempts, 1), self.output_error)
        else:
            return None
        error.result = self
        return error

    def raise_for_error(self) -> None:
        """Raise the typed ``AgentError`` of a run that failed; do nothing otherwise.

        Raises:
            ModelError: the model failed (``ContextWindowOverflow``, ``ModelThrottled``,
                ``NetworkError``, ``StreamError``).
            HookFailed: application code the loop calls raised.
            Aborted: the run was aborted.
            StructuredOutputFailed: a typed run ended without a valid value.
        """
        error = self.exception()
        if error is not None:
            raise error
