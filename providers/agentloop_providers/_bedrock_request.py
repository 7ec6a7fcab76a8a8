"""The Bedrock Converse request body, built plainly or from a ``RequestCache``.

Converse messages alternate roles: the tool results of a turn ride in one user message, with
any text that follows them. Cache points (see ``caching``) follow the system prompt, the tools
(Claude only) and the messages ``message_breakpoints`` picks. With a cache, each history message
is converted and encoded once and a request joins the pieces (see ``_request_cache``); a cache
point at the end of a message is appended to its bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import (
    AssistantMessage,
    Image,
    StopReason,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

from ._convert import (
    assistant_blocks,
    max_output_tokens,
    thinking_budget,
    tool_choice,
    tool_result_parts,
)
from ._request_cache import Codec, Fold, Pieces, Tail, encode
from .caching import PromptCaching, caching_for, message_breakpoints

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentloop import ModelSpec, StreamOptions
    from agentloop.stream import LlmContext

    from ._request_cache import RequestCache

__all__ = ["bedrock_payload", "build_messages"]

_ANSWER_TOKENS = 4096
_CACHE_POINT = {"cachePoint": {"type": "default"}}
_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}


def _image(image: Image) -> dict[str, Any]:
    if image.data is None:
        return {"text": f"[image: {image.url}]"}
    fmt = _IMAGE_FORMATS.get(image.media_type, image.media_type.rpartition("/")[2])
    return {"image": {"format": fmt, "source": {"bytes": image.data}}}


def _assistant(message: AssistantMessage, model: ModelSpec) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in assistant_blocks(message, model, needs_signature=True):
        if isinstance(block, Text):
            out.append({"text": block.text})
        elif isinstance(block, Thinking):
            if block.redacted:
                out.append({"reasoningContent": {"redactedContent": block.data or ""}})
            else:
                text: dict[str, Any] = {"text": block.thinking}
                if block.signature:
                    text["signature"] = block.signature
                out.append({"reasoningContent": {"reasoningText": text}})
        elif isinstance(block, ToolCall):
            args = block.arguments if isinstance(block.arguments, dict) else {}
            out.append({"toolUse": {"toolUseId": block.id, "name": block.name, "input": args}})
    return out


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    text, images = tool_result_parts(message)
    content: list[dict[str, Any]] = []
    if text or not images:
        content.append({"text": text})
    content.extend(_image(image) for image in images)
    return {
        "toolResult": {
            "toolUseId": message.tool_call_id,
            "content": content,
            "status": "error" if message.is_error else "success",
        }
    }


def _converted(message: Any, model: ModelSpec) -> tuple[str, list[dict[str, Any]]] | None:
    """A message's role and content blocks (``None``: it is not sent)."""
    if isinstance(message, UserMessage):
        parts: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, Text):
                if block.text:
                    parts.append({"text": block.text})
            elif isinstance(block, Image):
                parts.append(_image(block))
        return "user", parts
    if isinstance(message, AssistantMessage):
        if message.stop_reason is StopReason.ERROR and not message.content:
            return None
        return "assistant", _assistant(message, model)
    if isinstance(message, ToolResultMessage):
        return "user", [_tool_result(message)]
    return None


def build_messages(context: LlmContext, model: ModelSpec) -> list[dict[str, Any]]:
    """Converse messages for ``context``: tool results ride in user turns; roles alternate."""
    out: list[dict[str, Any]] = []
    for message in context.messages:
        converted = _converted(message, model)
        if converted is None or not converted[1]:
            continue
        role, content = converted
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(content)
        else:
            out.append({"role": role, "content": content})
    return out


def _has_tool_blocks(content: list[dict[str, Any]]) -> bool:
    """Whether Converse content holds tool use or results (which require a ``toolConfig``)."""
    return any("toolUse" in block or "toolResult" in block for block in content)


def bedrock_caching(
    model: ModelSpec, options: StreamOptions, prompt_caching: bool | PromptCaching | None
) -> PromptCaching:
    """The cache points of a call: by default on for Claude and Nova, which support them.

    Raises:
        TypeError: ``options.extra["prompt_caching"]`` is neither a bool nor a ``PromptCaching``.
    """
    supported = "anthropic.claude" in model.model_id or "amazon.nova" in model.model_id
    return caching_for(supported if prompt_caching is None else prompt_caching, options.extra)


