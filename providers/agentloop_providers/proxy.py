"""A ``StreamFn`` that forwards model calls to an agentloop proxy over SSE.

For deployments where the process running the agent may not reach the model provider (or hold
its keys): the client POSTs ``{"model", "context", "options"}`` as JSON with a bearer token; the
proxy runs the call with its own provider and credentials and streams each
``AssistantMessageEvent`` back as the JSON ``data`` of one SSE event. The events are deltas only
(no growing partial message travels), and the client's ``Accumulator`` rebuilds the message.
``agentloop_providers.proxy_server`` is a minimal server speaking this protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from agentloop import ModelSpec, StreamOptions
from agentloop.stream import AssistantMessageEvent, LlmContext, ToolSchema

from ._http import HttpProvider, ProtocolError
from ._request_cache import Codec, Fold, Pieces, encode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._sse import ServerSentEvent

__all__ = ["ProxyProvider", "ProxyRequest", "ProxyStreamParser"]


class ProxyRequest(msgspec.Struct, frozen=True, kw_only=True):
    """The body the client POSTs. ``options.api_key`` is always ``None`` on the wire."""

    model: ModelSpec
    context: LlmContext
    options: StreamOptions


_event_decoder: msgspec.json.Decoder[AssistantMessageEvent] = msgspec.json.Decoder(
    AssistantMessageEvent
)
_request_encoder = msgspec.json.Encoder()


class ProxyStreamParser:
    """Decodes each SSE ``data`` as one ``AssistantMessageEvent``."""

    __slots__ = ()

    def feed(self, sse: ServerSentEvent) -> list[AssistantMessageEvent]:
        """Translate one frame (see ``StreamParser.feed``).

        Raises:
            ProtocolError: the frame is not valid for the protocol.
            msgspec.DecodeError: the frame is not valid JSON.
        """
        if not sse.data or sse.event != "message":
            return []
        try:
            return [_event_decoder.decode(sse.data)]
        except msgspec.ValidationError as exc:
            raise ProtocolError(f"not an AssistantMessageEvent: {exc}") from exc

    def end(self) -> list[AssistantMessageEvent]:
        """See ``StreamParser.end``."""
        return []


class ProxyProvider(HttpProvider):
    """``StreamFn`` for an agentloop proxy.

    Args:
        url: the proxy's streaming endpoint (the full URL that takes the POST).
        token: the bearer token. ``StreamOptions.api_key`` (from ``get_api_key``) wins over it;
            ``AGENTLOOP_PROXY_TOKEN`` is the fallback. It is sent only as the
            ``Authorization`` header, never in the body.
        **kwargs: see ``HttpProvider`` (``client``, timeouts, ``headers``).
    """

    provider_name: ClassVar[str] = "proxy"
    env_var: ClassVar[str | None] = "AGENTLOOP_PROXY_TOKEN"
    requires_api_key: ClassVar[bool] = True

    def __init__(self, url: str, *, token: str | None = None, **kwargs: Any) -> None:
        super().__init__(base_url=url, api_key=token, **kwargs)

    def endpoint(self, model: ModelSpec, options: StreamOptions) -> str:
        return self.base_url

    def headers(
        self, api_key: str | None, model: ModelSpec, options: StreamOptions
    ) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        safe = msgspec.structs.replace(options, api_key=None)
        if self.request_cache is None:
            return ProxyRequest(model=model, context=context, options=safe)
        messages = self.request_cache.items(_Codec(), context.messages)
        wire = _WireContext(context.system_prompt, messages, context.tools)
        return _WireRequest(model, wire, safe)

    def new_parser(self, model: ModelSpec, options: StreamOptions) -> ProxyStreamParser:
        return ProxyStreamParser()


class _WireContext(msgspec.Struct, frozen=True):
    """An ``LlmContext`` whose messages are already encoded: the same JSON."""

    system_prompt: str
    messages: list[msgspec.Raw]
    tools: list[ToolSchema]


class _WireRequest(msgspec.Struct, frozen=True):
    """A ``ProxyRequest`` whose messages are already encoded: the same JSON."""

    model: ModelSpec
    context: _WireContext
    options: StreamOptions


class _Codec(Codec):
    """Pieces and units: a message as msgspec encodes it; no state."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(("proxy",))

    def fold(
        self, messages: Sequence[Any], start: int, state: Any, pieces: Pieces, out: Fold
    ) -> None:
        for i in range(start, len(messages)):
            message = messages[i]
            key = (self.key, id(message))
            data: bytes | None = pieces.get(key, message)
            if data is None:
                data = encode(message)
                pieces.put(key, message, data, len(data))
            out.add(i, data)
        out.restart = len(messages)
