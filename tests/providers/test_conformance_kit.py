"""``agentloop.testing.check_stream_fn``: our adapters pass it, broken stream functions do not.

Each adapter runs the whole kit over loopback against a fake server answering in that API's
recorded wire format: the text, tool and thinking scripts get recorded answers, a call with the
bad key gets HTTP 401, and the text answers after the first are held half way, so that closing
and cancelling happen while the adapter waits on its connection, which the server must then
see dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest

from agentloop import (
    ErrorKind,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
)
from agentloop.stream import Done, ErrorEvent, StreamStart, TextDelta, TextStart, ToolSchema
from agentloop.testing import (
    ConformanceError,
    FunctionStream,
    ScriptedStream,
    check_stream_fn,
    reply_error,
    reply_text,
    reply_tool_calls,
)
from agentloop_providers import FallbackStream, create_provider
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.azure import AzureChatProvider
from agentloop_providers.bedrock import BedrockProvider
from agentloop_providers.gemini import GeminiProvider
from agentloop_providers.mistral import MistralProvider
from agentloop_providers.ollama import OllamaProvider
from agentloop_providers.openai_chat import OpenAIChatProvider
from agentloop_providers.openai_responses import OpenAIResponsesProvider
from agentloop_providers.xai import XaiChatProvider

from ._loopback import RecordedRequest, Reply, serve
from ._loopback_ii import _gate, fixture_bytes

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from agentloop import AssistantMessage, StreamOptions as Options
    from agentloop.stream import AssistantMessageEvent, LlmContext, StreamFn

pytestmark = pytest.mark.anyio

BAD_KEY = "conformance-bad-key"
SSE, NDJSON, ES = "text/event-stream", "application/x-ndjson", "application/vnd.amazon.eventstream"


@dataclass(frozen=True)
class Adapter:
    make: Callable[[str], StreamFn]
    model: ModelSpec
    text: str
    tool: str
    tool_name: str
    thinking: str | None
    content_type: str = SSE


def _schema(name: str) -> ToolSchema:
    return ToolSchema(name=name, description="A tool.", parameters={"type": "object"})


ADAPTERS: dict[str, Adapter] = {
    "anthropic": Adapter(
        lambda url: AnthropicProvider(base_url=url, api_key="k"),
        ModelSpec(provider="anthropic", model_id="claude-sonnet-4-5"),
        "anthropic/thinking_signature_text.sse",
        "anthropic/tool_use_text_then_tool.sse",
        "get_weather",
        "anthropic/thinking_signature_text.sse",
    ),
    "openai_chat": Adapter(
        lambda url: OpenAIChatProvider(base_url=url, api_key="k"),
        ModelSpec(provider="openai", model_id="gpt-4.1"),
        "openai_chat/refusal_deltas.sse",
        "openai_chat/single_tool_call.sse",
        "GetWeatherArgs",
        "xai/chat_reasoning_then_tool_call.chunks.jsonl",
    ),
    "openai_responses": Adapter(
        lambda url: OpenAIResponsesProvider(base_url=url, api_key="k"),
        ModelSpec(provider="openai", model_id="gpt-5"),
        "openai_responses/text_after_tool_result.sse",
        "openai_responses/function_call_stream.sse",
        "get_capital",
        "openai_responses/reasoning_summary_three_function_calls.chunks.jsonl",
    ),
    "gemini": Adapter(
        lambda url: GeminiProvider(base_url=url, api_key="k"),
        ModelSpec(provider="gemini", model_id="gemini-2.5-pro"),
        "gemini/thinking_thought_parts.sse",
        "gemini/function_call_gemini2.sse",
        "get_capital",
        "gemini/thinking_thought_parts.sse",
    ),
    "bedrock": Adapter(
        lambda url: BedrockProvider(base_url=url, api_key="k"),
        ModelSpec(provider="bedrock", model_id="us.anthropic.claude-sonnet-4-20250514-v1:0"),
        "bedrock/converse_stream_reasoning_claude.bin",
        "bedrock/converse_stream_text_then_tool_use_nova.bin",
        "get_temperature",
        "bedrock/converse_stream_reasoning_claude.bin",
        ES,
    ),
    "ollama": Adapter(
        lambda url: OllamaProvider(base_url=url),
        ModelSpec(provider="ollama", model_id="gemma3"),
        "ollama/chat_stream_text_gemma3.ndjson",
        "ollama/docs_chat_stream_tool_call.ndjson",
        "get_weather",
        "ollama/chat_stream_thinking_gpt_oss.ndjson",
        NDJSON,
    ),
    "mistral": Adapter(
        lambda url: MistralProvider(base_url=url, api_key="k"),
        ModelSpec(provider="mistral", model_id="magistral-medium-latest"),
        "mistral/magistral_thinking.sse",
        "mistral/tool_call_single_chunk.chunks.jsonl",
        "weather",
        None,
    ),
    "xai": Adapter(
        lambda url: XaiChatProvider(base_url=url, api_key="k"),
        ModelSpec(provider="xai", model_id="grok-3-mini"),
        "openai_chat/refusal_deltas.sse",
        "xai/chat_reasoning_then_tool_call.chunks.jsonl",
        "weather",
        "xai/chat_reasoning_then_tool_call.chunks.jsonl",
    ),
    "azure": Adapter(
        lambda url: AzureChatProvider(base_url=url, api_key="k"),
        ModelSpec(provider="azure", model_id="gpt-4.1"),
        "openai_chat/refusal_deltas.sse",
        "openai_chat/single_tool_call.sse",
        "GetWeatherArgs",
        None,
    ),
    "llamacpp_python": Adapter(
        lambda url: create_provider("llamacpp_python", base_url=url),
        ModelSpec(provider="llamacpp_python", model_id="smollm2"),
        "llamacpp_python/text_no_usage.sse",
        "llamacpp_python/named_tool_call.sse",
        "get_weather",
        None,
    ),
}


def _wants_thinking(body: dict[str, Any]) -> bool:
    keys = ("thinking", "reasoning_effort", "reasoning", "think", "additionalModelRequestFields")
    return any(k in body for k in keys) or "thinkingConfig" in body.get("generationConfig", {})


def _fake_server(adapter: Adapter) -> Callable[[RecordedRequest], Reply]:
    texts = 0

    def choose(request: RecordedRequest) -> Reply:
        nonlocal texts
        if any(BAD_KEY in value for value in request.headers.values()):
            error = b'{"error": {"type": "authentication_error", "message": "invalid key"}}'
            return Reply(status=401, body=error, content_type="application/json")
        body = json.loads(request.body)
        if body.get("tools") or body.get("toolConfig"):
            return Reply(body=fixture_bytes(adapter.tool), content_type=adapter.content_type)
        if adapter.thinking is not None and _wants_thinking(body):
            return Reply(body=fixture_bytes(adapter.thinking), content_type=adapter.content_type)
        texts += 1
        reply = Reply(body=fixture_bytes(adapter.text), content_type=adapter.content_type)
        if texts > 1:  # close and cancel: the body is held half way
            first = reply.body.index(b"\n") + 1  # NDJSON: after the first line
            reply.gate_at = _gate(reply) or max(first, len(reply.body) // 2)
        return reply

    return choose


@pytest.mark.parametrize("name", ADAPTERS)
async def test_every_adapter_passes_the_kit(name: str) -> None:
    adapter = ADAPTERS[name]
    async with serve([], _fake_server(adapter)) as server:
        provider = adapter.make(server.base_url)
        try:
            report = await check_stream_fn(
                provider,
                adapter.model,
                tool=_schema(adapter.tool_name),
                thinking=adapter.thinking is not None,
                error_options=StreamOptions(api_key=BAD_KEY),
                per_call=30,
            )
        finally:
            await provider.aclose()  # type: ignore[attr-defined]
        # Closing and cancelling dropped the held connections: the server saw both go.
        with anyio.fail_after(10):
            while server.disconnects < 2:
                await server.disconnected.wait()
                server.disconnected = anyio.Event()
    assert report.messages["error"].error_kind is ErrorKind.AUTH
    assert report.messages["tool"].tool_calls[0].name == adapter.tool_name


def _scripted(context: LlmContext) -> AssistantMessage:
    if context.tools:
        return reply_tool_calls((context.tools[0].name, {"city": "Paris"}))
    if "think" in context.messages[-1].content[0].text.lower():  # type: ignore[union-attr]
        return msgspec.structs.replace(
            reply_text("391"), content=[Thinking(thinking="17*23"), Text(text="391")]
        )
    return reply_text("Hello there.")


async def test_the_fakes_pass() -> None:
    await check_stream_fn(
        FunctionStream(_scripted), ModelSpec(provider="f", model_id="m"), thinking=True
    )


async def test_a_fallback_chain_passes() -> None:
    chain = FallbackStream(
        [
            (
                ModelSpec(provider="a", model_id="a"),
                ScriptedStream([reply_error(ErrorKind.THROTTLED)] * 9),
            ),
            (ModelSpec(provider="b", model_id="b"), FunctionStream(_scripted)),
        ]
    )
    await check_stream_fn(chain, chain.model)


# --------------------------------------------------------------------------- it can fail


def _events(*events: AssistantMessageEvent) -> Callable[..., AsyncIterator[AssistantMessageEvent]]:
    async def stream(
        model: ModelSpec, context: LlmContext, options: Options
    ) -> AsyncIterator[AssistantMessageEvent]:
        for event in events:
            yield event

    return stream


async def _swallows(
    model: ModelSpec, context: LlmContext, options: Options
) -> AsyncIterator[AssistantMessageEvent]:
    yield StreamStart()
    yield TextStart(index=0)
    yield TextDelta(index=0, delta="Hello")
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        yield ErrorEvent(kind=ErrorKind.NETWORK, message="cancelled", stop_reason=StopReason.ERROR)


async def _raises(
    model: ModelSpec, context: LlmContext, options: Options
) -> AsyncIterator[AssistantMessageEvent]:
    yield StreamStart()
    raise RuntimeError("adapter bug")


@pytest.mark.parametrize(
    ("stream_fn", "problem"),
    [
        (_events(TextStart(index=0), TextDelta(index=0, delta="hi"), Done()), "not ended"),
        (_events(TextDelta(index=0, delta="hi"), Done()), "never started"),
        (_events(TextStart(index=0), TextStart(index=0), Done()), "started twice"),
        (_events(StreamStart()), "without a terminal event"),
        (_raises, "raised RuntimeError: adapter bug"),
        (_swallows, "swallowed"),
        (lambda m, c, o: iter([Done()]), "no aclose"),
        (_events(Done(), Done()), "terminal but 1 follow"),
        (_events(Done(stop_reason=StopReason.STOP)), "no text in the answer"),
    ],
)
async def test_broken_stream_functions_fail(stream_fn: Any, problem: str) -> None:
    with pytest.raises(ConformanceError) as caught:
        await check_stream_fn(stream_fn, ModelSpec(provider="x", model_id="m"), per_call=5)
    assert any(problem in p for p in caught.value.problems), caught.value.problems


async def test_a_model_that_never_calls_the_tool_fails() -> None:
    with pytest.raises(ConformanceError, match="no tool call although tool_choice"):
        await check_stream_fn(
            FunctionStream(lambda c: reply_text("I will not.")),
            ModelSpec(provider="x", model_id="m"),
        )
