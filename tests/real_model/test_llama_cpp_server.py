"""End to end against a real model: llama_cpp.server serving SmolLM2-135M-Instruct.

Run by ``nox -s real-model`` (both backends); deselected from the default run. The model is
tiny and its answers are not the point: the wire is. Every quirk found here also has a recorded
fixture in ``tests/fixtures/llamacpp_python`` and a test in ``tests/providers`` that CI runs.
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import TYPE_CHECKING, Any, cast

import anyio
import httpx
import msgspec
import pytest

from agentloop import (
    Agent,
    AgentEvent,
    AssistantMessage,
    ErrorKind,
    MessageUpdate,
    NetworkError,
    StopReason,
    StreamOptions,
    ToolResultMessage,
    UserMessage,
    tool,
)
from agentloop.loop import AgentContext, AgentLoopConfig, agent_loop, run_loop
from agentloop.models import resolve_model
from agentloop.retry import ExponentialBackoff
from agentloop.stream import TextDelta
from agentloop_providers import create_provider

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from ._server import RunningServer

pytestmark = [pytest.mark.anyio, pytest.mark.real_model]

MODEL = "llamacpp_python:smollm2"
SEED = {"extra_body": {"seed": 3}}  # llama_cpp.server samples with it: runs repeat


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny and 21 C in {city}."


def _first_text(event: AgentEvent) -> bool:
    return isinstance(event, MessageUpdate) and isinstance(event.event, TextDelta)


async def _wait_for(predicate: Any, seconds: float) -> bool:
    """Poll another process's state (its log, its life) for up to ``seconds``."""
    with anyio.move_on_after(seconds):
        while not predicate():  # noqa: ASYNC110 (another process: nothing to wait on)
            await anyio.sleep(0.1)
        return True
    return False


async def test_a_streamed_text_answer(llama_server: RunningServer) -> None:
    agent = Agent(
        model=MODEL,
        system_prompt="Be brief.",
        stream_options=StreamOptions(max_tokens=32, extra=SEED),
    )
    deltas: list[AgentEvent] = []
    agent.subscribe(lambda e: deltas.append(e) if _first_text(e) else None)
    try:
        result = await agent.prompt("Say hello.")
    finally:
        await agent.stream_fn.aclose()  # type: ignore[attr-defined]
    assert result.stop_reason in (StopReason.STOP, StopReason.LENGTH), result.error
    assert result.text.strip()
    assert len(deltas) > 1  # streamed, token by token
    # The server reports no usage: an estimate, marked as one.
    assert result.usage.estimated and result.usage.output > 0


async def test_a_tool_forced_with_tool_choice_then_a_final_answer(
    llama_server: RunningServer,
) -> None:
    spec, provider = resolve_model(MODEL)

    def turn_options(ctx: Any, options: StreamOptions) -> StreamOptions:
        # Forced until the tool ran once (the model may send broken JSON: it is told, and
        # asked again); then the model answers freely.
        ran = any(isinstance(m, ToolResultMessage) and not m.is_error for m in ctx.messages)
        return msgspec.structs.replace(options, tool_choice=None if ran else "get_weather")

    config = AgentLoopConfig(
        model=spec,
        stream_fn=provider,
        tools=[get_weather],
        stream_options=StreamOptions(max_tokens=48, extra=SEED),
        turn_options=turn_options,
    )
    try:
        with anyio.fail_after(100):
            result = await run_loop(
                [UserMessage.from_text("What is the weather in Paris?")],
                AgentContext(system_prompt="You are helpful."),
                config,
            )
    finally:
        await provider.aclose()  # type: ignore[attr-defined]
    assert result.stop_reason in (StopReason.STOP, StopReason.LENGTH), result.error
    answers = [m for m in result.messages if isinstance(m, AssistantMessage)]
    assert answers[0].tool_calls and answers[0].tool_calls[0].name == "get_weather"
    ran = [m for m in result.messages if isinstance(m, ToolResultMessage) and not m.is_error]
    assert ran and ran[0].text.startswith("Sunny and 21 C in")
    assert not answers[-1].tool_calls and answers[-1].text.strip()  # the final answer


