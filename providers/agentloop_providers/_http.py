"""The HTTP streaming base every adapter builds on.

``HttpProvider`` owns the httpx ``AsyncClient`` lifecycle and the one streaming loop: build the
request, POST it, turn an error status into a classified ``ErrorEvent``, feed the body's bytes
through a frame decoder (SSE, NDJSON, or an adapter's own) and the adapter's ``StreamParser``,
and yield ``AssistantMessageEvent`` values until a terminal event. Transport failures (connect,
reset, a cut body, the idle-read timeout) end the stream as a ``network`` error; a malformed
stream ends it as ``other``. A model failure is always an event, never an exception.

An adapter supplies four things::

    class MyProvider(HttpProvider):
        provider_name = "my"
        env_var = "MY_API_KEY"
        default_base_url = "https://api.example.com/v1"

        def endpoint(self, model, options): return f"{self.base_url}/chat"
        def headers(self, api_key, model, options): return {"authorization": f"Bearer {api_key}"}
        def payload(self, model, context, options): return {...}
        def new_parser(self, model, options): return MyParser()  # feed(frame) / end()

and may override ``new_decoder`` (the framing; SSE by default) or ``build_request`` (to sign
requests, say). The generator closes its HTTP response in a shielded, bounded ``finally``, so a
turn that is cancelled (the loop always consumes a provider inside ``contextlib.aclosing``)
drops the connection at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

import anyio
import anyio.lowlevel
import httpx
import msgspec

from agentloop import ErrorKind, MissingExtra
from agentloop.stream import Done, ErrorEvent

from ._classify import classify_payload, classify_response, decode_body
from ._frames import DEFAULT_MAX_EVENT_BYTES
from ._request_cache import DEFAULT_REQUEST_CACHE_BYTES, RequestCache
from ._secrets import CUT, InvalidApiKey, check_api_key, redact as redact, redact_bytes, tracking
from ._sse import SSEDecoder
from ._translate import (
    FrameDecoder as FrameDecoder,
    ProtocolError as ProtocolError,
    StreamParser as StreamParser,
    checked_event as checked_event,
    events_of,
    tail_of,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Mapping
    from contextlib import AbstractContextManager
    from types import TracebackType

    from agentloop import ModelSpec, StreamOptions
    from agentloop.stream import AssistantMessageEvent, LlmContext

__all__ = [
    "FrameDecoder",
    "HttpProvider",
    "ProtocolError",
    "StreamParser",
    "checked_event",
    "redact",
]

logger = logging.getLogger("agentloop.providers")
T = TypeVar("T")

_json_encode = msgspec.json.Encoder().encode
_MAX_ERROR_BODY = 64 * 1024
_CLOSE_TIMEOUT = 5.0
_MAX_URLS = 64  # parsed endpoints kept (one per model, for most adapters)
_DRAIN_SECONDS = 0.25  # after a complete answer: what is left of its body, to keep the
_DRAIN_BYTES = 64 * 1024  # connection (more, or later, and the connection is dropped)


def _current_loop() -> object:
    """The running event loop (asyncio's loop, trio's token): what a client is bound to."""
    return anyio.lowlevel.current_token().native_token


class HttpProvider:
    """Base class of the HTTP adapters; an instance is a ``StreamFn``.

    Args:
        base_url: the API root; ``default_base_url`` when omitted.
        api_key: a fixed API key. ``StreamOptions.api_key`` (filled by the loop from
            ``get_api_key``) wins over it; the ``env_var`` environment variable is the fallback.
        client: an ``httpx.AsyncClient`` to use. The provider never closes a client it was
            given; it creates (lazily) and closes its own otherwise.
        first_byte_timeout: seconds to wait, once the request is sent, for the answer's first
            byte (its headers and the first piece of its body): 120 s by default. Past it the
            call ends as a ``timeout`` error, which is not retried by default (the server has
            the request; sending it again rarely helps a server that stays silent).
            (``agentloop run`` and the terminal UI say while they wait: "no answer from
            http://127.0.0.1:8080/v1 for 30 s, still waiting…".)
        idle_timeout: seconds without a byte from the server between two pieces of the answer
            after which the call ends as a ``network`` error (retried): 120 s by default. Any
            byte resets it, a keep-alive comment included, so it cannot bound a whole call.
            A model that thinks silently for longer than these (some reasoning models stream
            nothing until they are done) needs larger values of both.
        deadline: seconds the whole call may take, from sending the request to the last byte
            of the answer (connecting and the headers included); past it the call ends as a
            ``network`` error, retried like a timeout. ``None``, the default, sets no deadline:
            a slow answer that keeps streaming is never cut.
        connect_timeout: seconds to establish a connection (10 s by default).
        headers: extra headers sent with every request.
        http2: offer HTTP/2 to servers that speak it (over TLS; the ``[http2]`` extra brings
            ``h2``). Measured on loopback (``benchmarks/bench_http2.py``): ten answers started
            at once on a new client reach their first token sooner (24–34 ms against 39–60:
            one TLS handshake instead of ten), but one stream reads 15–20% fewer tokens per
            second and gets its first one later (httpx's HTTP/2 is pure Python), so it is off
            by default.
        max_event_bytes: the largest frame the decoder may buffer (an SSE line or event, a
            JSON line, a binary message): 16 MiB by default. A larger one ends the call as an
            ``other`` error naming the limit, with memory bounded by a small multiple of it.
        request_cache_bytes: the memory this provider may keep between calls so that each
            history message is converted and encoded once (64 MiB by default; ``0`` keeps
            nothing and converts the whole history on every call). The adapters' ``payload``
            then holds the history as ``msgspec.Raw`` items; the encoded body is the same.

    Use as ``async with Provider() as provider:`` or call ``await provider.aclose()``.

    API keys are checked before use (printable ASCII, no whitespace) and never leave in an
    error message, an exception or a log record, in any of their usual representations (see
    ``_secrets``).

    Raises:
        InvalidApiKey: ``api_key`` holds whitespace or other characters no key has (a trailing
            newline, typically); a key from ``get_api_key`` or the environment is checked on
            each call instead, which then ends as an ``auth`` error.
    """

    provider_name: ClassVar[str] = "http"
    env_var: ClassVar[str | None] = None
    default_base_url: ClassVar[str] = ""
    requires_api_key: ClassVar[bool] = True

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        first_byte_timeout: float = 120.0,
        idle_timeout: float = 120.0,
        deadline: float | None = None,
        connect_timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
        http2: bool = False,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        request_cache_bytes: int = DEFAULT_REQUEST_CACHE_BYTES,
    ) -> None:
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        if api_key is not None:
            check_api_key(api_key, f"{type(self).__name__}(api_key=...)")
        self.__api_key = api_key
        self._client = client
        self._owns_client = client is None
        self._client_loop: object = None
        self.first_byte_timeout = first_byte_timeout
        self.idle_timeout = idle_timeout
        self.deadline = deadline
        # The environment variable that points this provider elsewhere, named in transport
        # errors (a preset sets it: ``LLAMACPP_BASE_URL``...).
        self.base_url_env: str | None = None
        self._urls: dict[str, httpx.URL] = {}
        self.connect_timeout = connect_timeout
        self.extra_headers = dict(headers or {})
        if http2:
            MissingExtra.check("HttpProvider(http2=True)", "http2", "h2")
        self.http2 = http2
        self.max_event_bytes = max_event_bytes
        self.request_cache: RequestCache | None = (
            RequestCache(request_cache_bytes) if request_cache_bytes > 0 else None
        )

    @property
    def logger(self) -> logging.Logger:
        """This provider's logger: ``agentloop.providers.<provider name>``."""
        return logging.getLogger(f"agentloop.providers.{self.provider_name}")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self.base_url!r}, "
            f"first_byte_timeout={self.first_byte_timeout!r}, "
            f"idle_timeout={self.idle_timeout!r}, deadline={self.deadline!r})"
        )

    # ------------------------------------------------------------------ lifecycle

    @property
    def client(self) -> httpx.AsyncClient:
        """The client in use, created on first use when none was given.

        A client belongs to the event loop it was created on (its connections are that loop's
        sockets), so one this provider created is created again on another event loop: the
        same provider works across successive loops and backends. Close it (``aclose``) before
        its loop ends; ``Agent.prompt_sync`` does so for the loop it runs.
        """
        loop = _current_loop()
        if self._client is not None and self._owns_client and self._client_loop is not loop:
            self.logger.debug("a new HTTP client for a new event loop")
            self._client = None
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout(), http2=self.http2)
            self._owns_client = True
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the client if this provider created it (a given client is left open)."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            if self._client_loop is _current_loop():
                await client.aclose()
        elif client is not None:
            self._client = client

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _timeout(self) -> httpx.Timeout:
        # httpx's read timeout bounds each read; the first byte has a bound of its own (see
        # ``_first_byte``), so a read may wait for the longer of the two.
        read = max(self.idle_timeout, self.first_byte_timeout)
        return httpx.Timeout(
            connect=self.connect_timeout,
            read=read,
            write=self.idle_timeout,
            pool=self.connect_timeout,
        )

    # ------------------------------------------------------------------ adapter hooks

    def api_key_for(self, options: StreamOptions) -> str | None:
        """The key for a call: ``options.api_key``, else the constructor's, else ``env_var``.

        Raises:
            InvalidApiKey: the key holds whitespace or other characters no key has.
        """
        if options.api_key:
            return check_api_key(options.api_key, "StreamOptions.api_key (get_api_key)")
        if self.__api_key:
            return self.__api_key
        if self.env_var and (key := os.environ.get(self.env_var)):
            return check_api_key(key, f"the {self.env_var} environment variable")
        return None

    def endpoint(self, model: ModelSpec, options: StreamOptions) -> str:
        """The URL to POST to."""
        raise NotImplementedError

    def headers(
        self, api_key: str | None, model: ModelSpec, options: StreamOptions
    ) -> dict[str, str]:
        """Request headers, the credentials included."""
        raise NotImplementedError

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        """The JSON request body."""
        raise NotImplementedError

    def new_parser(self, model: ModelSpec, options: StreamOptions) -> StreamParser:
        """A fresh parser for one call's frames."""
        raise NotImplementedError

    def new_decoder(self) -> FrameDecoder:
        """A fresh frame decoder for one response body (SSE unless overridden), capped at
        ``max_event_bytes``."""
        cap = self.max_event_bytes
        return SSEDecoder(max_line_bytes=cap, max_event_bytes=cap)

    def build_request(
        self,
        model: ModelSpec,
        context: LlmContext,
        options: StreamOptions,
        api_key: str | None,
    ) -> httpx.Request:
        """The request for one call; override to sign requests or change the method.

        ``options.extra["extra_body"]`` (a dict) is merged into the JSON body last, for
        parameters this library does not model (``top_p``, ``seed``, ``response_format``...).

        Raises:
            ValueError: the request cannot be built (the call then ends as an ``other``
                error).
            TypeError: as ``ValueError``.
            msgspec.EncodeError: as ``ValueError``.
        """
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        headers.update(self.headers(api_key, model, options))
        headers.update(self.extra_headers)
        body = self.payload(model, context, options)
        extra_body = options.extra.get("extra_body")
        if isinstance(extra_body, dict) and isinstance(body, dict):
            body = {**body, **extra_body}  # provider parameters this library does not model
        return self.client.build_request(
            "POST",
            self._url(self.endpoint(model, options)),
            headers=headers,
            content=_json_encode(body),
            timeout=self._timeout(),
        )

    def _url(self, endpoint: str) -> httpx.URL:
        """``endpoint`` parsed once (parsing a URL is a third of building a request)."""
        urls = self._urls
        url = urls.get(endpoint)
        if url is None:
            if len(urls) >= _MAX_URLS:
                urls.clear()
            url = urls[endpoint] = httpx.URL(endpoint)
        return url

    # ------------------------------------------------------------------ the StreamFn

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Stream one model call (an async generator: close it with ``aclosing``)."""
        return self._stream(model, context, options)

    def secrets_for(self, key: str | None) -> tuple[str | None, ...]:
        """Every secret a call made with ``key`` holds, to be kept out of what it lets out:
        the key and the constructor's. Adapters with other credentials add theirs."""
        return (key, self.__api_key)

    def _fail(self, kind: ErrorKind, message: str, key: str | None) -> ErrorEvent:
        return ErrorEvent(kind=kind, message=redact(message, *self.secrets_for(key)))

    async def _stream(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        name = self.provider_name
        try:
            key = self.api_key_for(options)
        except InvalidApiKey as exc:
            yield ErrorEvent(kind=ErrorKind.AUTH, message=f"{name}: {exc}")
            return
        if key is None and self.requires_api_key:
            where = (
                f"set {self.env_var} (or pass api_key=, or get_api_key)"
                if self.env_var
                else "pass api_key= or get_api_key"
            )
            yield ErrorEvent(kind=ErrorKind.AUTH, message=f"{name}: no API key: {where}")
            return
        with tracking(*self.secrets_for(key)):  # kept out of the HTTP stack's log records
            try:
                request = self.build_request(model, context, options, key)
            except (ValueError, TypeError, msgspec.EncodeError) as exc:
                yield self._fail(ErrorKind.OTHER, f"{name}: cannot build the request: {exc}", key)
                return
            where = _where(request.url)
            self.logger.debug("%s: POST %s", name, where)
            start = anyio.current_time()
            until = None if self.deadline is None else start + self.deadline
            first = _FirstByte(self, where, start, until)
            try:
                response = await first.wait(self.client.send(request, stream=True))
            except TimeoutError:
                yield first.timed_out()
                return
            except httpx.TimeoutException as exc:
                if isinstance(exc, httpx.ConnectTimeout):
                    problem = f"cannot connect to {where}: no answer in {self.connect_timeout:g}s"
                else:
                    problem = f"timed out waiting for {where} ({type(exc).__name__})"
                yield self._fail(ErrorKind.NETWORK, f"{name}: {problem}{self._hint()}", key)
                return
            except httpx.TransportError as exc:
                yield self._fail(
                    ErrorKind.NETWORK,
                    f"{name}: cannot connect to {where}{_proxy(request.url)}: "
                    f"{_reason(exc)}{self._hint()}",
                    key,
                )
                return
            chunks: AsyncIterator[bytes] | None = None
            complete = False
            try:
                status = response.status_code
                self.logger.debug("%s: HTTP %d", name, status)
                if status >= 400:
                    with _until(until):
                        body = self._scrubbed(await _read_limited(response), key)
                    error = classify_response(name, status, response.headers, body)
                    if status in (404, 405):
                        # A wrong base URL, most often: say which one, and how to change it.
                        message = f"{error.message} (from {where}{self._hint(',')})"
                        error = msgspec.structs.replace(error, message=message)
                    yield self._redacted(error, key)
                    return
                decoder = self.new_decoder()
                parser = self.new_parser(model, options)
                content_type = response.headers.get("content-type", "")
                if isinstance(decoder, SSEDecoder) and content_type.startswith("application/json"):
                    # A server that answers a streaming request with one JSON document (an error
                    # object, typically) instead of an event stream.
                    with _until(until):
                        body = self._scrubbed(await _read_limited(response), key)
                    yield self._redacted(classify_payload(name, decode_body(body)), key)
                    return
                chunks = response.aiter_bytes()
                try:
                    chunk = await first.wait(anext(chunks, None))
                except TimeoutError:
                    yield first.timed_out()
                    return
                while chunk is not None:
                    for event in events_of(self.provider_name, decoder, parser, chunk):
                        cls = type(event)
                        if cls is ErrorEvent:
                            yield self._redacted(event, key)  # type: ignore[arg-type]
                            return
                        if cls is Done:
                            complete = True  # (the consumer may close the stream at once)
                            yield event
                            return
                        yield event
                    chunk = await _next(chunks, until, self.idle_timeout)
                for event in tail_of(self.provider_name, decoder, parser):
                    cls = type(event)
                    yield self._redacted(event, key) if cls is ErrorEvent else event  # type: ignore[arg-type]
                    if cls is Done or cls is ErrorEvent:
                        return
                yield ErrorEvent(
                    kind=ErrorKind.NETWORK,
                    message=f"{name}: the stream ended before the message was complete",
                )
            except _Idle:
                yield ErrorEvent(
                    kind=ErrorKind.NETWORK,
                    message=f"{name}: no data from {where} for {self.idle_timeout:g}s",
                )
            except TimeoutError:
                yield self._past_deadline()
            except httpx.TimeoutException:
                yield ErrorEvent(
                    kind=ErrorKind.NETWORK,
                    message=f"{name}: no data from {where} for {self.idle_timeout:g}s",
                )
            except httpx.TransportError as exc:
                yield self._fail(
                    ErrorKind.NETWORK,
                    f"{name}: the stream from {where} broke off: {_reason(exc)}",
                    key,
                )
            finally:
                # Runs on cancellation and on aclose() too; shielded so the socket really closes.
                with anyio.move_on_after(_CLOSE_TIMEOUT, shield=True):
                    if complete and chunks is not None:
                        await _drain(chunks)
                    await _close(response, chunks)

    def _hint(self, sep: str = ";") -> str:
        """How to point this provider elsewhere, for errors that say it is not where it was
        looked for."""
        if not self.base_url_env:
            return ""
        return f"{sep} set {self.base_url_env} to change the address"

    def _past_deadline(self) -> ErrorEvent:
        return ErrorEvent(
            kind=ErrorKind.NETWORK,
            message=f"{self.provider_name}: no complete answer within the {self.deadline:g}s "
            "deadline",
        )

    def _scrubbed(self, body: bytes, key: str | None) -> bytes:
        """An error body with the keys taken out before anything reads (or cuts) it."""
        return redact_bytes(body, *self.secrets_for(key))

    def _redacted(self, event: ErrorEvent, key: str | None) -> ErrorEvent:
        message = redact(event.message, *self.secrets_for(key))
        if message == event.message:
            return event
        return msgspec.structs.replace(event, message=message)


def _where(url: httpx.URL) -> str:
    """Where a request went, for messages: no credentials, no query (a key may be there).

    From the parsed parts (``netloc`` holds no credentials): copying the URL would parse it
    again, on every call.
    """
    return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}{url.path}"


