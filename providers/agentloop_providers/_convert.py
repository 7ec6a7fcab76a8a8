"""Helpers shared by the adapters' request builders and stream parsers.

Request side: which thinking blocks may be replayed (a signature only proves a block to the
provider that made it, so thinking from another provider is replayed as plain text), token
budgets and effort levels for a ``ThinkingLevel``, images as data URLs, tool results split into
text and images, tool arguments as JSON. Stream side: ``BlockIndexer`` hands out content block
indices for protocols that do not number their blocks, and ``usage`` builds a ``Usage`` with a
consistent ``total``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import (
    AssistantMessage,
    ContentBlock,
    Extension,
    Image,
    StopReason,
    Text,
    Thinking,
    ThinkingLevel,
    ToolCall,
    Usage,
)

if TYPE_CHECKING:
    from agentloop import ModelSpec, StreamOptions, ToolResultMessage
    from agentloop.stream import LlmContext

__all__ = [
    "DEFAULT_THINKING_BUDGETS",
    "BlockIndexer",
    "arguments_json",
    "assistant_blocks",
    "image_data_url",
    "max_output_tokens",
    "reasoning_effort",
    "thinking_budget",
    "tool_choice",
    "tool_result_parts",
    "usage",
]

_encode = msgspec.json.Encoder().encode

DEFAULT_THINKING_BUDGETS: dict[ThinkingLevel, int] = {
    ThinkingLevel.MINIMAL: 1024,
    ThinkingLevel.LOW: 2048,
    ThinkingLevel.MEDIUM: 8192,
    ThinkingLevel.HIGH: 16384,
    ThinkingLevel.EXTRA_HIGH: 32768,
}

_EFFORT: dict[ThinkingLevel, str] = {
    ThinkingLevel.MINIMAL: "minimal",
    ThinkingLevel.LOW: "low",
    ThinkingLevel.MEDIUM: "medium",
    ThinkingLevel.HIGH: "high",
    ThinkingLevel.EXTRA_HIGH: "high",
}


def thinking_budget(model: ModelSpec) -> int | None:
    """Reasoning tokens for the model's thinking level (``None`` when thinking is off).

    ``ModelSpec.thinking_budgets`` overrides ``DEFAULT_THINKING_BUDGETS`` level by level.
    """
    level = model.thinking_level
    if level is ThinkingLevel.OFF:
        return None
    if model.thinking_budgets is not None:
        budget = model.thinking_budgets.get(level)
        if budget is not None:
            return budget
    return DEFAULT_THINKING_BUDGETS[level]


def reasoning_effort(level: ThinkingLevel, *, extra_high: str = "high") -> str | None:
    """The ``reasoning_effort`` string for ``level`` (``None`` when thinking is off)."""
    if level is ThinkingLevel.OFF:
        return None
    if level is ThinkingLevel.EXTRA_HIGH:
        return extra_high
    return _EFFORT[level]


def max_output_tokens(model: ModelSpec, options: StreamOptions, default: int | None) -> int | None:
    """``options.max_tokens``, else ``model.max_output_tokens``, else ``default``."""
    if options.max_tokens is not None:
        return options.max_tokens
    if model.max_output_tokens is not None:
        return model.max_output_tokens
    return default


def tool_choice(options: StreamOptions, context: LlmContext) -> str | None:
    """``options.tool_choice`` checked against the tools offered: ``None`` (the provider's
    default, which is ``auto``), ``"auto"``, ``"none"``, ``"required"`` or a tool's name.

    ``auto`` and ``none`` mean nothing without tools and are dropped then (APIs refuse a choice
    without tools).

    Raises:
        ValueError: a tool is required, or named, and it is not among the tools offered (the
            call then ends as an ``other`` error, before anything is sent).
    """
    choice = options.tool_choice
    if choice is None:
        return None
    if choice in ("auto", "none"):
        return choice if context.tools else None
    names = [t.name for t in context.tools]
    if not names:
        raise ValueError(f"tool_choice {choice!r} needs tools, and none is offered")
    if choice == "required" or choice in names:
        return choice
    raise ValueError(
        f"tool_choice names {choice!r}, which is not among the tools offered "
        f"({', '.join(names)}); use 'auto', 'none', 'required' or one of those names"
    )


def image_data_url(image: Image) -> str:
    """The image as a URL: its own ``url``, or a ``data:`` URL of its base64 data."""
    if image.url:
        return image.url
    return f"data:{image.media_type};base64,{image.data or ''}"


def arguments_json(call: ToolCall) -> str:
    """A tool call's arguments as JSON text (the unfinished text when it was cut off)."""
    if call.partial_json is not None and not call.arguments:
        return call.partial_json or "{}"
    return _encode(call.arguments).decode()


