"""AWS Bedrock ConverseStream: binary event-stream responses, SigV4-signed requests.

``POST {base}/model/{modelId}/converse-stream`` answers with ``application/vnd.amazon.eventstream``
frames (see ``_eventstream``), each carrying one JSON event: ``messageStart``,
``contentBlockStart`` (tool use), ``contentBlockDelta`` (text, tool input, reasoning text,
signature or redacted content), ``contentBlockStop``, ``messageStop`` (the stop reason) and
finally ``metadata`` (usage). Failures mid-stream arrive as ``exception`` frames
(``throttlingException``, ``validationException``, ...).

Requests are signed with SigV4 (``_sigv4``) from the standard environment variables
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``; region from
``AWS_REGION``/``AWS_DEFAULT_REGION``), or sent with a Bedrock API key as a bearer token
(``AWS_BEARER_TOKEN_BEDROCK``, or ``StreamOptions.api_key``) when one is set.

Prompt caching (see ``caching``): ``cachePoint`` blocks after the system prompt, after the tools
(Claude only: Nova caches no tools) and at the history's last two stable points, by default for
the models that support it (Claude and Nova); ``cacheReadInputTokens`` and
``cacheWriteInputTokens`` come back as ``Usage.cache_read`` and ``cache_write``. The request
body is built in ``_bedrock_request``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar, cast
from urllib.parse import quote

import httpx
import msgspec

from agentloop import ErrorKind, StopReason
from agentloop.stream import (
    Done,
    ErrorEvent,
    ExtensionBlock,
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

from ._bedrock_request import bedrock_payload
from ._classify import classify_payload
from ._convert import usage as make_usage
from ._eventstream import EventStreamDecoder, EventStreamError, EventStreamMessage
from ._frames import DEFAULT_MAX_EVENT_BYTES
from ._http import HttpProvider, ProtocolError
from ._secrets import InvalidApiKey
from ._sigv4 import AwsCredentials, MissingCredentials, sign_headers

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import AsyncGenerator, AsyncIterator, Callable

    from agentloop import ModelSpec, StreamOptions, Usage
    from agentloop.stream import AssistantMessageEvent, LlmContext

    from .caching import PromptCaching

__all__ = ["BedrockProvider"]

_decode = msgspec.json.decode
_encode = msgspec.json.Encoder().encode

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.LENGTH,
    "model_context_window_exceeded": StopReason.LENGTH,
}
_FILTERED = frozenset({"guardrail_intervened", "content_filtered"})


class _Truncated:
    """Handed to the parser when the body ended inside a binary frame."""

    def __init__(self, pending: int) -> None:
        self.pending = pending


class _FrameDecoder:
    """The event-stream decoder, speaking the base class's ``FrameDecoder`` protocol."""

    __slots__ = ("_decoder",)

    def __init__(self, max_message_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._decoder = EventStreamDecoder(max_message_bytes=max_message_bytes)

    def feed(self, chunk: bytes) -> list[Any]:
        try:
            return list(self._decoder.feed(chunk))
        except EventStreamError as exc:
            raise ProtocolError(str(exc)) from exc

    def close(self) -> list[Any]:
        pending = self._decoder.pending
        return [_Truncated(pending)] if pending else []


class _Block:
    __slots__ = ("data", "index", "kind", "parts", "signature")

    def __init__(self, kind: str, index: int) -> None:
        self.kind = kind  # "text", "thinking", "redacted", "tool", "ext"
        self.index = index
        self.parts: list[Any] = []
        self.signature: str | None = None
        self.data: dict[str, Any] = {}


class BedrockParser:
    """Turns decoded event-stream messages into ``AssistantMessageEvent`` values."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._next = 0
        self._stop: StopReason | None = None
        self._filtered: str | None = None
        self._usage: Usage | None = None  # from the metadata frame

    def _open(self, bedrock_index: int, kind: str) -> _Block:
        block = _Block(kind, self._next)
        self._next += 1
        self._blocks[bedrock_index] = block
        return block

    def feed(self, frame: Any) -> list[AssistantMessageEvent]:
        if isinstance(frame, _Truncated):
            return [
                ErrorEvent(
                    kind=ErrorKind.NETWORK,
                    message=(
                        "bedrock: event stream truncated inside a frame "
                        f"({frame.pending} bytes of an unfinished message)"
                    ),
                    usage=self._usage,
                )
            ]
        assert isinstance(frame, EventStreamMessage)
        kind = frame.message_type
        if kind != "event":
            return [self._exception(frame)]
        name = frame.event_type
        body: dict[str, Any] = _decode(frame.payload) if frame.payload else {}
        if name == "contentBlockDelta":
            return self._delta(body)
        if name == "contentBlockStart":
            return self._start(body)
        if name == "contentBlockStop":
            return self._stop_block(body)
        if name == "messageStop":
            reason = str(body.get("stopReason", "end_turn"))
            if reason in _FILTERED:
                self._filtered = reason
            self._stop = _STOP_REASONS.get(reason, StopReason.STOP)
            return []
        if name == "metadata":
            self._usage = _usage(body.get("usage") or {})
            # The last frame of a message; the stop reason came just before it.
            return self._finish() if self._stop is not None else []
        return []  # messageStart and anything new

    def end(self) -> list[AssistantMessageEvent]:
        # ConverseStream always ends with its metadata frame (the usage), right after
        # messageStop: a body that ends before it was cut, and the usage with it.
        return []

    def _finish(self) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        for bedrock_index in list(self._blocks):
            events.extend(self._close(bedrock_index))
        if self._filtered is not None:
            events.append(
                ErrorEvent(
                    kind=ErrorKind.CONTENT_FILTERED,
                    message=f"bedrock: the response was blocked ({self._filtered})",
                    usage=self._usage,
                )
            )
        elif self._stop is not None:
            events.append(Done(stop_reason=self._stop, usage=self._usage))
        return events

    def _exception(self, frame: EventStreamMessage) -> ErrorEvent:
        etype = frame.event_type or str(frame.headers.get(":error-code", "error"))
        try:
            body = _decode(frame.payload) if frame.payload else {}
        except msgspec.DecodeError:
            body = {"message": frame.payload.decode("utf-8", "replace")}
        if not isinstance(body, dict):
            body = {"message": str(body)}
        message = body.get("message") or body.get("Message")
        message = message or frame.headers.get(":error-message") or "(no message)"
        event = classify_payload(
            "bedrock", {"message": message, "__type": etype}, usage=self._usage
        )
        if etype.lower() == "modeltimeoutexception" and event.kind is ErrorKind.OTHER:
            event = msgspec.structs.replace(event, kind=ErrorKind.NETWORK)
        return event

    def _start(self, body: dict[str, Any]) -> list[AssistantMessageEvent]:
        index = int(body.get("contentBlockIndex", 0))
        start = body.get("start") or {}
        tool = start.get("toolUse")
        if tool is not None and tool.get("type", "tool_use") == "tool_use":
            block = self._open(index, "tool")
            return [ToolCallStart(index=block.index, id=tool["toolUseId"], name=tool["name"])]
        # Server-side tools (a code interpreter, say) and their results: kept, never run here.
        kind, value = next(iter(start.items())) if start else ("unknown", None)
        block = self._open(index, "ext")
        block.data = {"start": {kind: value}}
        return []

    def _delta(self, body: dict[str, Any]) -> list[AssistantMessageEvent]:
        index = int(body.get("contentBlockIndex", 0))
        delta = body.get("delta") or {}
        block = self._blocks.get(index)
        if "text" in delta:
            text = delta["text"]
            if block is None:
                if not text:
                    return []  # an empty text block is not worth keeping
                block = self._open(index, "text")
                return [TextStart(index=block.index), TextDelta(index=block.index, delta=text)]
            if block.kind == "text":
                return [TextDelta(index=block.index, delta=text)] if text else []
        elif "reasoningContent" in delta:
            return self._reasoning(index, block, delta["reasoningContent"])
        elif "toolUse" in delta and block is not None and block.kind == "tool":
            piece = delta["toolUse"].get("input", "")
            return [ToolCallDelta(index=block.index, delta=piece)] if piece else []
        if block is None:
            block = self._open(index, "ext")
        if block.kind == "ext":
            block.parts.append(delta)
            return []
        raise ProtocolError(f"bedrock: delta {sorted(delta)} for a {block.kind} block")

    def _reasoning(
        self, index: int, block: _Block | None, content: dict[str, Any]
    ) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        if block is None:
            redacted = "redactedContent" in content
            block = self._open(index, "redacted" if redacted else "thinking")
            events.append(ThinkingStart(index=block.index, redacted=redacted))
        elif block.kind not in ("thinking", "redacted"):
            raise ProtocolError(f"bedrock: reasoning delta for a {block.kind} block")
        text = content.get("text")
        if text:
            events.append(ThinkingDelta(index=block.index, delta=text))
        if content.get("signature"):
            block.signature = content["signature"]
        if content.get("redactedContent"):
            block.parts.append(content["redactedContent"])
        return events

    def _stop_block(self, body: dict[str, Any]) -> list[AssistantMessageEvent]:
        return self._close(int(body.get("contentBlockIndex", 0)))

    def _close(self, bedrock_index: int) -> list[AssistantMessageEvent]:
        block = self._blocks.pop(bedrock_index, None)
        if block is None:
            return []
        i = block.index
        if block.kind == "text":
            return [TextEnd(index=i)]
        if block.kind == "thinking":
            return [ThinkingEnd(index=i, signature=block.signature)]
        if block.kind == "redacted":
            return [ThinkingEnd(index=i, data="".join(block.parts), signature=block.signature)]
        if block.kind == "tool":
            return [ToolCallEnd(index=i)]
        data = dict(block.data)
        if block.parts:
            data["deltas"] = block.parts
        start = data.get("start") or {}
        name = next(iter(start), "unknown")
        return [ExtensionBlock(index=i, type_name=f"bedrock.{name}", data=data)]


def _usage(raw: dict[str, Any]) -> Usage:
    return make_usage(
        input=int(raw.get("inputTokens") or 0),
        output=int(raw.get("outputTokens") or 0),
        cache_read=int(raw.get("cacheReadInputTokens") or 0),
        cache_write=int(raw.get("cacheWriteInputTokens") or 0),
    )


class BedrockProvider(HttpProvider):
    """AWS Bedrock through the Converse streaming API.

    Args:
        region: the AWS region; ``AWS_REGION``, then ``AWS_DEFAULT_REGION``, then us-east-1.
        prompt_caching: cache points: ``None`` (on for Claude and Nova models, which support
            them, off for the others, which refuse them), ``True``, ``False`` or a
            ``PromptCaching``; ``StreamOptions.extra["prompt_caching"]`` overrides it per call.
        credentials: fixed credentials; read from the environment on each call otherwise.
        clock: the signing time (tests pin it); the current UTC time by default.
        **kwargs: as for ``HttpProvider`` (``base_url`` defaults to the region's endpoint).
    """

    provider_name: ClassVar[str] = "bedrock"
    env_var: ClassVar[str | None] = "AWS_BEARER_TOKEN_BEDROCK"
    requires_api_key: ClassVar[bool] = False

    def __init__(
        self,
        *,
        region: str | None = None,
        credentials: AwsCredentials | None = None,
        clock: Callable[[], dt.datetime] | None = None,
        prompt_caching: bool | PromptCaching | None = None,
        **kwargs: Any,
    ) -> None:
        self.prompt_caching = prompt_caching
        env = os.environ
        self.region = (
            region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
        )
        kwargs.setdefault("base_url", f"https://bedrock-runtime.{self.region}.amazonaws.com")
        super().__init__(**kwargs)
        self._credentials = credentials
        self._clock = clock

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        try:
            bearer = self.api_key_for(options)
        except InvalidApiKey:
            bearer = ""  # the base class's stream reports it
        if bearer is None:
            try:
                self._credentials_now()
            except MissingCredentials as exc:
                return _single(ErrorEvent(kind=ErrorKind.AUTH, message=f"bedrock: {exc}"))
        return _generator(super().__call__(model, context, options))

    def _credentials_now(self) -> AwsCredentials:
        return self._credentials or AwsCredentials.from_env()

    def secrets_for(self, key: str | None) -> tuple[str | None, ...]:
        """The bearer key, and the secret key and session token of the AWS credentials."""
        try:
            credentials = self._credentials_now()
        except MissingCredentials:
            return super().secrets_for(key)
        return (
            *super().secrets_for(key),
            credentials.secret_access_key,
            credentials.session_token,
        )

    def endpoint(self, model: ModelSpec, options: StreamOptions) -> str:
        return f"{self.base_url}/model/{quote(model.model_id, safe='')}/converse-stream"

    def headers(
        self, api_key: str | None, model: ModelSpec, options: StreamOptions
    ) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        return bedrock_payload(
            model,
            context,
            options,
            prompt_caching=self.prompt_caching,
            cache=self.request_cache,
        )

    def new_parser(self, model: ModelSpec, options: StreamOptions) -> BedrockParser:
        return BedrockParser()

    def new_decoder(self) -> _FrameDecoder:
        return _FrameDecoder(self.max_event_bytes)

    def build_request(
        self,
        model: ModelSpec,
        context: LlmContext,
        options: StreamOptions,
        api_key: str | None,
    ) -> httpx.Request:
        url = httpx.URL(self.endpoint(model, options))
        content = _encode(self.payload(model, context, options))
        headers = {
            "content-type": "application/json",
            "accept": "application/vnd.amazon.eventstream",
        }
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        else:
            path, _, query = url.raw_path.decode("ascii").partition("?")
            now = self._clock() if self._clock is not None else None
            headers.update(
                sign_headers(
                    method="POST",
                    host=url.netloc.decode("ascii"),
                    path=path,
                    query=query,
                    headers={"content-type": "application/json"},
                    body=content,
                    credentials=self._credentials_now(),
                    region=self.region,
                    service="bedrock",
                    now=now,
                )
            )
        headers.update(self.extra_headers)
        return self.client.build_request(
            "POST", url, headers=headers, content=content, timeout=self._timeout()
        )


async def _single(event: AssistantMessageEvent) -> AsyncGenerator[AssistantMessageEvent, None]:
    yield event


def _generator(
    stream: AsyncIterator[AssistantMessageEvent],
) -> AsyncGenerator[AssistantMessageEvent, None]:
    # The base class's streams are async generators, whatever its annotation says.
    return cast("AsyncGenerator[AssistantMessageEvent, None]", stream)
