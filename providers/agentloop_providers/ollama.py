"""Ollama's native chat API (``POST /api/chat``, streamed as NDJSON).

Text, thinking (``think``), tool calls (which Ollama sends whole, arguments as an object) and
``done_reason``. Ollama needs no API key locally; ``OLLAMA_API_KEY`` is sent as a bearer token
when set (ollama.com's hosted models).
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from agentloop import (
    AssistantMessage,
    Image,
    StopReason,
    Text,
    Thinking,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentloop.stream import (
    Done,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallEnd,
    ToolCallStart,
)

from ._classify import classify_payload
from ._context_window import learning_window
from ._convert import (
    BlockIndexer,
    assistant_blocks,
    max_output_tokens,
    tool_choice,
    tool_result_parts,
    usage,
)
from ._http import HttpProvider, ProtocolError
from ._ndjson import NDJSONDecoder
from ._request_cache import Codec, Fold, Pieces, encode
from ._secrets import excerpt

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from agentloop import ModelSpec, StreamOptions
    from agentloop.stream import AssistantMessageEvent, LlmContext

    from ._request_cache import RequestCache

__all__ = ["OllamaProvider", "OllamaStreamParser", "ollama_payload"]

_DONE: dict[str, StopReason] = {"stop": StopReason.STOP, "length": StopReason.LENGTH}


# --------------------------------------------------------------------------- request


def _images(blocks: list[Any]) -> tuple[str, list[str]]:
    texts: list[str] = []
    images: list[str] = []
    for block in blocks:
        if type(block) is Text:
            texts.append(block.text)
        elif type(block) is Image:
            if block.data:
                images.append(block.data)
            elif block.url:  # Ollama takes base64 only; say where the image was
                texts.append(f"[image: {block.url}]")
    return "".join(texts), images


def _assistant(message: AssistantMessage, model: ModelSpec) -> dict[str, Any] | None:
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in assistant_blocks(message, model):
        if type(block) is Text:
            texts.append(block.text)
        elif type(block) is ToolCall:
            arguments = block.arguments if isinstance(block.arguments, dict) else {}
            calls.append({"function": {"name": block.name, "arguments": arguments}})
        elif type(block) is Thinking and not block.redacted:
            thinking.append(block.thinking)
    if not texts and not calls and not thinking:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if thinking:
        out["thinking"] = "".join(thinking)
    if calls:
        out["tool_calls"] = calls
    return out


def _message(message: Any, model: ModelSpec) -> dict[str, Any] | None:
    """A message as ``/api/chat`` takes it (``None``: not sent)."""
    if type(message) is UserMessage:
        text, images = _images(message.content)
        entry: dict[str, Any] = {"role": "user", "content": text}
        if images:
            entry["images"] = images
        return entry
    if type(message) is AssistantMessage:
        return _assistant(message, model)
    if type(message) is ToolResultMessage:
        text, image_blocks = tool_result_parts(message)
        if message.is_error:
            text = f"Error: {text}" if text else "Error"
        entry = {"role": "tool", "content": text, "tool_name": message.tool_name}
        images = [i.data for i in image_blocks if i.data]
        if images:
            entry["images"] = images
        return entry
    return None


class _Codec(Codec):
    """Pieces and units: a message's API message, none merged; no state."""

    __slots__ = ("model",)

    def __init__(self, model: ModelSpec) -> None:
        super().__init__(("ollama", model.provider))
        self.model = model

    def fold(
        self, messages: Sequence[Any], start: int, state: Any, pieces: Pieces, out: Fold
    ) -> None:
        for i in range(start, len(messages)):
            message = messages[i]
            key = (self.key, id(message))
            data: bytes | None = pieces.get(key, message)
            if data is None:
                converted = _message(message, self.model)
                data = b"" if converted is None else encode(converted)
                pieces.put(key, message, data, len(data))
            if data:
                out.add(i, data)
        out.restart = len(messages)


def ollama_payload(
    model: ModelSpec,
    context: LlmContext,
    options: StreamOptions,
    *,
    cache: RequestCache | None = None,
) -> dict[str, Any]:
    """The ``/api/chat`` request body for one call.

    With ``cache``, the history comes as ``msgspec.Raw`` items (the same bytes once encoded).

    Raises:
        ValueError: ``options.tool_choice`` does not fit the tools offered.
    """
    messages: list[Any] = []
    if context.system_prompt:
        messages.append({"role": "system", "content": context.system_prompt})
    if cache is None:
        for message in context.messages:
            converted = _message(message, model)
            if converted is not None:
                messages.append(converted)
    else:
        messages += cache.items(_Codec(model), context.messages)
    body: dict[str, Any] = {"model": model.model_id, "messages": messages, "stream": True}
    # /api/chat has no tool choice: "none" leaves the tools out, a name offers only that tool,
    # and "required" cannot be enforced (the model may still answer in text).
    choice = tool_choice(options, context)
    tools = context.tools
    if choice == "none":
        tools = []
    elif choice not in (None, "auto", "required"):
        tools = [t for t in tools if t.name == choice]
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in tools
        ]
    level = model.thinking_level
    if level is not ThinkingLevel.OFF:
        # Booleans for most thinking models; gpt-oss also takes "low"/"medium"/"high".
        body["think"] = options.extra.get("ollama_think", True)
    model_options: dict[str, Any] = {}
    if options.temperature is not None:
        model_options["temperature"] = options.temperature
    max_tokens = max_output_tokens(model, options, None)
    if max_tokens is not None:
        model_options["num_predict"] = max_tokens
    if "num_ctx" in options.extra:
        model_options["num_ctx"] = options.extra["num_ctx"]
    if model_options:
        body["options"] = model_options
    return body


