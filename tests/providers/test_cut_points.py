"""When is a stream complete? Each adapter's rule, checked at the cut points that matter.

Issue 15, defect 7: a stream cut after ``finish_reason`` but before ``[DONE]``/usage was taken
for a complete answer, although the recordings show what may still follow (the usage chunk; at
OpenRouter, an error). The body here ends cleanly at the cut (as a proxy or a server closing
early would end it), so only the adapter's own rule can tell a cut stream from a whole one.

The rules:

- Chat Completions: complete at ``[DONE]``; without it, only when both the finish reason and
  the usage came.
- Anthropic: at ``message_stop``. Responses API: at ``response.completed``/``incomplete``.
- Gemini: at the chunk with ``finishReason`` (it is always the last; the usage rides on it).
- Bedrock: at the ``metadata`` frame that follows ``messageStop``.
- Ollama: at the line with ``done: true``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import httpx
import pytest

from agentloop import ErrorKind, ModelSpec, StopReason, StreamOptions, UserMessage
from agentloop.stream import LlmContext
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.bedrock import BedrockProvider
from agentloop_providers.gemini import GeminiProvider
from agentloop_providers.ollama import OllamaProvider
from agentloop_providers.openai_chat import OpenAIChatProvider
from agentloop_providers.openai_responses import OpenAIResponsesProvider

from ._loopback_ii import fixture_bytes
from ._util import collect

if TYPE_CHECKING:
    from agentloop.stream import StreamFn

pytestmark = pytest.mark.anyio

CONTEXT = LlmContext(messages=[UserMessage.from_text("hi")])


def _after_event(body: bytes, marker: bytes, nth: int = 1) -> int:
    """The offset just past the SSE event holding the ``nth`` occurrence of ``marker``."""
    at = -1
    for _ in range(nth):
        at = body.index(marker, at + 1)
    ends = [i + len(sep) for sep in (b"\n\n", b"\r\n\r\n") if (i := body.find(sep, at)) >= 0]
    return min(ends)


def _before_event(body: bytes, marker: bytes) -> int:
    at = body.index(marker)
    return max(body.rfind(b"\n\n", 0, at), body.rfind(b"\r\n\r\n", 0, at)) + 2


def _after_line(body: bytes, marker: bytes) -> int:
    return body.index(b"\n", body.index(marker)) + 1


def _frames(body: bytes) -> list[tuple[int, int]]:
    """(start, end) of each AWS event-stream frame."""
    out, at = [], 0
    while at < len(body):
        end = at + int.from_bytes(body[at : at + 4], "big")
        out.append((at, end))
        at = end
    return out


def _after_frame(body: bytes, marker: bytes) -> int:
    at = body.index(marker)
    return next(end for start, end in _frames(body) if start <= at < end)


Cut: TypeAlias = Callable[[bytes], int]
CASES: list[tuple[str, Callable[[httpx.AsyncClient], StreamFn], str, str, Cut, Any]] = [
    # (name, adapter, fixture, content type, where the body ends, what it must give)
    (
        "chat: after the finish reason, before usage",
        lambda c: OpenAIChatProvider(client=c, api_key="k"),
        "openai_chat/parallel_tool_calls_usage.sse",
        "text/event-stream",
        lambda b: _after_event(b, b'"finish_reason":"tool_calls"'),
        ErrorKind.NETWORK,
    ),
    (
        "chat: after usage, before [DONE]",
        lambda c: OpenAIChatProvider(client=c, api_key="k"),
        "openai_chat/parallel_tool_calls_usage.sse",
        "text/event-stream",
        lambda b: _before_event(b, b"[DONE]"),
        StopReason.TOOL_USE,
    ),
    (
        "chat: openrouter, after the finish reason, before its error",
        lambda c: OpenAIChatProvider(client=c, api_key="k"),
        "openai_chat/openrouter_error_in_chunk.sse",
        "text/event-stream",
        lambda b: _after_event(b, b'"finish_reason":"length"'),
        ErrorKind.NETWORK,
    ),
    (
        "chat: llama.cpp sends no usage, after the finish reason",
        lambda c: OpenAIChatProvider(client=c, require_api_key=False),
        "llamacpp_python/text_no_usage.sse",
        "text/event-stream",
        lambda b: _before_event(b, b"[DONE]"),
        ErrorKind.NETWORK,
    ),
    (
        "chat: llama.cpp, whole",
        lambda c: OpenAIChatProvider(client=c, require_api_key=False),
        "llamacpp_python/text_no_usage.sse",
        "text/event-stream",
        len,
        StopReason.LENGTH,
    ),
    (
        "anthropic: after message_delta, before message_stop",
        lambda c: AnthropicProvider(client=c, api_key="k"),
        "anthropic/tool_use_text_then_tool.sse",
        "text/event-stream",
        lambda b: _before_event(b, b"event: message_stop"),
        ErrorKind.NETWORK,
    ),
    (
        "responses: before response.completed",
        lambda c: OpenAIResponsesProvider(client=c, api_key="k"),
        "openai_responses/function_call_stream.sse",
        "text/event-stream",
        lambda b: _before_event(b, b"event: response.completed"),
        ErrorKind.NETWORK,
    ),
    (
        "gemini: after the finishReason chunk",
        lambda c: GeminiProvider(client=c, api_key="k"),
        "gemini/thinking_thought_parts.sse",
        "text/event-stream",
        lambda b: _after_event(b, b'"finishReason"'),
        StopReason.STOP,
    ),
    (
        "gemini: before the finishReason chunk",
        lambda c: GeminiProvider(client=c, api_key="k"),
        "gemini/thinking_thought_parts.sse",
        "text/event-stream",
        lambda b: _before_event(b, b'"finishReason"'),
        ErrorKind.NETWORK,
    ),
    (
        "bedrock: after messageStop, before metadata",
        lambda c: BedrockProvider(client=c, api_key="k"),
        "bedrock/converse_stream_text_then_tool_use_nova.bin",
        "application/vnd.amazon.eventstream",
        lambda b: _after_frame(b, b"messageStop"),
        ErrorKind.NETWORK,
    ),
    (
        "bedrock: after metadata",
        lambda c: BedrockProvider(client=c, api_key="k"),
        "bedrock/converse_stream_text_then_tool_use_nova.bin",
        "application/vnd.amazon.eventstream",
        len,
        StopReason.TOOL_USE,
    ),
    (
        "ollama: before the done line",
        lambda c: OllamaProvider(client=c),
        "ollama/chat_stream_text_gemma3.ndjson",
        "application/x-ndjson",
        lambda b: b.rindex(b'{"model"'),
        ErrorKind.NETWORK,
    ),
]


@pytest.mark.parametrize(
    ("adapter", "fixture", "content_type", "cut", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
async def test_a_stream_ending_at_a_cut_point(
    adapter: Callable[[httpx.AsyncClient], StreamFn],
    fixture: str,
    content_type: str,
    cut: Cut,
    expected: Any,
) -> None:
    whole = fixture_bytes(fixture)
    body = whole[: cut(whole)]
    assert 0 < len(body) <= len(whole)

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": content_type})

    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        provider = adapter(client)
        _, message = await collect(
            provider, ModelSpec(provider="p", model_id="m"), CONTEXT, StreamOptions()
        )
    if isinstance(expected, ErrorKind):
        assert message.stop_reason is StopReason.ERROR
        assert message.error_kind is expected, message.error_message
    else:
        assert message.stop_reason is expected, message.error_message
        assert message.error_message is None