def _proxy(url: httpx.URL) -> str:
    """ " through the proxy ..." when the environment sends ``url`` through one (httpx honours
    ``HTTPS_PROXY`` and friends): a failure to connect is then often the proxy's."""
    import urllib.request

    proxy = urllib.request.getproxies().get(url.scheme)
    if not proxy or urllib.request.proxy_bypass(url.host):
        return ""
    try:
        shown = _where(httpx.URL(proxy))  # no credentials
    except (httpx.InvalidURL, TypeError, ValueError):
        shown = "(an invalid proxy URL)"
    return f" through the proxy {shown} (from the environment)"


def _reason(exc: httpx.TransportError) -> str:
    """Why a transport failed, in a few words (the innermost cause says it best)."""
    inner: BaseException = exc
    for _ in range(20):  # bounded: a cycle of causes must not hang an error message
        if isinstance(inner, BaseExceptionGroup) and inner.exceptions:
            inner = inner.exceptions[0]  # trio: "all attempts to connect ... failed"
            continue
        nested = inner.__cause__ or inner.__context__
        if nested is None:
            break
        inner = nested
    text = str(inner) or str(exc) or type(exc).__name__
    if isinstance(inner, ConnectionRefusedError) or "refused" in text.lower():
        return "connection refused (is the server running?)"
    return f"{type(exc).__name__}: {text}"


