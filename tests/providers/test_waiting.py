"""A server that does not answer, over real HTTP on 127.0.0.1: the wait for the first byte is
bounded and said aloud, a timeout is not retried by default, and every transport error says
where the provider looked and how to point it elsewhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import anyio.abc
import pytest
from anyio.abc import SocketAttribute

import agentloop as al
from agentloop_providers.openai_chat import OpenAIChatProvider

from ._loopback import Reply, serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio

MODEL = al.ModelSpec(provider="openai", model_id="m")
ONE_ANSWER = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


class Silent:
    """Takes connections and requests, and never answers one."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        self.connections += 1
        async with stream:
            try:
                while await stream.receive():
                    pass
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                pass


async def _silent() -> AsyncIterator[Silent]:
    server = Silent()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    server.port = listener.extra(SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server.handle)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()


silent = pytest.fixture(_silent)


def _agent(provider: OpenAIChatProvider, **kwargs: object) -> al.Agent[str]:
    return al.Agent(model=MODEL, stream_fn=provider, **kwargs)  # type: ignore[arg-type]


async def test_a_server_that_never_answers_is_given_up_once(silent: Silent) -> None:
    provider = OpenAIChatProvider(base_url=silent.base_url, api_key="k", first_byte_timeout=1.0)
    agent = _agent(provider, retry_strategy=al.retry.ExponentialBackoff(base_delay=0))
    with anyio.fail_after(30), pytest.raises(al.StreamError) as caught:
        async with provider:
            await agent.prompt("hi")
    assert caught.value.kind is al.ErrorKind.TIMEOUT
    assert f"no answer from {silent.base_url}/chat/completions within 1s" in str(caught.value)
    assert silent.connections == 1  # a timeout is not retried by default


async def test_a_timeout_is_retried_when_asked(silent: Silent) -> None:
    provider = OpenAIChatProvider(base_url=silent.base_url, api_key="k", first_byte_timeout=0.5)
    backoff = al.retry.ExponentialBackoff(base_delay=0, max_attempts=2, retry_timeouts=True)
    agent = _agent(provider, retry_strategy=backoff, raise_on_error=False)
    with anyio.fail_after(30):
        async with provider:
            result = await agent.prompt("hi")
    assert result.error_kind is al.ErrorKind.TIMEOUT
    assert silent.connections == 2


async def test_headers_then_silence_is_the_same_first_byte_timeout() -> None:
    reply = Reply(body=ONE_ANSWER, gate_at=0)  # headers sent, the body held
    async with serve([reply]) as server:
        provider = OpenAIChatProvider(
            base_url=server.base_url, api_key="k", first_byte_timeout=0.8, idle_timeout=60
        )
        agent = _agent(provider, raise_on_error=False)
        with anyio.fail_after(30):
            async with provider:
                result = await agent.prompt("hi")
    assert result.error_kind is al.ErrorKind.TIMEOUT
    assert len(server.requests) == 1


async def test_a_slow_first_byte_within_the_bound_is_waited_for() -> None:
    reply = Reply(body=ONE_ANSWER, gate_at=0)
    async with serve([reply]) as server:
        provider = OpenAIChatProvider(base_url=server.base_url, api_key="k", first_byte_timeout=30)
        agent = _agent(provider)
        async with anyio.create_task_group() as tg:

            async def open_the_gate_later() -> None:
                await anyio.sleep(0.5)  # the answer starts late: the wait is not given up
                server.gate.set()

            tg.start_soon(open_the_gate_later)
            with anyio.fail_after(30):
                async with provider:
                    result = await agent.prompt("hi")
    assert result.output == "hi"


async def test_a_refused_connection_names_the_url_and_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    await listener.aclose()  # nothing listens there now
    monkeypatch.setenv("LLAMACPP_BASE_URL", f"http://127.0.0.1:{port}/v1")
    agent = al.Agent(
        model="llamacpp:qwen", retry_strategy=al.retry.ExponentialBackoff(max_attempts=1)
    )
    with pytest.raises(al.NetworkError) as caught:
        await agent.prompt("hi")
    message = str(caught.value)
    assert f"http://127.0.0.1:{port}/v1/chat/completions" in message
    assert "connection refused" in message
    assert "LLAMACPP_BASE_URL" in message


@pytest.mark.parametrize(
    ("preset", "variable"),
    [
        ("llamacpp", "LLAMACPP_BASE_URL"),
        ("vllm", "VLLM_BASE_URL"),
        ("lmstudio", "LMSTUDIO_BASE_URL"),
        ("ollama", "OLLAMA_BASE_URL or OLLAMA_HOST"),
    ],
)
async def test_a_404_from_a_preset_names_the_url_and_the_variable(
    monkeypatch: pytest.MonkeyPatch, preset: str, variable: str
) -> None:
    reply = Reply(status=404, body=b'{"error":{"message":"File Not Found"}}')
    async with serve([reply]) as server:
        monkeypatch.setenv(f"{preset.upper()}_BASE_URL", f"{server.base_url}/wrong")
        agent = al.Agent(model=f"{preset}:m", raise_on_error=False)
        result = await agent.prompt("hi")
    assert f"{server.base_url}/wrong" in (result.error or "")
    assert variable in (result.error or "")


async def test_a_refused_proxy_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    await listener.aclose()  # the proxy is not running
    monkeypatch.setenv("HTTPS_PROXY", f"http://user:secret@127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    agent = al.Agent(
        model="anthropic:claude-sonnet-4-5",
        retry_strategy=al.retry.ExponentialBackoff(max_attempts=1),
    )
    with pytest.raises(al.NetworkError) as caught:
        await agent.prompt("hi")
    message = str(caught.value)
    assert f"through the proxy http://127.0.0.1:{port}/" in message
    assert "secret" not in message


def test_a_provider_without_its_settings_is_an_unknown_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    with pytest.raises(al.UnknownModel, match="AZURE_OPENAI_ENDPOINT"):
        al.Agent(model="azure:gpt-4o")


async def test_http2_is_offered_when_asked_and_falls_back_on_plain_http() -> None:
    reply = Reply(body=ONE_ANSWER)
    async with serve([reply]) as server:
        provider = OpenAIChatProvider(base_url=server.base_url, api_key="k", http2=True)
        async with provider:
            assert provider.client._transport._pool._http2  # type: ignore[attr-defined]
            result = await _agent(provider).prompt("hi")
    assert result.output == "hi"  # plain http: HTTP/1.1, as httpx negotiates
