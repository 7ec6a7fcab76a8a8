"""OpenAI Responses API (``POST /responses``, streamed as SSE with ``event:`` names).

Output items arrive as ``response.output_item.added`` ... ``done``: ``message`` items stream
``response.output_text.delta`` (and ``refusal`` deltas), ``reasoning`` items stream summary
deltas and end with their ``encrypted_content``, ``function_call`` items stream argument deltas
(several calls may be open at once). ``response.completed`` carries the usage (cached and
reasoning token details); ``response.incomplete`` says why output stopped early; ``error`` and
``response.failed`` end the call as classified errors.

Reasoning is kept for replay: the block's ``data`` holds the encrypted content and ``meta`` the
item id, so the next request can send the reasoning item back (``store`` is off and
``include=["reasoning.encrypted_content"]`` is requested whenever reasoning is on). The same
parser serves xAI's and Azure's Responses endpoints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from agentloop import (
    AssistantMessage,
    ErrorKind,
    Image,
    StopReason,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
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

from ._classify import classify_payload
from ._convert import (
    BlockIndexer,
    arguments_json,
    assistant_blocks,
    image_data_url,
    max_output_tokens,
    reasoning_effort,
    tool_choice,
    tool_result_parts,
    usage,
)
from ._http import HttpProvider, ProtocolError
from ._request_cache import Codec, Fold, Pieces, encode
from ._secrets import excerpt

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentloop import ModelSpec, StreamOptions, Usage
    from agentloop.stream import AssistantMessageEvent, LlmContext

    from ._request_cache import RequestCache
    from ._sse import ServerSentEvent

__all__ = ["OpenAIResponsesParser", "OpenAIResponsesProvider", "responses_payload"]

_decode = msgspec.json.decode


# --------------------------------------------------------------------------- request


def _user(message: UserMessage) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if type(block) is Text:
            parts.append({"type": "input_text", "text": block.text})
        elif type(block) is Image:
            parts.append({"type": "input_image", "image_url": image_data_url(block)})
    return {"role": "user", "content": parts}


def _assistant(message: AssistantMessage, model: ModelSpec) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    texts: list[str] = []

    def flush() -> None:
        if texts:
            content = [{"type": "output_text", "text": "".join(texts), "annotations": []}]
            items.append({"type": "message", "role": "assistant", "content": content})
            texts.clear()

    for block in assistant_blocks(message, model):
        if type(block) is Text:
            texts.append(block.text)
        elif type(block) is Thinking:
            if not block.data:
                continue  # without its encrypted content a reasoning item cannot be replayed
            flush()
            meta = block.meta or {}
            item: dict[str, Any] = {"type": "reasoning", "summary": []}
            if meta.get("id"):
                item["id"] = meta["id"]
            if block.thinking:
                item["summary"] = [{"type": "summary_text", "text": block.thinking}]
            item["encrypted_content"] = block.data
            items.append(item)
        elif type(block) is ToolCall:
            flush()
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": block.id,
                "name": block.name,
                "arguments": arguments_json(block),
            }
            item_id = (block.meta or {}).get("item_id")
            if item_id and message.provider == model.provider:
                call["id"] = item_id
            items.append(call)
    flush()
    return items


def _tool_output(message: ToolResultMessage) -> dict[str, Any]:
    text, images = tool_result_parts(message)
    if message.is_error:
        text = f"Error: {text}" if text else "Error"
    output: Any = text
    if images:
        output = [{"type": "input_text", "text": text}] if text else []
        output += [{"type": "input_image", "image_url": image_data_url(i)} for i in images]
    return {"type": "function_call_output", "call_id": message.tool_call_id, "output": output}


def _items(message: Any, model: ModelSpec) -> list[dict[str, Any]]:
    """The input items of one message."""
    if type(message) is UserMessage:
        return [_user(message)]
    if type(message) is AssistantMessage:
        return _assistant(message, model)
    if type(message) is ToolResultMessage:
        return [_tool_output(message)]
    return []


class _Codec(Codec):
    """Pieces and units: a message's input items, none merged; no state."""

    __slots__ = ("model",)

    def __init__(self, model: ModelSpec) -> None:
        super().__init__(("responses", model.provider))
        self.model = model

    def fold(
        self, messages: Sequence[Any], start: int, state: Any, pieces: Pieces, out: Fold
    ) -> None:
        for i in range(start, len(messages)):
            message = messages[i]
            key = (self.key, id(message))
            data: bytes | None = pieces.get(key, message)
            if data is None:
                data = encode(_items(message, self.model))[1:-1]
                pieces.put(key, message, data, len(data))
            if data:
                out.add(i, data)
        out.restart = len(messages)


