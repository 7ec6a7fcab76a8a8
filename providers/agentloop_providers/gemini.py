"""Google Gemini ``models/{model}:streamGenerateContent?alt=sse``.

Each SSE event is a whole ``GenerateContentResponse``: candidate 0's ``parts`` (text, thought
text with ``thought: true``, ``functionCall``), a ``finishReason`` on the last one, and
``usageMetadata`` (cumulative; thought tokens apart from the candidates' tokens) on every one.

- Text parts run together into one text block, thought parts into one thinking block.
- Function calls arrive whole, with their arguments as an object, and no id: one is made up.
  A ``thoughtSignature`` on the call is kept on ``ToolCall.signature``: Gemini 3 rejects the
  next request unless it comes back on the same part.
- With streamed function-call arguments (Vertex ``streamFunctionCallArguments``), a call opens
  with ``{name, willContinue: true}``, then sends ``partialArgs`` (``jsonPath`` and a value, a
  string in several pieces), and ends with an empty ``functionCall``; the pieces are assembled.
- ``finishReason``: ``STOP`` ends normally (``tool_use`` when calls were made), ``MAX_TOKENS`` is
  ``length``, the safety family is ``content_filtered``, anything else an error.
- HTTP 429 with a ``RetryInfo`` detail is throttling with its ``retryDelay`` as the hint (the
  shared classification reads it).

The request body is built in ``_gemini_request``.
"""

from __future__ import annotations

import re
import secrets
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

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
    ToolCallEnd,
    ToolCallStart,
)

from ._classify import classify_payload
from ._convert import usage as make_usage
from ._gemini_request import SKIP_SIGNATURE, gemini_payload
from ._http import HttpProvider, ProtocolError
from ._secrets import excerpt

if TYPE_CHECKING:
    from agentloop import ModelSpec, StreamOptions, Usage
    from agentloop.stream import AssistantMessageEvent, LlmContext

    from ._sse import ServerSentEvent

__all__ = ["SKIP_SIGNATURE", "GeminiParser", "GeminiProvider", "gemini_payload"]

_decode = msgspec.json.decode
_FILTERED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)
_MAX_PATH_DEPTH = 64
_MAX_INDEX_GAP = 1024  # how far past the end of a list a streamed index may point
_PATH_RE = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\['([^']*)'\]")


# --------------------------------------------------------------------------- stream


def _set_path(target: dict[str, Any], path: Any, value: Any, *, append: bool) -> None:
    """Set ``value`` at a ``$.a.b[0]`` JSON path (appending to a string being streamed).

    Raises:
        ProtocolError: the path is not one this parser can follow: not a string, too deep, an
            index far past the end of its list, or a step into a value of the other kind.
    """
    if not isinstance(path, str):
        raise ProtocolError(f"gemini: jsonPath is not a string: {excerpt(repr(path), 100)}")
    keys: list[str | int] = []
    for name, number, quoted in _PATH_RE.findall(path.removeprefix("$")):
        keys.append(int(number) if number else (name or quoted))
    if not keys or len(keys) > _MAX_PATH_DEPTH:
        raise ProtocolError(f"gemini: unsupported jsonPath {excerpt(path, 100)!r}")
    node: Any = target
    for key, following in zip(keys, keys[1:], strict=False):
        empty: Any = [] if isinstance(following, int) else {}
        node = _step(node, key, path)
        current = node.get(key) if isinstance(key, str) else node[key]
        if current is None:
            current = empty
            node[key] = current
        node = current
    last = keys[-1]
    node = _step(node, last, path)
    current = node.get(last) if isinstance(last, str) else node[last]
    if append and isinstance(current, str) and isinstance(value, str):
        value = current + value
    node[last] = value


def _step(node: Any, key: str | int, path: str) -> Any:
    """``node``, checked to hold ``key`` (a list grown by ``None`` up to an index near its end)."""
    if isinstance(key, int):
        if not isinstance(node, list) or key > len(node) + _MAX_INDEX_GAP:
            raise ProtocolError(
                f"gemini: jsonPath {excerpt(path, 100)!r} does not fit the arguments"
            )
        node.extend([None] * (key + 1 - len(node)))
    elif not isinstance(node, dict):
        raise ProtocolError(f"gemini: jsonPath {excerpt(path, 100)!r} does not fit the arguments")
    return node


