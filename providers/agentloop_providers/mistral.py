"""Mistral chat completions: OpenAI-compatible, with three differences handled here.

- Reasoning models (Magistral) stream ``delta.content`` as an *array* of parts,
  ``{"type": "thinking", "thinking": [{"type": "text", ...}]}`` and ``{"type": "text", ...}``,
  instead of a string; they become thinking and text blocks.
- Tool calls carry no ``index``; each call arrives whole with its id.
- Tool call ids must be exactly nine letters and digits. Ids made by other providers
  (``call_...``, ``toolu_...``) are mapped, deterministically, to nine-character ids when the
  history is replayed, in the assistant's calls and in the matching tool results alike.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from agentloop import AssistantMessage, StopReason, ToolCall, ToolResultMessage

from ._openai_chat_request import ChatCodec, chat_body
from ._request_cache import STALE
from ._sse import ServerSentEvent
from .openai_chat import (
    OpenAIChatCompat,
    OpenAIChatProvider,
    OpenAIChatStreamParser,
    openai_chat_payload,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentloop import Image, ModelSpec, StreamOptions
    from agentloop.stream import AssistantMessageEvent, LlmContext

    from ._request_cache import RequestCache

__all__ = ["MistralParser", "MistralProvider", "mistral_payload", "mistral_tool_id"]

_decode = msgspec.json.decode
_encode = msgspec.json.Encoder().encode
_ID_RE = re.compile(r"[A-Za-z0-9]{9}")
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ABORTED = StopReason.ABORTED
COMPAT = OpenAIChatCompat(max_tokens_field="max_tokens", stream_usage=False, reasoning_effort=False)


def mistral_tool_id(call_id: str) -> str:
    """``call_id`` if it is already a valid Mistral id, else a stable nine-character one."""
    if _ID_RE.fullmatch(call_id):
        return call_id
    number = int.from_bytes(hashlib.sha256(call_id.encode("utf-8")).digest()[:8], "big")
    out = []
    for _ in range(9):
        number, digit = divmod(number, 62)
        out.append(_ALPHABET[digit])
    return "".join(out)


def _text_of(parts: Any) -> str:
    if isinstance(parts, str):
        return parts
    if isinstance(parts, list):
        return "".join(_text_of(p) for p in parts)
    if isinstance(parts, dict):
        return str(parts.get("text") or "")
    return ""


def _flatten(delta: dict[str, Any]) -> None:
    """Turn an array ``content`` into ``reasoning_content`` and ``content`` strings."""
    content = delta.get("content")
    if not isinstance(content, list):
        return
    thinking: list[str] = []
    text: list[str] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "thinking":
            thinking.append(_text_of(part.get("thinking")))
        elif part.get("type") == "text":
            text.append(str(part.get("text") or ""))
    delta["content"] = "".join(text) or None
    if thinking:
        delta["reasoning_content"] = "".join(thinking)


class MistralParser(OpenAIChatStreamParser):
    """The chat completions parser, fed content arrays flattened to strings."""

    def __init__(self) -> None:
        super().__init__("mistral")

    def feed(self, sse: ServerSentEvent) -> list[AssistantMessageEvent]:
        data = sse.data
        if '"content":[' in data or '"content": [' in data:
            chunk = _decode(data)
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta")
                if isinstance(delta, dict):
                    _flatten(delta)
            sse = ServerSentEvent(sse.event, _encode(chunk).decode(), sse.id, sse.retry)
        return super().feed(sse)


def mistral_payload(
    model: ModelSpec,
    context: LlmContext,
    options: StreamOptions,
    *,
    cache: RequestCache | None = None,
) -> dict[str, Any]:
    """The chat completions body, with tool ids Mistral accepts and named tool results.

    With ``cache``, the history comes as ``msgspec.Raw`` items (the same bytes once encoded).

    Raises:
        ValueError: ``options.tool_choice`` does not fit the tools offered.
    """
    if cache is not None:
        items = cache.items(_Codec(model), context.messages)
        system = [{"role": COMPAT.system_role, "content": context.system_prompt}]
        messages = system + items if context.system_prompt else items
        body = chat_body(model, context, options, COMPAT, messages)
    else:
        body = openai_chat_payload(model, context, options, COMPAT)
        names: dict[str, str] = {
            m.tool_call_id: m.tool_name
            for m in context.messages
            if type(m) is ToolResultMessage and m.tool_name
        }
        for message in body["messages"]:
            for call in message.get("tool_calls") or ():
                names.setdefault(call["id"], call["function"]["name"])
                call["id"] = mistral_tool_id(call["id"])
        for message in body["messages"]:
            if message["role"] == "tool":
                original = message["tool_call_id"]
                message["tool_call_id"] = mistral_tool_id(original)
                if names.get(original):
                    message["name"] = names[original]
    extra = options.extra.get("mistral")
    if isinstance(extra, dict):
        body.update(extra)
    return body


class _Names:
    """Who each tool call id names: the last tool result carrying a name, else the first call
    sent with that id. It depends on the whole history (a later result can rename an earlier
    one), so a transcript records the names its items used, and a new message that changes
    one of them makes the transcript stale."""

    __slots__ = ("calls", "results", "used")

    def __init__(self) -> None:
        self.results: dict[str, str] = {}
        self.calls: dict[str, str] = {}
        self.used: dict[str, str | None] = {}

    def name(self, call_id: str) -> str | None:
        found = self.results.get(call_id)
        return found if found is not None else self.calls.get(call_id)

    def learn(self, messages: Sequence[Any], start: int) -> list[str]:
        """Take in ``messages[start:]``; the ids they name."""
        touched: list[str] = []
        for i in range(start, len(messages)):
            message = messages[i]
            if type(message) is ToolResultMessage:
                if message.tool_name:
                    self.results[message.tool_call_id] = message.tool_name
                    touched.append(message.tool_call_id)
            elif type(message) is AssistantMessage and message.stop_reason is not _ABORTED:
                for block in message.content:
                    if type(block) is ToolCall:
                        self.calls.setdefault(block.id, block.name)
                        touched.append(block.id)
        return touched


class _Codec(ChatCodec):
    """The chat codec with Mistral's ids, and tool results named (see ``_Names``)."""

    __slots__ = ()

    def __init__(self, model: ModelSpec) -> None:
        super().__init__(model, COMPAT, ("mistral", model.provider))

    def start(self, messages: Sequence[Any]) -> Any:
        names = _Names()
        names.learn(messages, 0)
        return names

    def resume(self, state: Any, messages: Sequence[Any], known: int) -> Any:
        for call_id in state.learn(messages, known):
            if call_id in state.used and state.used[call_id] != state.name(call_id):
                return STALE
        return state

    def assistant(self, message: AssistantMessage, state: Any) -> dict[str, Any] | None:
        out = super().assistant(message, state)
        for call in (out or {}).get("tool_calls") or ():
            call["id"] = mistral_tool_id(call["id"])
        return out

    def tool(self, message: ToolResultMessage, state: Any) -> tuple[dict[str, Any], list[Image]]:
        entry, images = super().tool(message, state)
        original = entry["tool_call_id"]
        entry["tool_call_id"] = mistral_tool_id(original)
        name = state.name(original)
        if name:
            entry["name"] = name
        return entry, images

    def tool_key(self, message: ToolResultMessage, state: Any) -> tuple[Any, ...]:
        name = state.name(message.tool_call_id)
        state.used[message.tool_call_id] = name
        return (self.key, id(message), name)


class MistralProvider(OpenAIChatProvider):
    """``StreamFn`` for Mistral's chat completions API (``MISTRAL_API_KEY``)."""

    provider_name: ClassVar[str] = "mistral"
    env_var: ClassVar[str | None] = "MISTRAL_API_KEY"
    default_base_url: ClassVar[str] = "https://api.mistral.ai/v1"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("compat", COMPAT)
        kwargs.setdefault("require_api_key", True)
        super().__init__(**kwargs)

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        return mistral_payload(model, context, options, cache=self.request_cache)

    def new_parser(self, model: ModelSpec, options: StreamOptions) -> MistralParser:
        return MistralParser()
