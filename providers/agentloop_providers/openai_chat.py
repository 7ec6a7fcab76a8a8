"""OpenAI Chat Completions (``POST /chat/completions``, streamed as SSE).

Works with any compatible server by ``base_url`` (vLLM, LM Studio, llama.cpp server, Groq,
Together, OpenRouter, DeepSeek, ...). Text, parallel tool calls whose argument deltas
interleave, reasoning text (``reasoning_content`` or ``reasoning``), refusals (kept as text),
``finish_reason`` mapping, the usage chunk of ``stream_options.include_usage``, and error
objects sent inside the stream. Only choice 0 is read; the others of an ``n > 1`` request are
ignored.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import msgspec

from agentloop import (
    AssistantMessage,
    ErrorKind,
    Image,
    StopReason,
    Text,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentloop.stream import (
    Done,
    ErrorEvent,
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
from ._secrets import excerpt

if TYPE_CHECKING:
    from agentloop import ModelSpec, StreamOptions, Usage
    from agentloop.stream import AssistantMessageEvent, LlmContext

    from ._sse import ServerSentEvent

__all__ = [
    "OpenAIChatCompat",
    "OpenAIChatProvider",
    "OpenAIChatStreamParser",
    "openai_chat_payload",
]

_FINISH: dict[str, StopReason] = {
    "stop": StopReason.STOP,
    "end_turn": StopReason.STOP,
    "length": StopReason.LENGTH,
    "max_tokens": StopReason.LENGTH,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "tool_use": StopReason.TOOL_USE,
}
_decode = msgspec.json.decode


@dataclasses.dataclass(frozen=True, kw_only=True)
class OpenAIChatCompat:
    """What a compatible server accepts, where servers differ.

    Attributes:
        max_tokens_field: ``max_completion_tokens`` (OpenAI) or ``max_tokens`` (most others).
        system_role: ``system``, or ``developer`` for OpenAI reasoning models.
        stream_usage: send ``stream_options.include_usage``.
        reasoning_effort: send ``reasoning_effort`` for a thinking level.
        tool_result_images: where images returned by tools go: a following user message
            (``user_message``) or nowhere (``drop``); tool messages only carry text.
        tool_choice_none: how ``tool_choice="none"`` is sent: as ``"none"``, or by leaving the
            tools out of the request (``omit_tools``) for servers that ignore the field.
        tool_choice_required: how ``tool_choice="required"`` is sent: as ``"required"``; as the
            named form when exactly one tool is offered (``named_if_single``; with several the
            field is left out and the model is not forced); or not at all (``omit``: the server
            cannot force a call).
        tool_choice_named: how a tool name is sent: OpenAI's ``{"type": "function", ...}``
            object (``object``), or by offering only that tool and requiring a call
            (``only_that_tool``, sent as ``tool_choice_required`` says) for servers that do
            not take the object.

    Which value each local server needs is in its preset (``presets.json``): llama.cpp's
    ``llama-server`` takes ``"required"`` but ignores the object; ``llama_cpp.server`` (the
    Python package) takes the object but ignores ``"required"`` and ``"none"``; Ollama's
    ``/v1`` ignores the field altogether.
    """

    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"
    system_role: Literal["system", "developer"] = "system"
    stream_usage: bool = True
    reasoning_effort: bool = True
    tool_result_images: Literal["user_message", "drop"] = "user_message"
    tool_choice_none: Literal["none", "omit_tools"] = "none"
    tool_choice_required: Literal["required", "named_if_single", "omit"] = "required"
    tool_choice_named: Literal["object", "only_that_tool"] = "object"


# --------------------------------------------------------------------------- request


def _user(message: UserMessage) -> dict[str, Any]:
    blocks = message.content
    if all(type(b) is Text for b in blocks):
        return {"role": "user", "content": "".join(b.text for b in blocks)}  # type: ignore[union-attr]
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if type(block) is Text:
            parts.append({"type": "text", "text": block.text})
        elif type(block) is Image:
            parts.append({"type": "image_url", "image_url": {"url": image_data_url(block)}})
    return {"role": "user", "content": parts}


def _assistant(message: AssistantMessage, model: ModelSpec) -> dict[str, Any] | None:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in assistant_blocks(message, model, keep_thinking=False):
        if type(block) is Text:
            texts.append(block.text)
        elif type(block) is ToolCall:
            function = {"name": block.name, "arguments": arguments_json(block)}
            calls.append({"id": block.id, "type": "function", "function": function})
    if not texts and not calls:
        return None
    # "" rather than null for a turn of tool calls only: every known server takes "", and some
    # (llama-cpp-python's) answer null with HTTP 500.
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if calls:
        out["tool_calls"] = calls
    return out


def openai_chat_payload(
    model: ModelSpec,
    context: LlmContext,
    options: StreamOptions,
    compat: OpenAIChatCompat | None = None,
) -> dict[str, Any]:
    """The Chat Completions request body for one call."""
    compat = compat or OpenAIChatCompat()
    messages: list[dict[str, Any]] = []
    if context.system_prompt:
        messages.append({"role": compat.system_role, "content": context.system_prompt})
    pending_images: list[Image] = []
    for message in context.messages:
        if type(message) is not ToolResultMessage and pending_images:
            messages.append(_tool_images(pending_images))
            pending_images = []
        if type(message) is UserMessage:
            messages.append(_user(message))
        elif type(message) is AssistantMessage:
            converted = _assistant(message, model)
            if converted is not None:
                messages.append(converted)
        elif type(message) is ToolResultMessage:
            text, images = tool_result_parts(message)
            if message.is_error:
                text = f"Error: {text}" if text else "Error"
            if images and compat.tool_result_images == "user_message":
                pending_images.extend(images)
                text = text or "(see the attached image)"
            messages.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": text})
    if pending_images:
        messages.append(_tool_images(pending_images))

    body: dict[str, Any] = {"model": model.model_id, "messages": messages, "stream": True}
    if compat.stream_usage:
        body["stream_options"] = {"include_usage": True}
    _tools(body, context, options, compat)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    max_tokens = max_output_tokens(model, options, None)
    if max_tokens is not None:
        body[compat.max_tokens_field] = max_tokens
    effort = reasoning_effort(model.thinking_level)
    if effort is not None and compat.reasoning_effort:
        body["reasoning_effort"] = effort
    if options.session_id:
        body["user"] = options.session_id
    return body


def _tools(
    body: dict[str, Any], context: LlmContext, options: StreamOptions, compat: OpenAIChatCompat
) -> None:
    """Put the tools and the tool choice in ``body``, as the server understands them.

    Raises:
        ValueError: ``options.tool_choice`` does not fit the tools offered.
    """
    choice = tool_choice(options, context)
    tools = context.tools
    sent: Any = choice
    if choice == "none" and compat.tool_choice_none == "omit_tools":
        tools, sent = [], None
    elif choice not in (None, "auto", "none", "required"):
        if compat.tool_choice_named == "only_that_tool":
            tools = [t for t in tools if t.name == choice]
            choice = "required"
        else:
            sent = {"type": "function", "function": {"name": choice}}
    if choice == "required":
        if compat.tool_choice_required == "named_if_single":
            sent = (
                {"type": "function", "function": {"name": tools[0].name}}
                if len(tools) == 1
                else None
            )
        elif compat.tool_choice_required == "omit":
            sent = None
        else:
            sent = "required"
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
        if sent is not None:
            body["tool_choice"] = sent


def _tool_images(images: list[Image]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": "Images returned by the tool:"}]
    parts.extend({"type": "image_url", "image_url": {"url": image_data_url(i)}} for i in images)
    return {"role": "user", "content": parts}


# --------------------------------------------------------------------------- stream

_TEXT, _THINKING = "text", "thinking"


class OpenAIChatStreamParser:
    """Translates Chat Completions chunks into ``AssistantMessageEvent`` values."""

    __slots__ = ("_blocks", "_calls", "_ended", "_finish", "_provider", "_started", "_usage")

    def __init__(self, provider: str = "openai") -> None:
        self._provider = provider
        self._blocks = BlockIndexer()
        self._calls: dict[Any, int] = {}  # the server's tool call index -> our block index
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._started = False
        self._ended = False

    def feed(self, sse: ServerSentEvent) -> list[AssistantMessageEvent]:
        """Translate one frame (see ``StreamParser.feed``).

        Raises:
            ProtocolError, msgspec.DecodeError: the frame is not valid for the protocol.
        """
        data = sse.data
        if data == "[DONE]":
            return self._done()
        if not data:
            return []
        chunk = _decode(data)
        if not isinstance(chunk, dict):
            raise ProtocolError(f"expected a JSON object, got {excerpt(data, 100)!r}")
        out: list[AssistantMessageEvent] = []
        if not self._started:
            self._started = True
            out.append(StreamStart(model_id=chunk.get("model")))
        raw_usage = chunk.get("usage")
        if isinstance(raw_usage, dict):
            self._usage = _usage(raw_usage)
        if sse.event == "error" or chunk.get("error"):
            return [*self._close_all(), classify_payload(self._provider, chunk, usage=self._usage)]
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue  # n > 1: only the first choice becomes the message
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                out.extend(self._append(_THINKING, reasoning))
            content = delta.get("content")
            if content:
                out.extend(self._append(_TEXT, content))
            refusal = delta.get("refusal")
            if refusal:
                out.extend(self._append(_TEXT, refusal))
            for call in delta.get("tool_calls") or ():
                out.extend(self._tool_call(call))
            finish = choice.get("finish_reason")
            if finish:
                self._finish = finish
        return out

    def end(self) -> list[AssistantMessageEvent]:
        """See ``StreamParser.end``.

        A stream is complete at ``[DONE]``. Some servers omit it; their stream is complete at
        its end only when both the finish reason and the usage came, since the usage chunk
        follows the finish reason (and, at OpenRouter, an error may follow it too): a stream
        cut between the two is a cut stream.
        """
        if self._finish is not None and self._usage is not None and not self._ended:
            return self._done()
        return []

    def _append(self, kind: str, text: str) -> list[AssistantMessageEvent]:
        index, new = self._blocks.get(kind)
        if kind == _TEXT:
            delta: AssistantMessageEvent = TextDelta(index=index, delta=text)
            return [TextStart(index=index), delta] if new else [delta]
        delta = ThinkingDelta(index=index, delta=text)
        return [ThinkingStart(index=index), delta] if new else [delta]

    def _tool_call(self, call: dict[str, Any]) -> list[AssistantMessageEvent]:
        function = call.get("function") or {}
        key = call.get("index")
        if key is None:  # servers that do not number calls: a new id is a new call
            key = call.get("id") or (next(reversed(self._calls)) if self._calls else 0)
        out: list[AssistantMessageEvent] = []
        index = self._calls.get(key)
        if index is None:
            index, _ = self._blocks.get(("tool", key))
            self._calls[key] = index
            call_id = call.get("id") or f"call_{index}"
            out.append(ToolCallStart(index=index, id=call_id, name=function.get("name") or ""))
        arguments = function.get("arguments")
        if arguments:
            if not isinstance(arguments, str):  # a few servers send the object itself
                arguments = msgspec.json.encode(arguments).decode()
            out.append(ToolCallDelta(index=index, delta=arguments))
        return out

    def _close_all(self) -> list[AssistantMessageEvent]:
        out: list[AssistantMessageEvent] = []
        for key, index in sorted(self._blocks.open.items(), key=lambda kv: kv[1]):
            if key == _TEXT:
                out.append(TextEnd(index=index))
            elif key == _THINKING:
                out.append(ThinkingEnd(index=index))
            else:
                out.append(ToolCallEnd(index=index))
        self._blocks.open.clear()
        return out

    def _done(self) -> list[AssistantMessageEvent]:
        self._ended = True
        out = self._close_all()
        finish = self._finish
        if finish is None:
            out.append(
                ErrorEvent(
                    kind=ErrorKind.NETWORK,
                    message=f"{self._provider}: the stream ended without a finish_reason",
                    usage=self._usage,
                )
            )
            return out
        if finish == "content_filter":
            out.append(
                ErrorEvent(
                    kind=ErrorKind.CONTENT_FILTERED,
                    message=f"{self._provider}: the output was stopped by the content filter",
                    usage=self._usage,
                )
            )
            return out
        stop = _FINISH.get(finish, StopReason.STOP)
        if self._calls and stop is StopReason.STOP:
            stop = StopReason.TOOL_USE  # servers that say "stop" after calling tools
        out.append(Done(stop_reason=stop, usage=self._usage))
        return out


def _usage(raw: dict[str, Any]) -> Usage:
    prompt = raw.get("prompt_tokens") or 0
    completion = raw.get("completion_tokens") or 0
    prompt_details = raw.get("prompt_tokens_details") or {}
    cached = prompt_details.get("cached_tokens") or 0
    completion_details = raw.get("completion_tokens_details") or {}
    return usage(
        input=max(0, prompt - cached),
        output=completion,
        cache_read=cached,
        reasoning_tokens=completion_details.get("reasoning_tokens") or 0,
    )


class OpenAIChatProvider(HttpProvider):
    """``StreamFn`` for OpenAI Chat Completions and compatible servers.

    Args:
        compat: request-shape differences of the target server.
        require_api_key: fail without a request when no key is found; defaults to true for
            the OpenAI API itself and false for any other ``base_url`` (local servers).
        provider_name: the name used in error messages ("groq", "vllm", ...).
        **kwargs: see ``HttpProvider`` (``base_url``, ``api_key``, ``client``, timeouts).
    """

    provider_name: ClassVar[str] = "openai"
    env_var: ClassVar[str | None] = "OPENAI_API_KEY"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"

    def __init__(
        self,
        *,
        compat: OpenAIChatCompat | None = None,
        require_api_key: bool | None = None,
        provider_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.compat = compat or OpenAIChatCompat()
        if require_api_key is None:
            require_api_key = self.base_url == self.default_base_url
        self.requires_api_key = require_api_key  # type: ignore[misc]
        if provider_name is not None:
            self.provider_name = provider_name  # type: ignore[misc]

    def endpoint(self, model: ModelSpec, options: StreamOptions) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(
        self, api_key: str | None, model: ModelSpec, options: StreamOptions
    ) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        return openai_chat_payload(model, context, options, self.compat)

    def new_parser(self, model: ModelSpec, options: StreamOptions) -> OpenAIChatStreamParser:
        return OpenAIChatStreamParser(self.provider_name)
