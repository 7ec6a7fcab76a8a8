"""OpenAI Chat Completions (``POST /chat/completions``, streamed as SSE).

Works with any compatible server by ``base_url`` (vLLM, LM Studio, llama.cpp server, Groq,
Together, OpenRouter, DeepSeek, ...). Text, parallel tool calls whose argument deltas
interleave, reasoning text (``reasoning_content`` or ``reasoning``), refusals (kept as text),
``finish_reason`` mapping, the usage chunk of ``stream_options.include_usage``, and error
objects sent inside the stream. Only choice 0 is read; the others of an ``n > 1`` request are
ignored. The request body (and ``OpenAIChatCompat``) is in ``_openai_chat_request``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from agentloop import ErrorKind, StopReason
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
from ._context_window import DISCOVERABLE, learning_window
from ._convert import BlockIndexer, usage
from ._forced import forced_call_events, not_called
from ._http import HttpProvider, ProtocolError
from ._openai_chat_request import OpenAIChatCompat, openai_chat_payload
from ._secrets import excerpt

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

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


class _Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[dict[str, Any]] | None = None


class _Choice(msgspec.Struct):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Chunk(msgspec.Struct):
    """A chunk of the usual shape (anything else takes the general, untyped path)."""

    model: str | None = None
    choices: list[_Choice] | None = None
    usage: dict[str, Any] | None = None
    error: Any = None


_decode_chunk = msgspec.json.Decoder(_Chunk).decode


# --------------------------------------------------------------------------- stream

_TEXT, _THINKING = "text", "thinking"


class OpenAIChatStreamParser:
    """Translates Chat Completions chunks into ``AssistantMessageEvent`` values."""

    __slots__ = (
        "_blocks",
        "_calls",
        "_ended",
        "_finish",
        "_forced",
        "_json_call",
        "_json_parts",
        "_provider",
        "_report_model",
        "_started",
        "_usage",
    )

    def __init__(
        self,
        provider: str = "openai",
        *,
        forced: str | None = None,
        json_call: bool = False,
        report_model: bool = True,
    ) -> None:
        """Args:
        provider: the name in error messages.
        forced: the ``tool_choice`` that forced a call, if one did: an answer without a
            call then ends as a ``tool_not_called`` error.
        json_call: the forced call was sent as a JSON schema; the answer's text is the call.
        report_model: take the model id from the chunks' ``model`` field.
        """
        self._provider = provider
        self._forced = forced
        self._json_call = json_call
        self._json_parts: list[str] = []
        self._report_model = report_model
        self._blocks = BlockIndexer()
        self._calls: dict[Any, int] = {}  # the server's tool call index -> our block index
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._started = False
        self._ended = False

    def feed(self, sse: ServerSentEvent) -> list[AssistantMessageEvent]:
        """Translate one frame (see ``StreamParser.feed``).

        Raises:
            ProtocolError: the frame is not valid for the protocol.
            msgspec.DecodeError: the frame is not valid JSON.
        """
        data = sse.data
        if data == "[DONE]":
            return self._done()
        if not data:
            return []
        if sse.event == "message":
            fast = self.feed_data("message", data)
            if fast is not None:
                return fast
        chunk = _decode(data)
        if not isinstance(chunk, dict):
            raise ProtocolError(f"expected a JSON object, got {excerpt(data, 100)!r}")
        out: list[AssistantMessageEvent] = []
        if not self._started:
            self._started = True
            # A model id of the wrong type is left for the accumulator to call malformed.
            out.append(StreamStart(model_id=chunk.get("model") if self._report_model else None))
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
            if content and self._json_call:
                if isinstance(content, str):
                    self._json_parts.append(content)  # the call, as JSON: sent whole at the end
            elif content:
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

    def feed_data(self, event: str, data: bytes | str) -> list[AssistantMessageEvent] | None:
        """The events of a chunk of the usual shape, from its raw ``data``; ``None`` for any
        other (``[DONE]``, an error, a field of an unexpected type), which ``feed`` handles.
        (The SSE decoder offers it each one-line event before making a ``ServerSentEvent``.)
        """
        if event != "message" or type(self).feed is not OpenAIChatStreamParser.feed:
            return None  # (a subclass that changes ``feed`` gets every frame there)
        try:
            chunk = _decode_chunk(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None  # of another shape (or not JSON, or [DONE]): the general path says how
        if chunk.error is not None:
            return None
        return self._feed_typed(chunk)

    def _feed_typed(self, chunk: _Chunk) -> list[AssistantMessageEvent]:
        """``feed`` for a chunk of the usual shape, decoded into typed structs: the same
        events as the general path, with no dictionary lookups (nearly every chunk of an
        answer is one text delta, and this is its path)."""
        out: list[AssistantMessageEvent] = []
        if not self._started:
            self._started = True
            out.append(StreamStart(model_id=chunk.model if self._report_model else None))
        if chunk.usage is not None:
            self._usage = _usage(chunk.usage)
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue  # n > 1: only the first choice becomes the message
            delta = choice.delta
            if delta is not None:
                reasoning = delta.reasoning_content or delta.reasoning
                if reasoning:
                    out.extend(self._append(_THINKING, reasoning))
                content = delta.content
                if content and self._json_call:
                    self._json_parts.append(content)  # the call, as JSON: sent whole at the end
                elif content:
                    index = self._blocks.open.get(_TEXT)
                    if index is not None:  # the usual chunk: more of the open text block
                        out.append(TextDelta(index=index, delta=content))
                    else:
                        out.extend(self._append(_TEXT, content))
                if delta.refusal:
                    out.extend(self._append(_TEXT, delta.refusal))
                for call in delta.tool_calls or ():
                    out.extend(self._tool_call(call))
            if choice.finish_reason:
                self._finish = choice.finish_reason
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
        called = bool(self._calls)
        if self._json_call and "".join(self._json_parts).strip():
            index, _ = self._blocks.get(("tool", "forced"))
            self._blocks.open.pop(("tool", "forced"), None)
            out.extend(forced_call_events("".join(self._json_parts), index, f"call_{index}"))
            called = True
        if self._forced is not None and not called and stop is StopReason.STOP:
            out.append(not_called(self._provider, self._forced, self._usage))
            return out
        if called and stop is StopReason.STOP:
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

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Stream one model call (an async generator: close it with ``aclosing``).

        For a local server (llama.cpp, LM Studio, vLLM, Ollama) an overflow error that does not
        state the context window gets it from the server's API (see ``_context_window``).
        """
        stream = super().__call__(model, context, options)
        if self.provider_name in DISCOVERABLE:
            return learning_window(self, model, stream)
        return stream

    def endpoint(self, model: ModelSpec, options: StreamOptions) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(
        self, api_key: str | None, model: ModelSpec, options: StreamOptions
    ) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        return openai_chat_payload(model, context, options, self.compat, cache=self.request_cache)

    def new_parser(self, model: ModelSpec, options: StreamOptions) -> OpenAIChatStreamParser:
        compat = self.compat
        choice = options.tool_choice
        forced = choice if compat.forces(choice) else None
        return OpenAIChatStreamParser(
            self.provider_name,
            forced=forced,
            json_call=compat.json_call(choice),
            report_model=compat.model_id_from_server,
        )
