"""The Anthropic Messages API request body, built plainly or from a ``RequestCache``.

Consecutive messages of one role share one API message (the tool results of a turn, and text
that follows them); prompt-caching breakpoints go on the last content block that may carry one
(not a thinking block) of the messages ``message_breakpoints`` picks. With a cache, each
history message is converted and encoded once (its content blocks, plain and with the mark),
and a request joins the pieces: see ``_request_cache``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import (
    AssistantMessage,
    Extension,
    Image,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

from ._convert import assistant_blocks, max_output_tokens, thinking_budget, tool_choice
from ._request_cache import Codec, Fold, Pieces, Tail, encode
from .caching import PromptCaching, caching_for, message_breakpoints

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentloop import ModelSpec, StreamOptions
    from agentloop.stream import LlmContext

    from ._request_cache import RequestCache

__all__ = ["DEFAULT_MAX_TOKENS", "anthropic_payload"]

DEFAULT_MAX_TOKENS = 8192
_UNMARKABLE = ("thinking", "redacted_thinking")


def _image(image: Image) -> dict[str, Any]:
    if image.url:
        return {"type": "image", "source": {"type": "url", "url": image.url}}
    source = {"type": "base64", "media_type": image.media_type, "data": image.data or ""}
    return {"type": "image", "source": source}


def _user_content(message: UserMessage) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in message.content:
        if type(block) is Text:
            if block.text:
                out.append({"type": "text", "text": block.text})
        elif type(block) is Image:
            out.append(_image(block))
    return out


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block in message.content:
        if type(block) is Text:
            if block.text:
                content.append({"type": "text", "text": block.text})
        elif type(block) is Image:
            content.append(_image(block))
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    if content:
        result["content"] = content
    if message.is_error:
        result["is_error"] = True
    return result


def _assistant_content(message: AssistantMessage, model: ModelSpec) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in assistant_blocks(message, model, needs_signature=True):
        if type(block) is Text:
            out.append({"type": "text", "text": block.text})
        elif type(block) is Thinking:
            if block.redacted:
                out.append({"type": "redacted_thinking", "data": block.data or ""})
            else:
                out.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
        elif type(block) is ToolCall:
            arguments = block.arguments if isinstance(block.arguments, dict) else {}
            out.append({"type": "tool_use", "id": block.id, "name": block.name, "input": arguments})
        elif type(block) is Extension:
            if isinstance(block.data, dict) and block.data.get("type") == block.type_name:
                out.append(block.data)
    return out


def _converted(message: Any, model: ModelSpec) -> tuple[str, list[dict[str, Any]]]:
    """A message's role and content blocks."""
    if type(message) is AssistantMessage:
        return "assistant", _assistant_content(message, model)
    if type(message) is ToolResultMessage:
        return "user", [_tool_result(message)]
    assert isinstance(message, UserMessage)
    return "user", _user_content(message)


def _last_markable(content: list[dict[str, Any]]) -> int:
    """The index of the last block that may carry a cache mark, or -1."""
    for i in range(len(content) - 1, -1, -1):
        if content[i].get("type") not in _UNMARKABLE:
            return i
    return -1


def _plain_messages(
    model: ModelSpec, messages: Sequence[Any], breakpoints: int, mark: dict[str, Any]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        role, content = _converted(message, model)
        if not content:
            continue
        if out and out[-1]["role"] == role:
            # Tool results of one turn (and text that follows them) share one user message.
            out[-1]["content"].extend(content)
        else:
            out.append({"role": role, "content": content})
    for at in message_breakpoints([m["role"] for m in out], breakpoints):
        content = out[at]["content"]
        i = _last_markable(content)
        if i >= 0:
            content[i] = {**content[i], "cache_control": mark}
    return out


def anthropic_payload(
    model: ModelSpec,
    context: LlmContext,
    options: StreamOptions,
    *,
    prompt_caching: bool | PromptCaching = True,
    default_max_tokens: int = DEFAULT_MAX_TOKENS,
    cache: RequestCache | None = None,
) -> dict[str, Any]:
    """The Messages API request body for one call.

    With ``cache``, the history comes as ``msgspec.Raw`` items (the same bytes once encoded).

    Raises:
        ValueError: ``options.tool_choice`` does not fit the tools.
        TypeError: ``options.extra["prompt_caching"]`` is neither a bool nor a ``PromptCaching``.
    """
    caching = caching_for(prompt_caching, options.extra)
    mark: dict[str, Any] = {"type": "ephemeral"}
    if caching.ttl != "5m":
        mark["ttl"] = caching.ttl
    messages: list[Any]
    if cache is None:
        messages = _plain_messages(model, context.messages, caching.messages, mark)
    else:
        messages = cache.items(_Codec(model, caching.messages, mark), context.messages)

    max_tokens = max_output_tokens(model, options, default_max_tokens) or default_max_tokens
    body: dict[str, Any] = {"model": model.model_id, "messages": messages, "stream": True}
    if context.system_prompt:
        system: dict[str, Any] = {"type": "text", "text": context.system_prompt}
        if caching.system:
            system["cache_control"] = mark
        body["system"] = [system]
    if context.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in context.tools
        ]
        if caching.tools:
            body["tools"][-1] = {**body["tools"][-1], "cache_control": mark}
    budget = thinking_budget(model)
    choice = tool_choice(options, context)
    if choice is not None:
        if choice == "none":
            body["tool_choice"] = {"type": "none"}
        elif choice == "auto" or budget is not None:
            # Extended thinking allows only auto and none; a forced call falls back to auto.
            body["tool_choice"] = {"type": "auto"}
        elif choice == "required":
            body["tool_choice"] = {"type": "any"}
        else:
            body["tool_choice"] = {"type": "tool", "name": choice}
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        # The budget counts against max_tokens, which must leave room for the answer.
        max_tokens = max(max_tokens, budget + 1024)
    elif options.temperature is not None:
        body["temperature"] = options.temperature  # not allowed together with thinking
    body["max_tokens"] = max_tokens
    if options.session_id:
        body["metadata"] = {"user_id": options.session_id}
    return body


