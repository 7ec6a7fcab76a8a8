"""The Gemini ``generateContent`` request body, built plainly or from a ``RequestCache``.

Consecutive messages of one role (``user``, ``model``) share one content. A function response
names its function and, for calls Vertex numbered, its id: both come from the latest earlier
call with the same id, so the fold carries those names. With a cache, each history message is
converted and encoded once (a tool result once per name and id it resolves to) and a request
joins the pieces (see ``_request_cache``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agentloop import (
    AssistantMessage,
    Image,
    Text,
    Thinking,
    ThinkingLevel,
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
from ._request_cache import Codec, Fold, Pieces, encode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentloop import ModelSpec, StreamOptions
    from agentloop.stream import LlmContext

    from ._request_cache import RequestCache

__all__ = ["SKIP_SIGNATURE", "gemini_payload"]

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Gemini's documented placeholder thought signature, sent with a Gemini 3 function call whose
signature was never seen (a history made with another provider or by hand)."""


def _image(image: Image) -> dict[str, Any]:
    if image.data is not None:
        return {"inlineData": {"mimeType": image.media_type, "data": image.data}}
    return {"fileData": {"mimeType": image.media_type, "fileUri": image.url or ""}}


def _user_parts(message: UserMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if type(block) is Text:
            parts.append({"text": block.text})
        elif type(block) is Image:
            parts.append(_image(block))
    return parts


def _model_parts(message: AssistantMessage, model: ModelSpec) -> list[dict[str, Any]]:
    native = message.provider == model.provider
    gemini3 = "gemini-3" in model.model_id
    parts: list[dict[str, Any]] = []
    for block in assistant_blocks(message, model, needs_signature=True):
        if type(block) is Text:
            parts.append({"text": block.text})
        elif type(block) is Thinking:
            if not block.redacted:
                part: dict[str, Any] = {"text": block.thinking, "thought": True}
                if block.signature:
                    part["thoughtSignature"] = block.signature
                parts.append(part)
        elif type(block) is ToolCall:
            call: dict[str, Any] = {"name": block.name, "args": block.arguments or {}}
            gemini_id = (block.meta or {}).get("gemini_id")
            if gemini_id and native:
                call["id"] = gemini_id
            part = {"functionCall": call}
            if block.signature and native:
                part["thoughtSignature"] = block.signature
            elif gemini3:
                part["thoughtSignature"] = SKIP_SIGNATURE
            parts.append(part)
    return parts


def _function_response(
    message: ToolResultMessage, names: dict[str, str], ids: dict[str, str]
) -> list[dict[str, Any]]:
    text, images = tool_result_parts(message)
    name = message.tool_name or names.get(message.tool_call_id, "")
    result = {"error": text} if message.is_error else {"output": text}
    response: dict[str, Any] = {"name": name, "response": result}
    if message.tool_call_id in ids:
        response["id"] = ids[message.tool_call_id]
    parts: list[dict[str, Any]] = [{"functionResponse": response}]
    parts.extend(_image(image) for image in images)
    return parts


def _contents(model: ModelSpec, messages: Sequence[Any]) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # our call id -> function name
    ids: dict[str, str] = {}  # our call id -> the id Gemini gave the call (Vertex does)

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})

    for message in messages:
        if type(message) is UserMessage:
            add("user", _user_parts(message))
        elif type(message) is AssistantMessage:
            for call in message.tool_calls:
                names[call.id] = call.name
                gemini_id = (call.meta or {}).get("gemini_id")
                if gemini_id and message.provider == model.provider:
                    ids[call.id] = gemini_id
            add("model", _model_parts(message, model))
        elif type(message) is ToolResultMessage:
            add("user", _function_response(message, names, ids))
    return contents


