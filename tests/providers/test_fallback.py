"""The model fallback chain: switches on classified failures, with retries and abort."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from agentloop import (
    Agent,
    AgentEvent,
    AssistantMessage,
    ErrorKind,
    MessageUpdate,
    ModelSpec,
    Pricing,
    StopReason,
    StreamRetry,
    Usage,
    UserMessage,
)
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.retry import ExponentialBackoff, NoRetry
from agentloop.stream import StreamStart, TextDelta, TextStart
from agentloop.testing import ScriptedStream, events_for, reply_error, reply_text
from agentloop_providers import FallbackStream, FallbackSwitch
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.openai_chat import OpenAIChatProvider

from ._fixtures import FIXTURES
from ._loopback import Reply, serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agentloop import StreamOptions
    from agentloop.stream import AssistantMessageEvent, LlmContext

pytestmark = pytest.mark.anyio

BIG = ModelSpec(provider="big", model_id="b", context_window=200_000)
SMALL = ModelSpec(provider="small", model_id="s", context_window=8_000)
OTHER = ModelSpec(provider="other", model_id="o", context_window=128_000)


async def _run(
    chain: FallbackStream, *, retry: Any = None, **config: Any
) -> tuple[Any, list[AgentEvent]]:
    events: list[AgentEvent] = []
    result = await run_loop(
        [UserMessage.from_text("hi")],
        AgentContext(),
        AgentLoopConfig(
            model=chain.model, stream_fn=chain, retry_strategy=retry or NoRetry(), **config
        ),
        on_event=events.append,
    )
    return result, events


async def test_a_throttled_model_hands_over_to_the_next() -> None:
    first = ScriptedStream([reply_error(ErrorKind.THROTTLED, "slow down")])
    second = ScriptedStream([reply_text("from the second")])
    switches: list[FallbackSwitch] = []
    chain = FallbackStream([(SMALL, first), (OTHER, second)], on_switch=switches.append)
    result, events = await _run(chain)
    assert result.stop_reason is StopReason.STOP
    assert result.text == "from the second"
    final = result.messages[-1]
    assert (final.provider, final.model_id) == ("other", "o")  # the model that answered
    assert switches == [
        FallbackSwitch(
            from_model="small:s", to_model="other:o", kind=ErrorKind.THROTTLED, message="slow down"
        )
    ]
    starts = [
        e.event for e in events if isinstance(e, MessageUpdate) and isinstance(e.event, StreamStart)
    ]
    assert [(s.provider, s.model_id) for s in starts if s.provider] == [
        ("small", "s"),
        ("other", "o"),
    ]
    assert not [e for e in events if isinstance(e, StreamRetry)]  # one call, two models


async def test_an_overflow_skips_to_a_larger_window() -> None:
    small = ScriptedStream([reply_error(ErrorKind.CONTEXT_OVERFLOW, "prompt is too long")])
    smaller = ScriptedStream([reply_text("never asked")])
    big = ScriptedStream([reply_text("room enough")])
    tiny = ModelSpec(provider="tiny", model_id="t", context_window=4_000)
    chain = FallbackStream([(SMALL, small), (tiny, smaller), (BIG, big)])
    result, _ = await _run(chain)
    assert result.text == "room enough"
    assert len(smaller.calls) == 0


@pytest.mark.parametrize("kind", [ErrorKind.AUTH, ErrorKind.CONTENT_FILTERED, ErrorKind.OTHER])
async def test_other_failures_do_not_switch(kind: ErrorKind) -> None:
    second = ScriptedStream([reply_text("never asked")])
    chain = FallbackStream([(SMALL, ScriptedStream([reply_error(kind, "no")])), (OTHER, second)])
    result, _ = await _run(chain)
    assert result.stop_reason is StopReason.ERROR
    assert result.error_kind is kind
    assert not second.calls


async def test_a_failure_after_content_streamed_does_not_switch() -> None:
    broken = [*events_for(reply_text("partial"))[:-1], reply_error(ErrorKind.NETWORK, "cut")]
    second = ScriptedStream([reply_text("never asked")])
    chain = FallbackStream([(SMALL, ScriptedStream([broken])), (OTHER, second)])
    result, _ = await _run(chain)
    assert result.error_kind is ErrorKind.NETWORK
    assert not second.calls


async def test_when_every_model_fails_the_loop_retries_from_the_first() -> None:
    first = ScriptedStream([reply_error(ErrorKind.THROTTLED, "a1"), reply_text("first, later")])
    second = ScriptedStream([reply_error(ErrorKind.NETWORK, "b1")])
    chain = FallbackStream([(SMALL, first), (OTHER, second)])
    retry = ExponentialBackoff(max_attempts=2, base_delay=0.001, jitter=False)
    result, events = await _run(chain, retry=retry)
    assert result.text == "first, later"
    assert [e.message for e in events if isinstance(e, StreamRetry)] == ["b1"]
    assert (len(first.calls), len(second.calls)) == (2, 1)


async def test_abort_closes_the_stream_in_use() -> None:
    closed = anyio.Event()
    streaming = anyio.Event()

    def endless(model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        async def stream() -> AsyncIterator[AssistantMessageEvent]:
            try:
                yield StreamStart()
                yield TextStart(index=0)
                while True:
                    yield TextDelta(index=0, delta="x")
                    streaming.set()
                    await anyio.sleep(0.01)
            finally:
                closed.set()

        return stream()

    chain = FallbackStream(
        [(SMALL, ScriptedStream([reply_error(ErrorKind.NETWORK, "down")])), (OTHER, endless)]
    )
    agent = Agent(model=chain.model, stream_fn=chain)
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            result = await agent.prompt("go", raise_on_error=False)
            assert result.stop_reason is StopReason.ABORTED

        tg.start_soon(run)
        await streaming.wait()
        agent.abort()
    with anyio.fail_after(5):
        await closed.wait()


async def test_a_fallback_answer_is_priced_at_its_own_prices() -> None:
    priced_first = ModelSpec(provider="a", model_id="a", pricing=Pricing(input=100.0))
    priced_second = ModelSpec(provider="b", model_id="b", pricing=Pricing(input=1.0))
    usage = Usage(input=1_000_000, total=1_000_000)
    chain = FallbackStream(
        [
            (priced_first, ScriptedStream([reply_error(ErrorKind.THROTTLED, "busy")])),
            (priced_second, ScriptedStream([reply_text("cheap", usage=usage)])),
        ]
    )
    result, _ = await _run(chain)
    assert result.cost.total == pytest.approx(1.0)


async def test_over_http_the_key_stays_with_its_provider() -> None:
    # The agent's key is resolved for its (first) model's provider; the fallback provider
    # must not receive it.
    anthropic_body = (FIXTURES / "anthropic/tool_use_text_then_tool.sse").read_bytes()
    async with serve([Reply(status=429, body=b'{"error": {"message": "rate limited"}}')]) as openai:
        async with serve([Reply(body=anthropic_body)]) as anthropic:
            chain = FallbackStream(
                [
                    (
                        ModelSpec(provider="openai", model_id="gpt-4.1"),
                        OpenAIChatProvider(base_url=openai.base_url),
                    ),
                    (
                        ModelSpec(provider="anthropic", model_id="claude"),
                        AnthropicProvider(base_url=anthropic.base_url, api_key="anthropic-own-key"),
                    ),
                ]
            )

            async def key(provider: str) -> str:
                assert provider == "openai"
                return "openai-secret-key"

            try:
                events: list[AgentEvent] = []
                result = await run_loop(
                    [UserMessage.from_text("weather?")],
                    AgentContext(),
                    AgentLoopConfig(
                        model=chain.model,
                        stream_fn=chain,
                        get_api_key=key,
                        retry_strategy=NoRetry(),
                    ),
                    on_event=events.append,
                )
            finally:
                await chain.aclose()
    assert openai.requests[0].headers["authorization"] == "Bearer openai-secret-key"
    assert anthropic.requests[0].headers["x-api-key"] == "anthropic-own-key"
    assert "openai-secret-key" not in json.dumps(anthropic.requests[0].headers)
    answer = next(m for m in result.messages if isinstance(m, AssistantMessage))
    assert answer.provider == "anthropic"
    assert answer.tool_calls[0].name == "get_weather"


def test_an_empty_chain_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        FallbackStream([])


def test_model_strings_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    chain = FallbackStream(["anthropic:claude-sonnet-4-5", "openai:gpt-4.1"])
    assert chain.model.model_id == "claude-sonnet-4-5"
    assert chain.model.context_window == 200_000
    assert repr(chain) == "FallbackStream([anthropic:claude-sonnet-4-5, openai:gpt-4.1])"