def bedrock_payload(
    model: ModelSpec,
    context: LlmContext,
    options: StreamOptions,
    *,
    prompt_caching: bool | PromptCaching | None = None,
    cache: RequestCache | None = None,
) -> dict[str, Any]:
    """The ConverseStream request body for one call.

    With ``cache``, the history comes as ``msgspec.Raw`` items (the same bytes once encoded).

    Raises:
        ValueError: ``options.tool_choice`` does not fit the tools.
        TypeError: ``options.extra["prompt_caching"]`` is neither a bool nor a ``PromptCaching``.
    """
    codec: _Codec | None = None
    caching: PromptCaching | None = None
    if cache is None:
        messages: list[Any] = build_messages(context, model)
    else:
        caching = bedrock_caching(model, options, prompt_caching)
        codec = _Codec(model, caching.messages)
        messages = cache.items(codec, context.messages)
    body: dict[str, Any] = {"messages": messages}
    if context.system_prompt:
        body["system"] = [{"text": context.system_prompt}]
    config: dict[str, Any] = {}
    limit = max_output_tokens(model, options, None)
    budget = thinking_budget(model) if "anthropic." in model.model_id else None
    if budget is not None and (limit is None or limit <= budget):
        limit = budget + _ANSWER_TOKENS  # Claude needs room to answer after thinking
    if limit is not None:
        config["maxTokens"] = limit
    if options.temperature is not None and budget is None:
        config["temperature"] = options.temperature
    if config:
        body["inferenceConfig"] = config
    choice = tool_choice(options, context)
    offer = bool(context.tools)
    if offer and choice == "none":
        if codec is None:
            offer = any(_has_tool_blocks(m["content"]) for m in messages)
        else:
            offer = codec.tool_blocks
    if offer:
        body["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": t.name,
                        "description": t.description,
                        "inputSchema": {"json": t.parameters},
                    }
                }
                for t in context.tools
            ]
        }
        # Converse has no "none": without tool blocks in the history the tools are left
        # out above; with them the tools must stay, and the model is not stopped from
        # calling one. Claude's extended thinking allows no forced call either.
        if choice == "required" and budget is None:
            body["toolConfig"]["toolChoice"] = {"any": {}}
        elif choice not in (None, "auto", "none", "required") and budget is None:
            body["toolConfig"]["toolChoice"] = {"tool": {"name": choice}}
        elif choice is not None:
            body["toolConfig"]["toolChoice"] = {"auto": {}}
    if budget is not None:
        body["additionalModelRequestFields"] = {
            "thinking": {"type": "enabled", "budget_tokens": budget}
        }
    if caching is None:
        caching = bedrock_caching(model, options, prompt_caching)
    if caching.system and "system" in body:
        body["system"].append(dict(_CACHE_POINT))
    if caching.tools and "anthropic.claude" in model.model_id and "toolConfig" in body:
        body["toolConfig"]["tools"].append(dict(_CACHE_POINT))
    if codec is None:  # the cached items have their cache points already
        for at in message_breakpoints([m["role"] for m in messages], caching.messages):
            messages[at]["content"].append(dict(_CACHE_POINT))
    extra = options.extra.get("bedrock")
    if isinstance(extra, dict):
        body.update(extra)
    return body


# --------------------------------------------------------------------------- the cached path

_OPEN = {"user": b'{"role":"user","content":[', "assistant": b'{"role":"assistant","content":['}
_CLOSE = b"]}"
_MARKED_CLOSE = b"," + encode(_CACHE_POINT) + _CLOSE


class _Codec(Codec):
    """Pieces: a message's content blocks (without brackets) and whether it holds tool blocks.
    Units: runs of messages of one role. State: the last item's role, and whether any item so
    far holds tool blocks."""

    __slots__ = ("breakpoints", "model", "tool_blocks")

    def __init__(self, model: ModelSpec, breakpoints: int) -> None:
        super().__init__(("bedrock", model.provider))
        self.model = model
        self.breakpoints = breakpoints
        self.tool_blocks = False

    def start(self, messages: Sequence[Any]) -> Any:
        return (None, False)

    def fold(
        self, messages: Sequence[Any], start: int, state: Any, pieces: Pieces, out: Fold
    ) -> None:
        role_now, seen = state
        parts: list[bytes] = []
        first = start
        for i in range(start, len(messages)):
            message = messages[i]
            key = (self.key, id(message))
            piece: tuple[str, bytes, bool] | None = pieces.get(key, message)
            if piece is None:
                converted = _converted(message, self.model)
                if converted is None:
                    piece = ("", b"", False)
                else:
                    role, content = converted
                    piece = (role, encode(content)[1:-1], _has_tool_blocks(content))
                pieces.put(key, message, piece, len(piece[1]))
            role, data, tools = piece
            if not data:
                continue
            if role == role_now:
                parts.append(data)
                seen = seen or tools
                continue
            if parts:
                out.add(first, b"".join((_OPEN[role_now], b",".join(parts), _CLOSE)), role_now)
            out.restart, out.state = i, (role_now, seen)
            role_now, parts, first, seen = role, [data], i, seen or tools
        if parts:
            out.add(first, b"".join((_OPEN[role_now], b",".join(parts), _CLOSE)), role_now)
        self.tool_blocks = seen

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
            items[at] = msgspec.Raw(b"".join((memoryview(items[at])[:-2], _MARKED_CLOSE)))