def gemini_payload(
    model: ModelSpec,
    context: LlmContext,
    options: StreamOptions,
    *,
    cache: RequestCache | None = None,
) -> dict[str, Any]:
    """The ``generateContent`` request body for one call.

    With ``cache``, the history comes as ``msgspec.Raw`` items (the same bytes once encoded).

    Raises:
        ValueError: ``options.tool_choice`` does not fit the tools.
    """
    contents: list[Any]
    if cache is None:
        contents = _contents(model, context.messages)
    else:
        contents = cache.items(_Codec(model), context.messages)
    body: dict[str, Any] = {"contents": contents}
    if context.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": context.system_prompt}]}
    if context.tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": t.name,
                        "description": t.description,
                        "parametersJsonSchema": t.parameters,
                    }
                    for t in context.tools
                ]
            }
        ]
    choice = tool_choice(options, context)
    if choice is not None:
        modes = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
        calling: dict[str, Any] = {"mode": modes.get(choice, "ANY")}
        if choice not in modes:
            calling["allowedFunctionNames"] = [choice]
        body["toolConfig"] = {"functionCallingConfig": calling}
    config: dict[str, Any] = {}
    if options.temperature is not None:
        config["temperature"] = options.temperature
    limit = max_output_tokens(model, options, None)
    if limit is not None:
        config["maxOutputTokens"] = limit
    if model.thinking_level is not ThinkingLevel.OFF:
        thinking: dict[str, Any] = {"includeThoughts": True}
        if "gemini-3" in model.model_id:
            low = model.thinking_level in (ThinkingLevel.MINIMAL, ThinkingLevel.LOW)
            thinking["thinkingLevel"] = "low" if low else "high"
        else:
            thinking["thinkingBudget"] = thinking_budget(model)
        config["thinkingConfig"] = thinking
    if config:
        body["generationConfig"] = config
    extra = options.extra.get("gemini")
    if isinstance(extra, dict):
        body.update(extra)
    return body


# --------------------------------------------------------------------------- the cached path

_OPEN = {"user": b'{"role":"user","parts":[', "model": b'{"role":"model","parts":['}
_CLOSE = b"]}"
_ABSENT: Final = object()


class _Codec(Codec):
    """Pieces: a message's parts (without brackets); a tool result's per name and id it
    resolves to. Units: runs of messages of one role. State: the last item's role, and the
    names and ids of the calls made so far (the last unit's own are undone at the end, so the
    state is the one before it)."""

    __slots__ = ("model",)

    def __init__(self, model: ModelSpec) -> None:
        super().__init__(("gemini", model.provider, "gemini-3" in model.model_id))
        self.model = model

    def start(self, messages: Sequence[Any]) -> Any:
        return (None, {}, {})

    def fold(
        self, messages: Sequence[Any], start: int, state: Any, pieces: Pieces, out: Fold
    ) -> None:
        role_now, names, ids = state
        model = self.model
        before = role_now  # the role of the item before the last unit
        parts: list[bytes] = []
        first = start
        undo: list[tuple[dict[str, str], str, Any]] = []
        unit_undo = 0  # where the last unit's assignments begin in ``undo``
        for i in range(start, len(messages)):
            message = messages[i]
            cls = type(message)
            mine = len(undo)
            key: tuple[Any, ...]
            if cls is UserMessage:
                role, key = "user", (self.key, id(message))
            elif cls is AssistantMessage:
                for call in message.tool_calls:
                    undo.append((names, call.id, names.get(call.id, _ABSENT)))
                    names[call.id] = call.name
                    gemini_id = (call.meta or {}).get("gemini_id")
                    if gemini_id and message.provider == model.provider:
                        undo.append((ids, call.id, ids.get(call.id, _ABSENT)))
                        ids[call.id] = gemini_id
                role, key = "model", (self.key, id(message))
            elif cls is ToolResultMessage:
                name = message.tool_name or names.get(message.tool_call_id, "")
                key = (self.key, id(message), name, ids.get(message.tool_call_id))
                role = "user"
            else:
                continue
            data: bytes | None = pieces.get(key, message)
            if data is None:
                if cls is UserMessage:
                    converted = _user_parts(message)
                elif cls is AssistantMessage:
                    converted = _model_parts(message, model)
                else:
                    converted = _function_response(message, names, ids)
                data = encode(converted)[1:-1]
                pieces.put(key, message, data, len(data))
            if not data:
                continue
            if role == role_now:
                parts.append(data)
                continue
            if parts:
                out.add(first, b"".join((_OPEN[role_now], b",".join(parts), _CLOSE)), role_now)
            out.restart, before, unit_undo = i, role_now, mine
            role_now, parts, first = role, [data], i
        if parts:
            out.add(first, b"".join((_OPEN[role_now], b",".join(parts), _CLOSE)), role_now)
        for table, call_id, old in reversed(undo[unit_undo:]):
            if old is _ABSENT:
                del table[call_id]
            else:
                table[call_id] = old
        out.state = (before, names, ids)