class _FirstByte:
    """Bounds the wait for the answer's first byte by ``first_byte_timeout`` (and the
    deadline): one cancel scope per step, no task (this is on every call's path)."""

    __slots__ = ("bound", "provider", "until", "where")

    def __init__(
        self, provider: HttpProvider, where: str, start: float, until: float | None
    ) -> None:
        self.provider = provider
        self.where = where
        self.until = until
        bound = start + provider.first_byte_timeout
        self.bound = bound if until is None else min(bound, until)

    async def wait(self, step: Awaitable[T]) -> T:
        """Await ``step`` (sending the request, or the first piece of the body).

        Raises:
            TimeoutError: past the first byte's bound or the deadline.
        """
        with anyio.fail_after(max(0.0, self.bound - anyio.current_time())):
            return await step

    def timed_out(self) -> ErrorEvent:
        """The error of a first byte that did not come in time."""
        provider = self.provider
        now = anyio.current_time()
        if self.until is not None and now >= self.until - 1e-3:
            return provider._past_deadline()
        return ErrorEvent(
            kind=ErrorKind.TIMEOUT,
            message=(
                f"{provider.provider_name}: no answer from {self.where} within "
                f"{provider.first_byte_timeout:g}s (first_byte_timeout; a model that thinks "
                "silently for longer needs a larger one)"
            ),
        )