def _partial_value(arg: dict[str, Any]) -> Any:
    for key in ("stringValue", "numberValue", "boolValue"):
        if key in arg:
            return arg[key]
    if "nullValue" in arg:
        return None
    if "structValue" in arg:
        return arg["structValue"]
    if "listValue" in arg:
        return arg["listValue"]
    return None


class _Call:
    __slots__ = ("args", "index", "streaming")

    def __init__(self, index: int) -> None:
        self.index = index
        self.args: dict[str, Any] = {}
        self.streaming: dict[str, bool] = {}  # jsonPath -> a string value continues


class GeminiParser:
    """Translates ``GenerateContentResponse`` events into ``AssistantMessageEvent`` values."""

    def __init__(self) -> None:
        self._next = 0
        self._open: tuple[str, int] | None = None  # the text or thinking block being written
        self._signature: str | None = None  # of the open thinking block
        self._call: _Call | None = None  # a call whose arguments are still streaming
        self._calls = 0
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._started = False

    def feed(self, sse: ServerSentEvent) -> list[AssistantMessageEvent]:
        """Translate one frame (see ``StreamParser.feed``).

        Raises:
            ProtocolError: the frame is not valid for the protocol.
            msgspec.DecodeError: the frame is not valid JSON.
        """
        if not sse.data:
            return []
        chunk = _decode(sse.data)
        if isinstance(chunk, list) and len(chunk) == 1:
            chunk = chunk[0]
        if not isinstance(chunk, dict):
            raise ProtocolError(f"gemini: expected a JSON object, got {excerpt(sse.data, 100)!r}")
        out: list[AssistantMessageEvent] = []
        if not self._started:
            self._started = True
            out.append(StreamStart(model_id=chunk.get("modelVersion")))
        if isinstance(chunk.get("usageMetadata"), dict):
            self._usage = _usage(chunk["usageMetadata"]) or self._usage
        if chunk.get("error"):
            return [*out, *self._close_text(), classify_payload("gemini", chunk, usage=self._usage)]
        blocked = (chunk.get("promptFeedback") or {}).get("blockReason")
        if blocked:
            return [
                *out,
                ErrorEvent(
                    kind=ErrorKind.CONTENT_FILTERED,
                    message=f"gemini: the prompt was blocked ({blocked})",
                    usage=self._usage,
                ),
            ]
        candidates = chunk.get("candidates") or ()
        if not candidates:
            return out
        candidate = candidates[0]
        for part in (candidate.get("content") or {}).get("parts") or ():
            out.extend(self._part(part))
        if candidate.get("finishReason"):
            self._finish = candidate["finishReason"]
        return out

    def end(self) -> list[AssistantMessageEvent]:
        """The body ended without a terminal event: the events that finish it, if any."""
        if self._finish is None:
            return []
        out = self._close_text()
        if self._call is not None:
            out.extend(self._end_call())
        reason = self._finish
        use = self._usage
        if reason in ("STOP", "FINISH_REASON_UNSPECIFIED"):
            stop = StopReason.TOOL_USE if self._calls else StopReason.STOP
            out.append(Done(stop_reason=stop, usage=use))
        elif reason == "MAX_TOKENS":
            out.append(Done(stop_reason=StopReason.LENGTH, usage=use))
        elif reason in _FILTERED:
            out.append(
                ErrorEvent(
                    kind=ErrorKind.CONTENT_FILTERED,
                    message=f"gemini: the response was blocked ({reason})",
                    usage=use,
                )
            )
        else:
            out.append(
                ErrorEvent(
                    kind=ErrorKind.OTHER,
                    message=f"gemini: generation stopped ({reason})",
                    usage=use,
                )
            )
        return out

    # ---------------------------------------------------------------- parts

    def _new_index(self) -> int:
        index = self._next
        self._next += 1
        return index

    def _close_text(self) -> list[AssistantMessageEvent]:
        if self._open is None:
            return []
        kind, index = self._open
        self._open = None
        if kind == "text":
            return [TextEnd(index=index)]
        signature, self._signature = self._signature, None
        return [ThinkingEnd(index=index, signature=signature)]

    def _part(self, part: dict[str, Any]) -> list[AssistantMessageEvent]:
        if "functionCall" in part:
            return self._function_call(part)
        text = part.get("text")
        if text is None:
            return []  # inline data, executable code and other parts are not modelled here
        kind = "thinking" if part.get("thought") else "text"
        out: list[AssistantMessageEvent] = []
        if self._call is not None:
            out.extend(self._end_call())
        if self._open is None or self._open[0] != kind:
            if not text and not part.get("thoughtSignature"):
                return out  # an empty part (the final chunk often has one) starts nothing
            out.extend(self._close_text())
            index = self._new_index()
            self._open = (kind, index)
            out.append(TextStart(index=index) if kind == "text" else ThinkingStart(index=index))
        index = self._open[1]
        if kind == "thinking" and part.get("thoughtSignature"):
            self._signature = part["thoughtSignature"]
        if text:
            out.append(
                TextDelta(index=index, delta=text)
                if kind == "text"
                else ThinkingDelta(index=index, delta=text)
            )
        return out

    def _function_call(self, part: dict[str, Any]) -> list[AssistantMessageEvent]:
        call = part["functionCall"] or {}
        out = self._close_text()
        name = call.get("name")
        if self._call is not None:
            if name:
                out.extend(self._end_call())  # a new call begins: the open one is complete
            else:
                for arg in call.get("partialArgs") or ():
                    path = arg.get("jsonPath", "")
                    _set_path(
                        self._call.args,
                        path,
                        _partial_value(arg),
                        append=self._call.streaming.get(path, False),
                    )
                    self._call.streaming[path] = bool(arg.get("willContinue"))
                if not call.get("willContinue"):
                    out.extend(self._end_call())
                return out
        if not name:
            return out  # a stray terminator
        index = self._new_index()
        self._calls += 1
        call_id = call.get("id") or f"call_{secrets.token_hex(6)}"
        signature = part.get("thoughtSignature")
        meta = {"gemini_id": call["id"]} if call.get("id") else None
        out.append(
            ToolCallStart(index=index, id=call_id, name=name, signature=signature, meta=meta)
        )
        if call.get("willContinue"):
            self._call = _Call(index)
            for arg in call.get("partialArgs") or ():
                _set_path(
                    self._call.args, arg.get("jsonPath", ""), _partial_value(arg), append=False
                )
            return out
        out.append(ToolCallEnd(index=index, arguments=call.get("args") or {}))
        return out

    def _end_call(self) -> list[AssistantMessageEvent]:
        call, self._call = self._call, None
        assert call is not None
        return [ToolCallEnd(index=call.index, arguments=call.args)]