def responses_payload(
    model: ModelSpec,
    context: LlmContext,
    options: StreamOptions,
    *,
    model_name: str | None = None,
    cache: RequestCache | None = None,
) -> dict[str, Any]:
    """The Responses API request body for one call (``model_name`` overrides the model id).

    With ``cache``, the history comes as ``msgspec.Raw`` items (the same bytes once encoded).

    Raises:
        ValueError: ``options.tool_choice`` does not fit the tools offered.
    """
    items: list[Any]
    if cache is None:
        items = []
        for message in context.messages:
            items.extend(_items(message, model))
    else:
        items = cache.items(_Codec(model), context.messages)
    body: dict[str, Any] = {
        "model": model_name or model.model_id,
        "input": items,
        "stream": True,
        "store": False,
    }
    if context.system_prompt:
        body["instructions"] = context.system_prompt
    if context.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in context.tools
        ]
    choice = tool_choice(options, context)
    if choice is not None:
        named = choice not in ("auto", "none", "required")
        body["tool_choice"] = {"type": "function", "name": choice} if named else choice
    if options.temperature is not None:
        body["temperature"] = options.temperature
    limit = max_output_tokens(model, options, None)
    if limit is not None:
        body["max_output_tokens"] = limit
    effort = reasoning_effort(model.thinking_level)
    if effort is not None:
        body["reasoning"] = {"effort": effort, "summary": "auto"}
        body["include"] = ["reasoning.encrypted_content"]
    if options.session_id:
        body["prompt_cache_key"] = options.session_id
    return body


# --------------------------------------------------------------------------- stream