class _Tee(httpx.AsyncBaseTransport):
    """A transport that keeps every byte of the response bodies it carried."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.raw = bytearray()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        raw = self.raw
        body = cast("httpx.AsyncByteStream", response.stream)

        class _Stream(httpx.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in body:
                    raw.extend(chunk)
                    yield chunk

            async def aclose(self) -> None:
                await body.aclose()

        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Stream(),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_long_generation_with_keep_alive_comments(llama_server: RunningServer) -> None:
    tee = _Tee()
    async with httpx.AsyncClient(transport=tee, timeout=60) as client:
        provider = create_provider("llamacpp_python", base_url=llama_server.base_url, client=client)
        agent = Agent(
            model="llamacpp_python:smollm2",
            stream_fn=provider,
            stream_options=StreamOptions(max_tokens=400, extra=SEED),
        )
        started = time.monotonic()
        result = await agent.prompt("Write a very long story about a dragon.")
        took = time.monotonic() - started
    assert result.error is None
    assert len(result.text) > 500
    pings = re.findall(rb"^: ping", bytes(tee.raw), re.M)
    assert pings, f"no keep-alive comment in {took:.1f}s of streaming"
    assert ": ping" not in result.text


async def test_abort_mid_stream_closes_the_connection(llama_server: RunningServer) -> None:
    spec, provider = resolve_model(MODEL)
    config = AgentLoopConfig(
        model=spec, stream_fn=provider, stream_options=StreamOptions(max_tokens=600, extra=SEED)
    )
    log = llama_server.log
    seen = log.read_text(errors="replace").count("Disconnected from client")
    try:
        prompt = [UserMessage.from_text("Write a very long story about a dragon.")]
        async with agent_loop(prompt, AgentContext(), config) as events:
            async for event in events:
                if _first_text(event):
                    break  # leaving the stream aborts the run
        # The server noticed the client went away (it stops generating for it).
        closed = await _wait_for(
            lambda: log.read_text(errors="replace").count("Disconnected from client") > seen, 15
        )
        assert closed, "the server never saw the connection close"
        # And it serves the next request.
        with anyio.fail_after(60):
            again = await run_loop(
                [UserMessage.from_text("Say hi.")],
                AgentContext(),
                dataclasses.replace(config, stream_options=StreamOptions(max_tokens=8)),
            )
        assert again.error is None and again.text
    finally:
        await provider.aclose()  # type: ignore[attr-defined]


async def test_a_server_killed_mid_stream_is_a_typed_error(doomed_server: RunningServer) -> None:
    provider = create_provider("llamacpp_python", base_url=doomed_server.base_url)
    spec, _ = resolve_model(MODEL)
    config = AgentLoopConfig(
        model=spec,
        stream_fn=provider,
        stream_options=StreamOptions(max_tokens=600, extra=SEED),
        retry_strategy=ExponentialBackoff(max_attempts=2, base_delay=0.05, jitter=False),
    )

    def on_event(event: AgentEvent) -> None:
        if _first_text(event):
            doomed_server.kill()  # SIGKILL by PID, mid-stream

    try:
        with anyio.fail_after(60):
            result = await run_loop(
                [UserMessage.from_text("Write a very long story about a dragon.")],
                AgentContext(),
                config,
                on_event=on_event,
            )
    finally:
        await provider.aclose()
    assert doomed_server.process.poll() is not None
    assert result.stop_reason is StopReason.ERROR
    assert result.error_kind is ErrorKind.NETWORK
    with pytest.raises(NetworkError):
        result.raise_for_error()


async def test_several_agents_at_once(llama_server: RunningServer) -> None:
    prompts = ["Say hello.", "Name a colour.", "Name a fruit.", "Count to three."]
    results: dict[str, Any] = {}

    async def one(prompt: str) -> None:
        agent = Agent(
            model=MODEL, system_prompt="Be brief.", stream_options=StreamOptions(max_tokens=24)
        )
        try:
            results[prompt] = await agent.prompt(prompt)
        finally:
            await agent.stream_fn.aclose()  # type: ignore[attr-defined]

    with anyio.fail_after(100):
        async with anyio.create_task_group() as tg:
            for prompt in prompts:
                tg.start_soon(one, prompt)
    assert sorted(results) == sorted(prompts)
    for prompt, result in results.items():
        assert result.error is None, (prompt, result.error)
        assert result.text.strip(), prompt
