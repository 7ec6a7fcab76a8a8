"""Anthropic Messages API (``POST /v1/messages``, streamed as SSE).

Text, extended thinking (with signatures, and redacted thinking replayed verbatim), tool use
with streamed JSON input, usage with cache reads and writes, and prompt-caching breakpoints on
the tools, the system prompt and the history (see ``caching``). ``tool_choice`` maps to
``auto``/``none``/``any``/``tool``; with extended thinking, which allows no forced call, a
required or named tool falls back to ``auto``. Server-tool blocks (web search, tool search, ...) and
any other block type this library does not model arrive as ``Extension`` blocks and are sent
back unchanged on the next request. The request body is built in ``_anthropic_request``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from agentloop import ErrorKind, StopReason
from agentloop.stream import (
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

from ._anthropic_request import DEFAULT_MAX_TOKENS, anthropic_payload
from ._classify import classify_payload
from ._convert import usage
from ._http import HttpProvider, ProtocolError
from ._secrets import excerpt

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentloop import ModelSpec, StreamOptions, Usage
    from agentloop.stream import AssistantMessageEvent, LlmContext

    from ._sse import ServerSentEvent
    from .caching import PromptCaching

__all__ = ["AnthropicProvider", "AnthropicStreamParser", "anthropic_payload"]

API_VERSION = "2023-06-01"

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "pause_turn": StopReason.STOP,
    "max_tokens": StopReason.LENGTH,
    "model_context_window_exceeded": StopReason.LENGTH,
    "tool_use": StopReason.TOOL_USE,
}
_decode = msgspec.json.decode

# --------------------------------------------------------------------------- stream


class _Server:
    """An unmodelled block being streamed: its start object and any streamed input."""

    __slots__ = ("data", "parts")

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.parts: list[str] = []


class _DeltaBody(msgspec.Struct):
    type: str
    text: str | None = None


class _BlockDelta(msgspec.Struct):
    type: str
    index: int
    delta: _DeltaBody


_decode_delta = msgspec.json.Decoder(_BlockDelta).decode


class AnthropicStreamParser:
    """Translates Messages API SSE events into ``AssistantMessageEvent`` values."""

    __slots__ = ("_blocks", "_provider", "_signatures", "_stop", "_usage")

    def __init__(self, provider: str = "anthropic") -> None:
        self._provider = provider
        self._blocks: dict[int, str | _Server] = {}  # open blocks: index -> kind
        self._signatures: dict[int, str] = {}
        self._stop = StopReason.STOP
        self._usage: dict[str, int] = {}

    def _usage_now(self) -> Usage | None:
        u = self._usage
        if not u:
            return None  # the stream carried no usage at all
        extra = {
            "thinking_tokens": u.get("thinking_tokens", 0),
            "web_search_requests": u.get("web_search_requests", 0),
            "cache_write_1h": u.get("cache_write_1h", 0),  # of cache_write, at the 1h price
        }
        return usage(
            input=u.get("input_tokens", 0),
            output=u.get("output_tokens", 0),
            cache_read=u.get("cache_read_input_tokens", 0),
            cache_write=u.get("cache_creation_input_tokens", 0),
            **extra,
        )

    def _take_usage(self, raw: Mapping[str, Any] | None) -> None:
        if not raw:
            return
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = raw.get(key)
            if isinstance(value, int):
                self._usage[key] = value  # message_delta counts are cumulative
        creation = raw.get("cache_creation")
        if isinstance(creation, dict) and isinstance(
            creation.get("ephemeral_1h_input_tokens"), int
        ):
            self._usage["cache_write_1h"] = creation["ephemeral_1h_input_tokens"]
        details = raw.get("output_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("thinking_tokens"), int):
            self._usage["thinking_tokens"] = details["thinking_tokens"]
        server = raw.get("server_tool_use")
        if isinstance(server, dict) and isinstance(server.get("web_search_requests"), int):
            self._usage["web_search_requests"] = server["web_search_requests"]

    def feed(self, sse: ServerSentEvent) -> list[AssistantMessageEvent]:
        """Translate one frame (see ``StreamParser.feed``).

        Raises:
            ProtocolError: the frame is not valid for the protocol.
            msgspec.DecodeError: the frame is not valid JSON.
        """
        data = sse.data
        if not data:
            return []
        if sse.event == "content_block_delta":
            fast = self.feed_data(sse.event, data)
            if fast is not None:
                return fast
        event = _decode(data)
        if not isinstance(event, dict):
            raise ProtocolError(f"expected a JSON object, got {excerpt(data, 100)!r}")
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            return self._start(event)
        if kind == "content_block_stop":
            return self._stop_block(event)
        if kind == "message_start":
            message = event.get("message") or {}
            self._take_usage(message.get("usage"))
            return [StreamStart(model_id=message.get("model"))]
        if kind == "message_delta":
            reason = (event.get("delta") or {}).get("stop_reason")
            self._take_usage(event.get("usage"))
            if reason == "refusal":
                return [
                    ErrorEvent(
                        kind=ErrorKind.CONTENT_FILTERED,
                        message=f"{self._provider}: the model refused (stop_reason refusal)",
                        usage=self._usage_now(),
                    )
                ]
            if reason is not None:
                self._stop = _STOP_REASONS.get(reason, StopReason.STOP)
            return []
        if kind == "message_stop":
            return [Done(stop_reason=self._stop, usage=self._usage_now())]
        if kind == "error" or sse.event == "error":
            return [classify_payload(self._provider, event, usage=self._usage_now())]
        return []  # ping, and event types added after this was written

    def feed_data(self, event: str, data: bytes | str) -> list[AssistantMessageEvent] | None:
        """The events of a text delta, nearly every event of an answer, from its raw ``data``
        (typed structs, no lookups); ``None`` for anything else, which ``feed`` handles. (The
        SSE decoder offers it each one-line event before making a ``ServerSentEvent``.)"""
        if event != "content_block_delta" or type(self).feed is not AnthropicStreamParser.feed:
            return None  # (a subclass that changes ``feed`` gets every frame there)
        try:
            fast = _decode_delta(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None  # of another shape: the general path says how
        delta = fast.delta
        if fast.type != "content_block_delta" or delta.type != "text_delta" or delta.text is None:
            return None
        return [TextDelta(index=fast.index, delta=delta.text)]

    def end(self) -> list[AssistantMessageEvent]:
        """See ``StreamParser.end``."""
        return []

    def _start(self, event: dict[str, Any]) -> list[AssistantMessageEvent]:
        index = event["index"]
        block = event.get("content_block") or {}
        btype = block.get("type")
        if btype == "text":
            self._blocks[index] = "text"
            out: list[AssistantMessageEvent] = [TextStart(index=index)]
            if block.get("text"):
                out.append(TextDelta(index=index, delta=block["text"]))
            return out
        if btype == "thinking":
            self._blocks[index] = "thinking"
            out = [ThinkingStart(index=index)]
            if block.get("thinking"):
                out.append(ThinkingDelta(index=index, delta=block["thinking"]))
            if block.get("signature"):
                self._signatures[index] = block["signature"]
            return out
        if btype == "redacted_thinking":
            self._blocks[index] = "thinking"
            return [ThinkingStart(index=index, redacted=True, data=block.get("data", ""))]
        if btype == "tool_use":
            self._blocks[index] = "tool"
            out = [ToolCallStart(index=index, id=block["id"], name=block["name"])]
            if block.get("input"):
                out.append(
                    ToolCallDelta(index=index, delta=msgspec.json.encode(block["input"]).decode())
                )
            return out
        self._blocks[index] = _Server(block)
        return []

    def _delta(self, event: dict[str, Any]) -> list[AssistantMessageEvent]:
        index = event["index"]
        delta = event.get("delta") or {}
        dtype = delta.get("type")
        if dtype == "text_delta":
            return [TextDelta(index=index, delta=delta["text"])]
        if dtype == "input_json_delta":
            part = delta.get("partial_json") or ""
            open_block = self._blocks.get(index)
            if isinstance(open_block, _Server):
                open_block.parts.append(part)
                return []
            return [ToolCallDelta(index=index, delta=part)] if part else []
        if dtype == "thinking_delta":
            text = delta.get("thinking") or ""
            return [ThinkingDelta(index=index, delta=text)] if text else []
        if dtype == "signature_delta":
            self._signatures[index] = self._signatures.get(index, "") + delta["signature"]
            return []
        return []  # citations_delta and future delta types: nothing this library models

    def _stop_block(self, event: dict[str, Any]) -> list[AssistantMessageEvent]:
        index = event["index"]
        kind = self._blocks.pop(index, None)
        if kind == "text":
            return [TextEnd(index=index)]
        if kind == "thinking":
            return [ThinkingEnd(index=index, signature=self._signatures.pop(index, None))]
        if kind == "tool":
            return [ToolCallEnd(index=index)]
        if isinstance(kind, _Server):
            data = kind.data
            raw = "".join(kind.parts)
            if raw.strip():
                data = {**data, "input": _decode(raw)}
            return [_extension(index, data)]
        raise ProtocolError(f"content_block_stop for block {index}, which was never started")


def _extension(index: int, data: dict[str, Any]) -> AssistantMessageEvent:
    return ExtensionBlock(index=index, type_name=str(data.get("type", "unknown")), data=data)


class AnthropicProvider(HttpProvider):
    """``StreamFn`` for the Anthropic Messages API.

    Args:
        prompt_caching: cache breakpoints: ``True`` (tools, system prompt, the last two
            stable points of the history), ``False``, or a ``PromptCaching`` (see
            ``caching``); ``StreamOptions.extra["prompt_caching"]`` overrides it per call.
        beta: values for the ``anthropic-beta`` header.
        default_max_tokens: ``max_tokens`` when neither the options nor the model set one.
        **kwargs: see ``HttpProvider`` (``base_url``, ``api_key``, ``client``, timeouts).
    """

    provider_name: ClassVar[str] = "anthropic"
    env_var: ClassVar[str | None] = "ANTHROPIC_API_KEY"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"

    def __init__(
        self,
        *,
        prompt_caching: bool | PromptCaching = True,
        beta: list[str] | None = None,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.prompt_caching = prompt_caching
        self.beta = list(beta or [])
        self.default_max_tokens = default_max_tokens

    def endpoint(self, model: ModelSpec, options: StreamOptions) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(
        self, api_key: str | None, model: ModelSpec, options: StreamOptions
    ) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        if self.beta:
            headers["anthropic-beta"] = ",".join(self.beta)
        return headers

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        return anthropic_payload(
            model,
            context,
            options,
            prompt_caching=self.prompt_caching,
            default_max_tokens=self.default_max_tokens,
            cache=self.request_cache,
        )

    def new_parser(self, model: ModelSpec, options: StreamOptions) -> AnthropicStreamParser:
        return AnthropicStreamParser(self.provider_name)
