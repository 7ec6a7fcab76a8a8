"""A minimal agentloop proxy: an ASGI application that serves any ``StreamFn`` over SSE.

The reference implementation of the protocol ``ProxyProvider`` speaks, small enough to read
whole and dependency-free (raw ASGI, runs under any ASGI server)::

    app = ProxyApp(AnthropicProvider(), token="s3cret")
    # uvicorn module:app --host 127.0.0.1

``POST`` (any path) with ``Authorization: Bearer <token>`` and a ``ProxyRequest`` JSON body; the
response is ``text/event-stream``, one ``data:`` line per ``AssistantMessageEvent``. Keys for
the upstream provider stay on the server: the client's ``options.api_key`` is ignored and
replaced by ``upstream_api_key`` (or the provider's own environment variable). When the client
disconnects, the upstream call is cancelled and its generator closed, which closes its own HTTP
response.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import msgspec

from agentloop import ErrorKind
from agentloop.stream import Done, ErrorEvent, StreamFn

from .proxy import ProxyRequest

__all__ = ["ProxyApp"]

logger = logging.getLogger("agentloop.providers.proxy")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_request_decoder = msgspec.json.Decoder(ProxyRequest)
_encode = msgspec.json.Encoder().encode
_MAX_BODY = 32 * 1024 * 1024


class ProxyApp:
    """ASGI application streaming ``stream_fn``'s events to authenticated clients.

    Args:
        stream_fn: the upstream provider.
        token: the bearer token clients must present (compared in constant time).
        upstream_api_key: the key passed to ``stream_fn`` as ``options.api_key``.
    """

    def __init__(
        self, stream_fn: StreamFn, *, token: str, upstream_api_key: str | None = None
    ) -> None:
        if not token:
            raise ValueError("a proxy needs a token")
        self.stream_fn = stream_fn
        self.__token = token.encode()
        self.__upstream_api_key = upstream_api_key

    def __repr__(self) -> str:
        return f"ProxyApp(stream_fn={self.stream_fn!r})"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            await _error(send, 405, "invalid_request_error", "use POST")
            return
        if not self._authorized(scope):
            await _error(send, 401, "authentication_error", "missing or invalid bearer token")
            return
        body = await _read_body(receive)
        if body is None:
            await _error(send, 413, "request_too_large", "request body too large")
            return
        try:
            request = _request_decoder.decode(body)
        except msgspec.DecodeError as exc:
            await _error(send, 400, "invalid_request_error", f"bad request body: {exc}")
            return
        options = msgspec.structs.replace(request.options, api_key=self.__upstream_api_key)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch_disconnect, receive, tg.cancel_scope)
            await self._relay(request, options, send)
            tg.cancel_scope.cancel()
        with anyio.CancelScope(shield=True), contextlib.suppress(OSError):
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, presented = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(
                    presented.strip(), self.__token
                )
        return False

    async def _relay(self, request: ProxyRequest, options: Any, send: Send) -> None:
        stream = self.stream_fn(request.model, request.context, options)
        terminal = False
        try:
            async with contextlib.aclosing(stream):  # type: ignore[type-var]
                async for event in stream:
                    await send(
                        {
                            "type": "http.response.body",
                            "body": b"data: " + _encode(event) + b"\n\n",
                            "more_body": True,
                        }
                    )
                    if isinstance(event, Done | ErrorEvent):
                        terminal = True
                        break
        except Exception as exc:  # an upstream that raised: tell the client, as data
            logger.exception("proxy upstream failed")
            failure = ErrorEvent(kind=ErrorKind.OTHER, message=f"proxy upstream failed: {exc!r}")
            await _send_event(send, failure)
            return
        if not terminal:
            failure = ErrorEvent(
                kind=ErrorKind.NETWORK, message="proxy upstream ended without a terminal event"
            )
            await _send_event(send, failure)


async def _send_event(send: Send, event: ErrorEvent) -> None:
    body = b"data: " + _encode(event) + b"\n\n"
    await send({"type": "http.response.body", "body": body, "more_body": True})


async def _watch_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


async def _read_body(receive: Receive) -> bytes | None:
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _MAX_BODY:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


async def _error(send: Send, status: int, etype: str, message: str) -> None:
    body = _encode({"type": "error", "error": {"type": etype, "message": message}})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