def _until(when: float | None) -> AbstractContextManager[Any]:
    """A scope raising ``TimeoutError`` at ``when`` (``anyio.current_time()``), or nothing.

    It wraps one await at a time, never a ``yield``: a cancel scope must not stay open across
    the suspension points of an async generator.
    """
    if when is None:
        return contextlib.nullcontext()
    return anyio.fail_after(max(0.0, when - anyio.current_time()))


class _Idle(TimeoutError):
    """No byte from the server for ``idle_timeout`` seconds, between two pieces of the body."""


async def _next(chunks: AsyncIterator[bytes], until: float | None, idle: float) -> bytes | None:
    """The next piece of the body, ``None`` at its end.

    Raises:
        _Idle: nothing came for ``idle`` seconds.
        TimeoutError: past ``until`` (the deadline).
    """
    now = anyio.current_time()
    bound = now + idle
    if until is not None and until <= bound:
        with _until(until):
            return await anext(chunks, None)
    with anyio.move_on_after(idle) as waited:
        return await anext(chunks, None)
    assert waited.cancelled_caught
    raise _Idle


async def _read_limited(response: httpx.Response) -> bytes:
    parts: list[bytes] = []
    size = 0
    chunks = response.aiter_bytes()
    try:
        async for chunk in chunks:
            parts.append(chunk)
            size += len(chunk)
            if size >= _MAX_ERROR_BODY:
                break
    finally:
        await _close(response, chunks)
    body = b"".join(parts)
    if len(body) > _MAX_ERROR_BODY:  # the cut is marked, so that a key cut in two is found
        body = body[:_MAX_ERROR_BODY] + CUT.encode()
    return body


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what is left of a complete answer (its ``[DONE]``, the end of its body), briefly
    and boundedly, so that its connection goes back to the pool for the next call instead of
    being dropped. What does not end soon is dropped after all."""
    size = 0
    with anyio.move_on_after(_DRAIN_SECONDS):
        async for chunk in chunks:
            size += len(chunk)
            if size > _DRAIN_BYTES:
                return


async def _close(response: httpx.Response, chunks: AsyncIterator[bytes] | None) -> None:
    """Close ``response``; then run httpx's chain of body generators to its end.

    Closing drops the connection when the body was not read to its end. httpx reads a body
    through several nested async generators, and closing the outer one leaves the inner ones
    suspended for the garbage collector (trio warns about each). Iterating once more over
    the closed stream makes every one of them finish, at once.
    """
    await response.aclose()
    if chunks is not None:
        with contextlib.suppress(Exception):
            async for _ in chunks:
                pass