# --------------------------------------------------------------------------- the cached path

_OPEN = {"user": b'{"role":"user","content":[', "assistant": b'{"role":"assistant","content":['}
_CLOSE = b"]}"


class _Codec(Codec):
    """Pieces: a message's content blocks (without brackets), with the index of the block a
    mark would go on. Units: runs of messages of one role. State: the last item's role."""

    __slots__ = ("breakpoints", "mark", "mark_key", "model")

    def __init__(self, model: ModelSpec, breakpoints: int, mark: dict[str, Any]) -> None:
        super().__init__(("anthropic", model.provider))
        self.model = model
        self.breakpoints = breakpoints
        self.mark = mark
        self.mark_key = ("mark", mark.get("ttl"))

    def _piece(self, message: Any, pieces: Pieces, out: Fold) -> tuple[str, bytes, int]:
        key = (self.key, id(message))
        piece: tuple[str, bytes, int] | None = pieces.get(key, message)
        if piece is None:
            role, content = _converted(message, self.model)
            piece = (role, encode(content)[1:-1], _last_markable(content))
            pieces.put(key, message, piece, len(piece[1]))
            out.scratch[id(message)] = content
        return piece

    def fold(
        self, messages: Sequence[Any], start: int, state: Any, pieces: Pieces, out: Fold
    ) -> None:
        role_now: str | None = state
        parts: list[bytes] = []
        first = start
        for i in range(start, len(messages)):
            role, data, _ = self._piece(messages[i], pieces, out)
            if not data:
                continue
            if role == role_now:
                parts.append(data)
                continue
            if parts:
                out.add(first, b"".join((_OPEN[role_now], b",".join(parts), _CLOSE)), role_now)  # type: ignore[index]
            out.restart, out.state = i, role_now
            role_now, parts, first = role, [data], i
        if parts:
            out.add(first, b"".join((_OPEN[role_now], b",".join(parts), _CLOSE)), role_now)  # type: ignore[index]

    def finish(
        self,
        items: Tail,
        starts: Sequence[int],
        tags: Sequence[Any],
        messages: Sequence[Any],
        pieces: Pieces,
        out: Fold,
    ) -> None:
        for at in message_breakpoints(tags, self.breakpoints):
            end = starts[at + 1] if at + 1 < len(starts) else len(messages)
            marked = self._marked(messages, starts[at], end, tags[at], pieces, out)
            if marked is not None:
                items[at] = marked

    def _marked(
        self, messages: Sequence[Any], first: int, end: int, role: str, pieces: Pieces, out: Fold
    ) -> msgspec.Raw | None:
        """The item of ``messages[first:end]`` with the mark on its last markable block."""
        parts: list[bytes] = []
        owner, where, message = -1, -1, None  # the piece to mark: its block, its message
        for i in range(first, end):
            _, data, markable = self._piece(messages[i], pieces, out)
            if data:
                parts.append(data)
                if markable >= 0:
                    owner = len(parts) - 1
                    where, message = markable, messages[i]
        if owner < 0:
            return None
        key = (self.key, id(message), self.mark_key)
        data = pieces.get(key, message)
        if data is None:
            content = out.scratch.get(id(message))
            if content is None:
                content = _converted(message, self.model)[1]
            content = list(content)
            content[where] = {**content[where], "cache_control": self.mark}
            data = encode(content)[1:-1]
            pieces.put(key, message, data, len(data))
        parts[owner] = data
        return msgspec.Raw(b"".join((_OPEN[role], b",".join(parts), _CLOSE)))