def _usage(raw: dict[str, Any]) -> Usage | None:
    if "promptTokenCount" not in raw and "candidatesTokenCount" not in raw:
        return None
    prompt = raw.get("promptTokenCount") or 0
    cached = raw.get("cachedContentTokenCount") or 0
    thoughts = raw.get("thoughtsTokenCount") or 0
    tool_prompt = raw.get("toolUsePromptTokenCount") or 0
    return make_usage(
        input=max(0, prompt - cached) + tool_prompt,
        output=(raw.get("candidatesTokenCount") or 0) + thoughts,
        cache_read=cached,
        reasoning_tokens=thoughts,
    )


class GeminiProvider(HttpProvider):
    """``StreamFn`` for the Gemini API (``GEMINI_API_KEY``, sent as ``x-goog-api-key``)."""

    provider_name: ClassVar[str] = "gemini"
    env_var: ClassVar[str | None] = "GEMINI_API_KEY"
    default_base_url: ClassVar[str] = "https://generativelanguage.googleapis.com/v1beta"

    def endpoint(self, model: ModelSpec, options: StreamOptions) -> str:
        name = quote(model.model_id.removeprefix("models/"), safe="")
        return f"{self.base_url}/models/{name}:streamGenerateContent?alt=sse"

    def headers(
        self, api_key: str | None, model: ModelSpec, options: StreamOptions
    ) -> dict[str, str]:
        return {"x-goog-api-key": api_key} if api_key else {}

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        return gemini_payload(model, context, options, cache=self.request_cache)

    def new_parser(self, model: ModelSpec, options: StreamOptions) -> GeminiParser:
        return GeminiParser()
