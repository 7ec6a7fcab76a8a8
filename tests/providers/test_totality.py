"""Every adapter is total: JSON of the wrong shape ends as a typed error, never an exception.

Structurally valid JSON with the wrong types (a string where an object belongs, a list where an
index belongs, a number where a delta belongs, nesting 10,000 deep) must end the call as an
``other`` error that says the stream was malformed; an HTTP error status keeps its kind
whatever its body looks like, so a 429 is still retried.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import pytest

from agentloop import (
    Agent,
    AssistantMessage,
    ErrorKind,
    ModelSpec,
    StopReason,
    StreamOptions,
    StreamRetry,
)
from agentloop.retry import ExponentialBackoff
from agentloop_providers._eventstream import encode_message
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.bedrock import BedrockProvider
from agentloop_providers.gemini import GeminiProvider
from agentloop_providers.ollama import OllamaProvider
from agentloop_providers.openai_chat import OpenAIChatProvider
from agentloop_providers.openai_responses import OpenAIResponsesProvider

from ._fuzz import CREDS
from ._loopback_ii import FIXTURES, Reply, context, mock_client
from ._util import collect

if TYPE_CHECKING:
    import httpx

pytestmark = pytest.mark.anyio

DEEP_LIST = b"[" * 10_000 + b"]" * 10_000
DEEP_OBJECT = b'{"a":' * 10_000 + b"1" + b"}" * 10_000
OPTIONS = StreamOptions(api_key="test-key")


def _sse(*frames: bytes) -> bytes:
    return b"".join(b"data: " + f + b"\n\n" for f in frames)


_ANTHROPIC_START = (
    b'{"type":"message_start","message":{"model":"m","usage":{"input_tokens":1}}}',
    b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
)
_OPENAI_START = b'{"model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}'

CASES: list[tuple[str, Any, bytes, str]] = [
    (
        "anthropic: a number as a text delta",
        AnthropicProvider,
        _sse(
            *_ANTHROPIC_START,
            b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":5}}',
        ),
        "text/event-stream",
    ),
    (
        "anthropic: a list as the block index",
        AnthropicProvider,
        _sse(
            *_ANTHROPIC_START,
            b'{"type":"content_block_delta","index":[0],"delta":{"type":"text_delta","text":"x"}}',
        ),
        "text/event-stream",
    ),
    (
        "anthropic: a string where the message object belongs",
        AnthropicProvider,
        _sse(b'{"type":"message_start","message":"m"}'),
        "text/event-stream",
    ),
    (
        "anthropic: nesting 10,000 deep",
        AnthropicProvider,
        _sse(*_ANTHROPIC_START, DEEP_OBJECT),
        "text/event-stream",
    ),
    (
        "openai chat: a string where a choice belongs",
        OpenAIChatProvider,
        _sse(_OPENAI_START, b'{"choices":["x"]}'),
        "text/event-stream",
    ),
    (
        "openai chat: a list as the content delta",
        OpenAIChatProvider,
        _sse(_OPENAI_START, b'{"choices":[{"index":0,"delta":{"content":[1]}}]}'),
        "text/event-stream",
    ),
    (
        "openai chat: a number as the model name",
        OpenAIChatProvider,
        _sse(b'{"model":7,"choices":[]}'),
        "text/event-stream",
    ),
    (
        "openai chat: nesting 10,000 deep",
        OpenAIChatProvider,
        _sse(_OPENAI_START, DEEP_LIST),
        "text/event-stream",
    ),
    (
        "responses: a string where the item belongs",
        OpenAIResponsesProvider,
        _sse(b'{"type":"response.output_item.added","output_index":0,"item":"x"}'),
        "text/event-stream",
    ),
    (
        "gemini: a string where a part belongs",
        GeminiProvider,
        _sse(b'{"candidates":[{"content":{"parts":["x"]}}]}'),
        "text/event-stream",
    ),
    (
        "ollama: a list where the message belongs",
        OllamaProvider,
        b'{"model":"m","message":[0]}\n',
        "application/x-ndjson",
    ),
    (
        "ollama: true as the thinking delta",
        OllamaProvider,
        b'{"model":"m","message":{"thinking":true}}\n',
        "application/x-ndjson",
    ),
    (
        "ollama: nesting 10,000 deep",
        OllamaProvider,
        DEEP_LIST + b"\n",
        "application/x-ndjson",
    ),
]


@pytest.mark.parametrize(
    ("provider_cls", "body", "content_type"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
async def test_json_of_the_wrong_shape_is_a_malformed_stream(
    provider_cls: Any, body: bytes, content_type: str
) -> None:
    model = ModelSpec(provider=provider_cls.provider_name, model_id="m")
    async with mock_client([Reply(body=body, content_type=content_type)]) as client:
        _, message = await collect(provider_cls(client=client), model, context(), OPTIONS)
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.OTHER
    assert "malformed stream" in (message.error_message or "")


async def test_bedrock_a_number_where_the_reasoning_object_belongs() -> None:
    headers = {":message-type": "event", ":content-type": "application/json"}
    body = encode_message(
        {**headers, ":event-type": "messageStart"}, b'{"role":"assistant"}'
    ) + encode_message(
        {**headers, ":event-type": "contentBlockDelta"},
        b'{"contentBlockIndex":0,"delta":{"reasoningContent":1.5}}',
    )
    reply = Reply(body=body, content_type="application/vnd.amazon.eventstream")
    model = ModelSpec(provider="bedrock", model_id="m")
    async with mock_client([reply]) as client:
        provider = BedrockProvider(region="us-east-1", credentials=CREDS, client=client)
        _, message = await collect(provider, model, context(), StreamOptions())
    assert message.error_kind is ErrorKind.OTHER
    assert "malformed stream" in (message.error_message or "")


async def test_a_json_path_far_beyond_the_arguments_is_malformed_not_a_hang() -> None:
    start = (
        b'{"candidates":[{"content":{"parts":[{"functionCall":'
        b'{"name":"f","willContinue":true}}]}}]}'
    )
    far = (
        b'{"candidates":[{"content":{"parts":[{"functionCall":{"willContinue":true,'
        b'"partialArgs":[{"jsonPath":"$.a[1000000000000]","stringValue":"x"}]}}]}}]}'
    )
    model = ModelSpec(provider="gemini", model_id="m")
    async with mock_client([Reply(body=_sse(start, far))]) as client:
        with anyio.fail_after(10):
            _, message = await collect(GeminiProvider(client=client), model, context(), OPTIONS)
    assert message.error_kind is ErrorKind.OTHER
    assert "malformed stream" in (message.error_message or "")


_ODD_BODIES = [
    DEEP_LIST,
    DEEP_OBJECT,
    b'{"error":' + DEEP_LIST + b"}",
    b"[]",
    b'"x"',
    b"123",
    b"null",
    b'{"error":[]}',
    b'{"error":{"message":{"a":[1]},"type":7,"code":[]}}',
    b"\xff\xfe not text",
    b"",
]


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, ErrorKind.AUTH),
        (403, ErrorKind.AUTH),
        (429, ErrorKind.THROTTLED),
        (529, ErrorKind.THROTTLED),
        (503, ErrorKind.NETWORK),
    ],
)
@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
async def test_an_error_status_keeps_its_kind_whatever_the_body(
    status: int, kind: ErrorKind, content_type: str
) -> None:
    model = ModelSpec(provider="openai", model_id="m")
    replies = [Reply(body=b, status=status, content_type=content_type) for b in _ODD_BODIES]
    async with mock_client(replies) as client:
        provider = OpenAIChatProvider(client=client)
        for body in _ODD_BODIES:
            _, message = await collect(provider, model, context(), OPTIONS)
            assert message.error_kind is kind, body[:40]
            assert message.error_message is not None


async def test_a_429_with_a_deep_body_is_retried() -> None:
    good = (FIXTURES / "openai_chat/refusal_deltas.sse").read_bytes()
    seen: list[httpx.Request] = []
    replies = [Reply(body=DEEP_OBJECT, status=429, content_type="application/json")]
    replies.append(Reply(body=good))
    events: list[Any] = []
    async with mock_client(replies, seen) as client:
        agent = Agent(
            model=ModelSpec(provider="openai", model_id="m"),
            stream_fn=OpenAIChatProvider(client=client),
            stream_options=OPTIONS,
            retry_strategy=ExponentialBackoff(base_delay=0, jitter=False),
        )
        agent.subscribe(events.append)
        result = await agent.prompt("hi")
    assert len(seen) == 2
    retries = [e for e in events if isinstance(e, StreamRetry)]
    assert [r.kind for r in retries] == [ErrorKind.THROTTLED]
    answer = result.messages[-1]
    assert isinstance(answer, AssistantMessage)
    assert answer.stop_reason is StopReason.STOP
