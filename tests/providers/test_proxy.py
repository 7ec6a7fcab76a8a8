"""The proxy client against ``ProxyApp`` served by a real ASGI server (uvicorn) on 127.0.0.1.

uvicorn runs on asyncio, so it runs in a thread of its own with its own event loop, on a
socket the test binds first (clients can connect before the server loop starts: no polling);
the client side runs under both asyncio and trio.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import httpx
import msgspec
import pytest
import uvicorn

from agentloop import (
    Agent,
    ErrorKind,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
    ToolCall,
    Usage,
    UserMessage,
    tool,
)
from agentloop.stream import AssistantMessageEvent, LlmContext, StreamStart, TextDelta, TextStart
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from agentloop_providers.proxy import ProxyProvider, ProxyRequest
from agentloop_providers.proxy_server import ProxyApp

from ._util import collect, opened

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

pytestmark = pytest.mark.anyio

TOKEN = "proxy-token-123456"
MODEL = ModelSpec(provider="anthropic", model_id="claude-x")
CONTEXT = LlmContext(system_prompt="sys", messages=[UserMessage.from_text("hi")])


@contextlib.contextmanager
def uvicorn_serving(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread; yield the base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/v1/stream"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
        assert not thread.is_alive()


async def test_the_message_is_rebuilt_from_streamed_deltas() -> None:
    answer = reply_tool_calls(
        ("weather", {"city": "Paris"}),
        text="Let me check.",
        usage=Usage(input=10, output=5, total=15),
    )
    answer = type(answer)(
        content=[Thinking(thinking="Plan: call weather.", signature="sig"), *answer.content],
        stop_reason=answer.stop_reason,
        usage=answer.usage,
    )
    upstream = ScriptedStream([answer], chunk_size=4)
    with uvicorn_serving(ProxyApp(upstream, token=TOKEN, upstream_api_key="upstream-key")) as url:
        async with ProxyProvider(url, token=TOKEN) as provider:
            with anyio.fail_after(30):
                events, message = await collect(
                    provider, MODEL, CONTEXT, StreamOptions(temperature=0.5)
                )
    assert message.stop_reason is StopReason.TOOL_USE
    assert message.content == answer.content
    assert message.usage == answer.usage
    assert len([e for e in events if isinstance(e, TextDelta)]) == 4  # deltas, not a whole message
    (call,) = upstream.calls
    assert call.options.api_key == "upstream-key"  # the server's key, never the client's token
    assert call.options.temperature == 0.5
    assert call.context.system_prompt == "sys"
    assert call.model == MODEL


async def test_a_wrong_token_is_an_auth_error_and_never_reaches_upstream() -> None:
    upstream = ScriptedStream([reply_text("nope")])
    with uvicorn_serving(ProxyApp(upstream, token=TOKEN)) as url:
        async with ProxyProvider(url, token="wrong-token-0000") as provider:
            with anyio.fail_after(30):
                _, message = await collect(provider, MODEL, CONTEXT, StreamOptions())
    assert message.error_kind is ErrorKind.AUTH
    assert "wrong-token-0000" not in (message.error_message or "")
    assert upstream.calls == []


async def test_the_token_can_come_from_get_api_key_and_stays_out_of_the_body() -> None:
    seen: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(401)

    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        provider = ProxyProvider("http://proxy.invalid/stream", client=client)
        await collect(provider, MODEL, CONTEXT, StreamOptions(api_key=TOKEN))
    assert seen[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN.encode() not in seen[0].content
    sent = msgspec.json.decode(seen[0].content, type=ProxyRequest)
    assert sent == ProxyRequest(model=MODEL, context=CONTEXT, options=StreamOptions())


async def test_an_upstream_error_arrives_as_a_classified_error() -> None:
    from agentloop.testing import reply_error

    upstream = ScriptedStream([reply_error(ErrorKind.THROTTLED, "overloaded", retry_after=2.0)])
    with uvicorn_serving(ProxyApp(upstream, token=TOKEN)) as url:
        async with ProxyProvider(url, token=TOKEN) as provider:
            with anyio.fail_after(30):
                events, message = await collect(provider, MODEL, CONTEXT, StreamOptions())
    assert message.error_kind is ErrorKind.THROTTLED
    assert events[-1].retry_after == 2.0  # type: ignore[union-attr]


async def test_a_client_that_goes_away_closes_the_upstream_call() -> None:
    closed = threading.Event()

    async def upstream(
        model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        try:
            yield StreamStart(model_id="m")
            yield TextStart(index=0)
            yield TextDelta(index=0, delta="partial")
            await anyio.sleep_forever()  # until the proxy cancels us
        finally:
            closed.set()

    with uvicorn_serving(ProxyApp(upstream, token=TOKEN)) as url:
        async with ProxyProvider(url, token=TOKEN) as provider:
            with anyio.fail_after(30):
                async with opened(provider, MODEL, CONTEXT, StreamOptions()) as stream:
                    async for event in stream:
                        if isinstance(event, TextDelta):
                            break  # leaving closes the response, so the connection
                got = await anyio.to_thread.run_sync(closed.wait, 20)
    assert got


async def test_an_agent_run_through_the_proxy() -> None:
    upstream = ScriptedStream([reply_tool_calls(("add", {"a": 2, "b": 3})), reply_text("5")])
    added: list[int] = []

    @tool
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        added.append(a + b)
        return a + b

    with uvicorn_serving(ProxyApp(upstream, token=TOKEN)) as url:
        async with ProxyProvider(url) as provider:
            agent = Agent(model=MODEL, stream_fn=provider, tools=[add], get_api_key=_token)
            with anyio.fail_after(60):
                result = await agent.prompt("2 + 3?")
    assert result.stop_reason is StopReason.STOP
    assert result.text == "5"
    assert added == [5]
    last = upstream.calls[-1].context.messages
    assert [type(m).__name__ for m in last] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
    ]
    assert isinstance(last[1].content[0], ToolCall)
    assert isinstance(last[2].content[0], Text)


async def _token(provider: str) -> str:
    return TOKEN