# --------------------------------------------------------------------------- stream


class OllamaStreamParser:
    """Translates ``/api/chat`` lines into ``AssistantMessageEvent`` values."""

    __slots__ = ("_blocks", "_calls", "_provider", "_started")

    def __init__(self, provider: str = "ollama") -> None:
        self._provider = provider
        self._blocks = BlockIndexer()
        self._calls = 0
        self._started = False

    def feed(self, line: Any) -> list[AssistantMessageEvent]:
        """Translate one frame (see ``StreamParser.feed``).

        Raises:
            ProtocolError: the frame is not valid for the protocol.
            msgspec.DecodeError: the frame is not valid JSON.
        """
        if not isinstance(line, dict):
            raise ProtocolError(f"expected a JSON object, got {excerpt(repr(line), 100)}")
        if line.get("error"):
            return [*self._close_all(), classify_payload(self._provider, line)]
        out: list[AssistantMessageEvent] = []
        if not self._started:
            self._started = True
            out.append(StreamStart(model_id=line.get("model")))
        message = line.get("message") or {}
        thinking = message.get("thinking")
        if thinking:
            index, new = self._blocks.get("thinking")
            if new:
                out.append(ThinkingStart(index=index))
            out.append(ThinkingDelta(index=index, delta=thinking))
        content = message.get("content")
        if content:
            index, new = self._blocks.get("text")
            if new:
                out.append(TextStart(index=index))
            out.append(TextDelta(index=index, delta=content))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            self._calls += 1
            index, _ = self._blocks.get(("tool", self._calls))
            self._blocks.close(("tool", self._calls))
            call_id = call.get("id") or f"call_{secrets.token_hex(6)}"
            arguments = function.get("arguments")
            if isinstance(arguments, str):  # some models send JSON text after all
                arguments = _decode_arguments(arguments)
            out.append(ToolCallStart(index=index, id=call_id, name=function.get("name") or ""))
            out.append(ToolCallEnd(index=index, arguments=arguments if arguments else {}))
        if line.get("done"):
            out.extend(self._close_all())
            stop = _DONE.get(line.get("done_reason") or "stop", StopReason.STOP)
            if self._calls and stop is StopReason.STOP:
                stop = StopReason.TOOL_USE
            reported = "prompt_eval_count" in line or "eval_count" in line
            use = usage(
                input=line.get("prompt_eval_count") or 0, output=line.get("eval_count") or 0
            )
            out.append(Done(stop_reason=stop, usage=use if reported else None))
        return out

    def end(self) -> list[AssistantMessageEvent]:
        """See ``StreamParser.end``."""
        return []

    def _close_all(self) -> list[AssistantMessageEvent]:
        out: list[AssistantMessageEvent] = []
        for key, index in sorted(self._blocks.open.items(), key=lambda kv: kv[1]):
            out.append(TextEnd(index=index) if key == "text" else ThinkingEnd(index=index))
        self._blocks.open.clear()
        return out


def _decode_arguments(text: str) -> Any:
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"tool call arguments are not JSON: {excerpt(text, 100)!r}") from exc


class OllamaProvider(HttpProvider):
    """``StreamFn`` for Ollama's ``/api/chat``; constructed as ``HttpProvider`` is
    (``base_url``, ``api_key``, ``client``, timeouts)."""

    provider_name: ClassVar[str] = "ollama"
    env_var: ClassVar[str | None] = "OLLAMA_API_KEY"
    default_base_url: ClassVar[str] = "http://127.0.0.1:11434"
    requires_api_key: ClassVar[bool] = False

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Stream one model call (an async generator: close it with ``aclosing``); an overflow
        error gets the context window from ``/api/ps`` or ``/api/show``."""
        return learning_window(self, model, super().__call__(model, context, options))

    def endpoint(self, model: ModelSpec, options: StreamOptions) -> str:
        return f"{self.base_url}/api/chat"

    def headers(
        self, api_key: str | None, model: ModelSpec, options: StreamOptions
    ) -> dict[str, str]:
        headers = {"accept": "application/x-ndjson"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        return headers

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        return ollama_payload(model, context, options, cache=self.request_cache)

    def new_decoder(self) -> NDJSONDecoder[Any]:
        return NDJSONDecoder(max_line_bytes=self.max_event_bytes)

    def new_parser(self, model: ModelSpec, options: StreamOptions) -> OllamaStreamParser:
        return OllamaStreamParser(self.provider_name)