def tool_result_parts(message: ToolResultMessage) -> tuple[str, list[Image]]:
    """A tool result's text (text blocks joined by newlines) and its images."""
    texts: list[str] = []
    images: list[Image] = []
    for block in message.content:
        if type(block) is Text:
            texts.append(block.text)
        elif type(block) is Image:
            images.append(block)
        elif type(block) is Extension:
            texts.append(_encode(block.data).decode())
    return "\n".join(texts), images


def _native(message: AssistantMessage, model: ModelSpec) -> bool:
    return bool(message.provider) and message.provider == model.provider


def assistant_blocks(
    message: AssistantMessage,
    model: ModelSpec,
    *,
    keep_thinking: bool = True,
    needs_signature: bool = False,
) -> list[ContentBlock]:
    """The blocks of a past assistant message as they should be replayed to ``model``.

    Empty text is dropped. Thinking made by another provider (or, with ``needs_signature``,
    unsigned thinking) becomes a ``Text`` block; foreign redacted thinking is dropped, since it
    is opaque. Native thinking is kept when ``keep_thinking`` (otherwise dropped). Tool calls
    of an aborted message are dropped (they never ran). Extension blocks are kept only for the
    provider that made them.
    """
    native = _native(message, model)
    aborted = message.stop_reason is StopReason.ABORTED
    out: list[ContentBlock] = []
    for block in message.content:
        cls = type(block)
        if cls is Text:
            if block.text:  # type: ignore[union-attr]
                out.append(block)
        elif cls is Thinking:
            assert isinstance(block, Thinking)
            signed = block.redacted or bool(block.signature)
            if native and (signed or not needs_signature):
                if keep_thinking:
                    out.append(block)
            elif not block.redacted and block.thinking:
                out.append(Text(text=block.thinking))
        elif cls is ToolCall:
            if not aborted:
                out.append(block)
        elif cls is Extension:
            if native:
                out.append(block)
        else:
            out.append(block)
    return out


def usage(
    *, input: int = 0, output: int = 0, cache_read: int = 0, cache_write: int = 0, **extra: int
) -> Usage:
    """A ``Usage`` whose ``total`` is the sum of the four counts; zero extras are left out."""
    return Usage(
        input=input,
        output=output,
        cache_read=cache_read,
        cache_write=cache_write,
        total=input + output + cache_read + cache_write,
        extra={k: v for k, v in extra.items() if v},
    )


class BlockIndexer:
    """Numbers content blocks for protocols that do not: one index per distinct key, in order.

    ``get(key)`` returns ``(index, new)``; ``new`` is true the first time a key is seen, when
    the caller emits the block's start event. ``close(key)`` forgets the key, so the same key
    later starts a fresh block (text after a tool call, say).
    """

    __slots__ = ("_next", "open")

    def __init__(self) -> None:
        self._next = 0
        self.open: dict[Any, int] = {}

    def get(self, key: Any) -> tuple[int, bool]:
        """The index of ``key``'s block, and whether it was just opened."""
        index = self.open.get(key)
        if index is not None:
            return index, False
        index = self._next
        self._next += 1
        self.open[key] = index
        return index, True

    def close(self, key: Any) -> int | None:
        """Forget ``key``; return its index if it was open."""
        return self.open.pop(key, None)

    def peek(self, key: Any) -> int | None:
        """The index of ``key`` if it is open, without opening it."""
        return self.open.get(key)