class OpenAIResponsesParser:
    """Translates Responses API stream events into ``AssistantMessageEvent`` values."""

    def __init__(self, provider: str = "openai") -> None:
        self._provider = provider
        self._blocks = BlockIndexer()
        self._calls: dict[int, bool] = {}  # our index -> arguments were streamed
        self._summary: dict[int, int] = {}  # our index -> last summary part seen
        self._any_call = False
        self._usage: Usage | None = None

    def feed(self, sse: ServerSentEvent) -> list[AssistantMessageEvent]:
        """Translate one frame (see ``StreamParser.feed``).

        Raises:
            ProtocolError: the frame is not valid for the protocol.
            msgspec.DecodeError: the frame is not valid JSON.
        """
        if not sse.data or sse.data == "[DONE]":
            return []
        event = _decode(sse.data)
        if not isinstance(event, dict):
            raise ProtocolError(f"expected a JSON object, got {excerpt(sse.data, 100)!r}")
        kind = event.get("type") or sse.event
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            return self._text(event)
        if kind == "response.function_call_arguments.delta":
            return self._arguments(event)
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._reasoning(event)
        if kind == "response.output_item.added":
            return self._item_added(event)
        if kind == "response.output_item.done":
            return self._item_done(event)
        if kind == "response.created":
            response = event.get("response") or {}
            return [StreamStart(model_id=response.get("model"))]
        if kind in ("response.completed", "response.incomplete"):
            return self._finish(event.get("response") or {})
        if kind == "response.failed":
            response = event.get("response") or {}
            self._usage = _usage(response.get("usage")) or self._usage
            error = response.get("error") or {"message": "the response failed"}
            return [*self._close_all(), self._error({"error": error})]
        if kind == "error":
            return [*self._close_all(), self._error(event)]
        return []  # in_progress, content_part.*, *.done duplicates, annotations, ...

    def end(self) -> list[AssistantMessageEvent]:
        """The body ended without a terminal event: the events that finish it, if any."""
        return []  # no terminal event: the stream was cut short

    def _error(self, payload: dict[str, Any]) -> ErrorEvent:
        return classify_payload(self._provider, payload, usage=self._usage)

    # ---------------------------------------------------------------- items

    def _item_added(self, event: dict[str, Any]) -> list[AssistantMessageEvent]:
        item = event.get("item") or {}
        out = event.get("output_index", 0)
        kind = item.get("type")
        if kind == "function_call":
            index, _ = self._blocks.get(("call", out))
            self._calls[index] = False
            self._any_call = True
            meta = {"item_id": item["id"]} if item.get("id") else None
            call_id = item.get("call_id") or item.get("id") or f"call_{index}"
            return [ToolCallStart(index=index, id=call_id, name=item.get("name", ""), meta=meta)]
        if kind == "reasoning":
            index, _ = self._blocks.get(("reasoning", out))
            self._summary[index] = 0
            meta = {"id": item["id"]} if item.get("id") else None
            return [ThinkingStart(index=index, meta=meta)]
        return []  # messages start with their first text; other items are kept when done

    def _item_done(self, event: dict[str, Any]) -> list[AssistantMessageEvent]:
        item = event.get("item") or {}
        out = event.get("output_index", 0)
        kind = item.get("type")
        if kind == "function_call":
            index = self._blocks.close(("call", out))
            if index is None:
                return []
            events: list[AssistantMessageEvent] = []
            if not self._calls.pop(index, False) and item.get("arguments"):
                events.append(ToolCallDelta(index=index, delta=item["arguments"]))
            events.append(ToolCallEnd(index=index))
            return events
        if kind == "reasoning":
            index = self._blocks.close(("reasoning", out))
            if index is None:
                return []
            return [ThinkingEnd(index=index, data=item.get("encrypted_content"))]
        if kind == "message":
            ends: list[AssistantMessageEvent] = []
            for key, index in list(self._blocks.open.items()):
                if key[0] == "text" and key[1] == out:
                    self._blocks.close(key)
                    ends.append(TextEnd(index=index))
            return ends
        # Server-side tools (web search, file search, code interpreter, ...): kept as they are.
        index, _ = self._blocks.get(("item", out))
        self._blocks.close(("item", out))
        return [ExtensionBlock(index=index, type_name=f"openai.{kind}", data=item)]

    def _text(self, event: dict[str, Any]) -> list[AssistantMessageEvent]:
        delta = event.get("delta") or ""
        if not delta:
            return []
        key = ("text", event.get("output_index", 0), event.get("content_index", 0))
        index, new = self._blocks.get(key)
        out = TextDelta(index=index, delta=delta)
        return [TextStart(index=index), out] if new else [out]

    def _arguments(self, event: dict[str, Any]) -> list[AssistantMessageEvent]:
        index = self._blocks.peek(("call", event.get("output_index", 0)))
        if index is None:
            raise ProtocolError("function call arguments for a call that was never added")
        delta = event.get("delta") or ""
        if not delta:
            return []
        self._calls[index] = True
        return [ToolCallDelta(index=index, delta=delta)]

    def _reasoning(self, event: dict[str, Any]) -> list[AssistantMessageEvent]:
        out = event.get("output_index", 0)
        index, new = self._blocks.get(("reasoning", out))
        events: list[AssistantMessageEvent] = [ThinkingStart(index=index)] if new else []
        delta = event.get("delta") or ""
        part = event.get("summary_index", 0)
        if part != self._summary.get(index, 0):
            self._summary[index] = part
            delta = "\n\n" + delta  # a new summary part reads as a new paragraph
        if delta:
            events.append(ThinkingDelta(index=index, delta=delta))
        return events

    # ---------------------------------------------------------------- the end

    def _close_all(self) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        for key, index in sorted(self._blocks.open.items(), key=lambda kv: kv[1]):
            if key[0] == "text":
                events.append(TextEnd(index=index))
            elif key[0] == "reasoning":
                events.append(ThinkingEnd(index=index))
            elif key[0] == "call":
                events.append(ToolCallEnd(index=index))
        self._blocks.open.clear()
        return events

    def _finish(self, response: dict[str, Any]) -> list[AssistantMessageEvent]:
        events = self._close_all()
        use = _usage(response.get("usage")) or self._usage
        if response.get("status") == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason", "")
            if reason == "content_filter":
                events.append(
                    ErrorEvent(
                        kind=ErrorKind.CONTENT_FILTERED,
                        message=f"{self._provider}: the output was stopped by the content filter",
                        usage=use,
                    )
                )
                return events
            events.append(Done(stop_reason=StopReason.LENGTH, usage=use))
            return events
        stop = StopReason.TOOL_USE if self._any_call else StopReason.STOP
        events.append(Done(stop_reason=stop, usage=use))
        return events


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    given = raw.get("input_tokens") or 0
    cached = (raw.get("input_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (raw.get("output_tokens_details") or {}).get("reasoning_tokens") or 0
    return usage(
        input=max(0, given - cached),
        output=raw.get("output_tokens") or 0,
        cache_read=cached,
        reasoning_tokens=reasoning,
    )


class OpenAIResponsesProvider(HttpProvider):
    """``StreamFn`` for the OpenAI Responses API (and compatible endpoints, by ``base_url``).

    Args:
        provider_name: the name used in error messages.
        require_api_key: fail without a request when no key is found (default: true).
        **kwargs: see ``HttpProvider`` (``base_url``, ``api_key``, ``client``, timeouts).
    """

    provider_name: ClassVar[str] = "openai"
    env_var: ClassVar[str | None] = "OPENAI_API_KEY"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"

    def __init__(
        self,
        *,
        provider_name: str | None = None,
        require_api_key: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if provider_name is not None:
            self.provider_name = provider_name  # type: ignore[misc]
        self.requires_api_key = require_api_key  # type: ignore[misc]

    def endpoint(self, model: ModelSpec, options: StreamOptions) -> str:
        return f"{self.base_url}/responses"

    def headers(
        self, api_key: str | None, model: ModelSpec, options: StreamOptions
    ) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        return responses_payload(model, context, options, cache=self.request_cache)

    def new_parser(self, model: ModelSpec, options: StreamOptions) -> OpenAIResponsesParser:
        return OpenAIResponsesParser(self.provider_name)
