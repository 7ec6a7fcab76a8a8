"""The troubleshooting page quotes the library's messages exactly: each is triggered here, for
real (servers on 127.0.0.1 that refuse, answer 401, 404 or 429, stall, or say nothing), and
must be on the page as the library prints it. A message that changes without its page fails.

The page shows local addresses with their default ports and the default timeouts; both are
normalised before comparing (``127.0.0.1:PORT``, ``Ns``).
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from pathlib import Path

import anyio
import pytest

import agentloop as al
from agentloop.retry import NoRetry
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from tests.providers._loopback import Reply, serve

pytestmark = pytest.mark.anyio

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md").read_text()


def _normal(text: str) -> str:
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    return re.sub(r"\b\d+(\.\d+)?\s?s\b", "Ns", text)


def assert_on_page(line: str) -> None:
    assert _normal(line) in _normal(PAGE), line


def _shown(error: BaseException) -> str:
    """The last line of a traceback: the error's public class and its message."""
    return f"{type(error).__module__}.{type(error).__qualname__}: {error}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # closed again: a connection there is refused


async def _fails(model: str) -> al.AgentError:
    agent = al.Agent(model=model, retry_strategy=NoRetry())
    with pytest.raises(al.AgentError) as raised:
        await agent.prompt("Say hello.")
    return raised.value


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "LLAMACPP_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)


async def test_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    assert_on_page(_shown(await _fails("anthropic:claude-sonnet-4-5")))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-abc\n")
    assert_on_page(_shown(await _fails("anthropic:claude-sonnet-4-5")))
    refusal = (
        b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
    )
    async with serve([Reply(status=401, body=refusal, content_type="application/json")]) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{api.port}")
        assert_on_page(_shown(await _fails("anthropic:claude-sonnet-4-5")))


async def test_base_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLAMACPP_BASE_URL", f"http://127.0.0.1:{_free_port()}/v1")
    assert_on_page(_shown(await _fails("llamacpp:qwen")))
    not_found = b'{"error": "Not Found"}'
    async with serve([Reply(status=404, body=not_found, content_type="application/json")]) as api:
        monkeypatch.setenv("LLAMACPP_BASE_URL", f"http://127.0.0.1:{api.port}")  # no /v1
        assert_on_page(_shown(await _fails("llamacpp:qwen")))


async def test_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    first = b'data: {"choices":[{"index":0,"delta":{"content":"Thinking"}}]}\n\n'
    monkeypatch.setenv("AGENTLOOP_FIRST_BYTE_TIMEOUT", "0.2")
    async with serve([Reply(fault="stall", fault_at=0)]) as api:
        monkeypatch.setenv("LLAMACPP_BASE_URL", f"http://127.0.0.1:{api.port}/v1")
        assert_on_page(_shown(await _fails("llamacpp:qwen")))
    monkeypatch.setenv("AGENTLOOP_IDLE_TIMEOUT", "0.2")
    async with serve([Reply(body=first, fault="stall")]) as api:
        monkeypatch.setenv("LLAMACPP_BASE_URL", f"http://127.0.0.1:{api.port}/v1")
        assert_on_page(_shown(await _fails("llamacpp:qwen")))


async def test_throttling(monkeypatch: pytest.MonkeyPatch) -> None:
    limit = (
        b'{"type":"error","error":{"type":"rate_limit_error","message":"Number of request '
        b'tokens has exceeded your per-minute rate limit"}}'
    )
    async with serve([Reply(status=429, body=limit, content_type="application/json")]) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{api.port}")
        assert_on_page(_shown(await _fails("anthropic:claude-sonnet-4-5")))


def test_model_strings_and_the_synchronous_form() -> None:
    with pytest.raises(al.UnknownModel) as raised:
        al.Agent(model="claude-sonnet-4-5")
    assert_on_page(_shown(raised.value))
    agent = al.Agent(
        model=al.ModelSpec(provider="scripted", model_id="demo"),
        stream_fn=ScriptedStream([reply_text("hi")]),
    )

    async def inside_a_loop() -> None:
        agent.prompt_sync("hi")

    with pytest.raises(RuntimeError) as inside:
        anyio.run(inside_a_loop)
    assert_on_page(f"RuntimeError: {inside.value}")


def test_asyncio_code_in_a_tool_under_trio(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("trio")

    @al.tool
    async def wait_a_bit() -> str:
        """Wait."""
        await asyncio.sleep(0.01)
        return "done"

    agent = al.Agent(
        model=al.ModelSpec(provider="scripted", model_id="demo"),
        stream_fn=ScriptedStream([reply_tool_calls(("wait_a_bit", {})), reply_text("ok")]),
        tools=[wait_a_bit],
    )
    with caplog.at_level(logging.WARNING, logger="agentloop.tools"):
        result = agent.prompt_sync("go", backend="trio")
    assert_on_page(caplog.records[0].getMessage())
    results = [m for m in result.messages if isinstance(m, al.ToolResultMessage)]
    assert_on_page(f"the model reads `{results[0].text}`")
