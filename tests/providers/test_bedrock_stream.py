"""Bedrock ConverseStream: every recorded body replayed, through MockTransport and loopback."""

from __future__ import annotations

import contextlib
import datetime as dt
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from hypothesis import given, settings, strategies as st

from agentloop import (
    AssistantMessage,
    ErrorKind,
    Extension,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
    ToolCall,
    Usage,
)
from agentloop.stream import TextDelta
from agentloop_providers._eventstream import encode_message
from agentloop_providers._sigv4 import AwsCredentials
from agentloop_providers.bedrock import BedrockParser, BedrockProvider, _FrameDecoder

from ._loopback_ii import FIXTURES, Reply, context, fixture_bytes, mock_client, replay, serve

if TYPE_CHECKING:
    from collections.abc import Callable

    import httpx

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="bedrock", model_id="us.amazon.nova-micro-v1:0")
CREDS = AwsCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
ES = "application/vnd.amazon.eventstream"
NO_KEY = StreamOptions()


def _usage(i: int, o: int) -> Usage:
    return Usage(input=i, output=o, total=i + o)


def check_nova_tool_use(m: AssistantMessage) -> None:
    assert m.stop_reason is StopReason.TOOL_USE
    text, call = m.content
    assert isinstance(text, Text)
    assert text.text.startswith("<thinking> To find the temperature of the capital of France,")
    assert text.text.endswith("in Paris.</thinking>\n")
    assert call == ToolCall(
        id="tooluse_lAG_zP8QRHmSYOwZzzaCqA", name="get_temperature", arguments={"city": "Paris"}
    )
    assert m.usage == _usage(471, 91)


def check_claude_reasoning(m: AssistantMessage) -> None:
    assert m.stop_reason is StopReason.STOP
    thinking, text = m.content
    assert isinstance(thinking, Thinking)
    assert thinking.thinking.startswith('The user has greeted me with a simple "Hello".')
    assert thinking.thinking.endswith("ask how I can help them today.")
    assert thinking.signature is not None
    assert thinking.signature.startswith("Eu0CCkgIBxABGAIqQJDccbDQkr81n7Qj")
    assert text == Text(text="Hello! It's nice to meet you. How can I help you today?")
    assert m.usage == _usage(36, 73)


def check_redacted(m: AssistantMessage) -> None:
    assert m.stop_reason is StopReason.STOP
    first, second, text = m.content
    for block in (first, second):
        assert isinstance(block, Thinking)
        assert block.redacted
        assert block.thinking == ""
        assert block.data is not None
        assert len(block.data) > 100
    assert isinstance(first, Thinking)
    assert first.data is not None
    assert first.data.startswith("RXRrRUNrZ0lCeEFCR0FJcVFKVGZxUy9Q")
    assert isinstance(text, Text)
    assert text.text.startswith("I notice you've sent what appears to be some kind of command")
    assert text.text.endswith("What would you like to talk about today?")
    assert m.usage == _usage(92, 253)


def check_gpt_oss(m: AssistantMessage) -> None:
    # The empty text block is dropped; reasoning then text remain.
    assert m.stop_reason is StopReason.STOP
    thinking, text = m.content
    assert isinstance(thinking, Thinking)
    assert thinking.thinking.startswith('The user just says "Hi".')
    assert thinking.signature is None
    assert text == Text(text="Hello! How can I help you today?")
    assert m.usage == _usage(70, 43)


def check_server_tool(m: AssistantMessage) -> None:
    assert m.stop_reason is StopReason.TOOL_USE
    server_use, server_result, call = m.content
    assert isinstance(server_use, Extension)
    assert server_use.type_name == "bedrock.toolUse"
    assert server_use.data["start"]["toolUse"]["name"] == "nova_code_interpreter"
    assert server_use.data["deltas"] == [{"toolUse": {"input": '{"snippet":"1234 * 5678"}'}}]
    assert isinstance(server_result, Extension)
    assert server_result.type_name == "bedrock.toolResult"
    assert server_result.data["deltas"][0]["toolResult"][0]["json"]["stdOut"] == "7006652"
    assert call == ToolCall(
        id="tooluse_ptgCcZ0uQu-UUMz0abqoWw", name="final_result", arguments={"result": 7006652.0}
    )
    assert m.usage == _usage(1002, 59)


CASES: dict[str, Callable[[AssistantMessage], None]] = {
    "converse_stream_text_then_tool_use_nova.bin": check_nova_tool_use,
    "converse_stream_reasoning_claude.bin": check_claude_reasoning,
    "converse_stream_redacted_reasoning.bin": check_redacted,
    "converse_stream_empty_text_delta_gpt_oss.bin": check_gpt_oss,
    "converse_stream_server_tool_result_nova.bin": check_server_tool,
}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_fixture_via_mock_transport(name: str) -> None:
    body = fixture_bytes(f"bedrock/{name}")
    async with mock_client([Reply(body, content_type=ES)]) as client:
        provider = BedrockProvider(region="us-east-1", credentials=CREDS, client=client)
        message, events = await replay(provider, MODEL, options=NO_KEY)
    CASES[name](message)
    assert message.error_message is None
    assert message.provider == "bedrock"


@pytest.mark.parametrize("name", sorted(CASES))
async def test_fixture_over_loopback_in_small_chunks(name: str) -> None:
    body = fixture_bytes(f"bedrock/{name}")
    async with serve([Reply(body, content_type=ES, chunk_size=37)]) as server:
        async with BedrockProvider(credentials=CREDS, base_url=server.base_url) as provider:
            message, _ = await replay(provider, MODEL, options=NO_KEY)
    CASES[name](message)
    (request,) = server.requests
    assert request.path == "/model/us.amazon.nova-micro-v1%3A0/converse-stream"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")


async def test_first_event_arrives_before_the_body_ends() -> None:
    body = fixture_bytes("bedrock/converse_stream_reasoning_claude.bin")
    reply = Reply(body, content_type=ES, chunk_size=1500, gate_at=1500)
    async with serve([reply]) as server:
        async with BedrockProvider(credentials=CREDS, base_url=server.base_url) as provider:
            stream = provider(MODEL, context(), NO_KEY)
            # A buffering adapter would wait for the held rest of the body: fail, not hang.
            with anyio.fail_after(30):
                async with contextlib.aclosing(stream):
                    first = await anext(stream)
                    # The server still holds everything after its first 1500 bytes.
                    assert server.sent <= 1500 < len(body)
                    assert not server.gate.is_set()
                    server.gate.set()
                    rest = [event async for event in stream]
    assert first is not None
    assert any(isinstance(e, TextDelta) for e in rest)


def _frames(*events: tuple[str, bytes]) -> bytes:
    return b"".join(
        encode_message(
            {":event-type": name, ":content-type": "application/json", ":message-type": "event"},
            payload,
        )
        for name, payload in events
    )


def _exception(kind: str, message: str) -> bytes:
    return encode_message(
        {
            ":exception-type": kind,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        f'{{"message":"{message}"}}'.encode(),
    )


HELLO = _frames(
    ("messageStart", b'{"role":"assistant"}'),
    ("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"Hel"}}'),
)


@pytest.mark.parametrize(
    ("kind", "message", "expected"),
    [
        ("throttlingException", "Too many requests, please wait before trying again.", ErrorKind.THROTTLED),
        ("serviceUnavailableException", "Service unavailable.", ErrorKind.NETWORK),
        ("internalServerException", "Internal error.", ErrorKind.NETWORK),
        ("modelStreamErrorException", "The model stream failed.", ErrorKind.NETWORK),
        ("modelTimeoutException", "Model timed out.", ErrorKind.NETWORK),
        ("validationException", "Input is too long for requested model.", ErrorKind.CONTEXT_OVERFLOW),
        ("validationException", "Malformed input request.", ErrorKind.OTHER),
    ],
)  # fmt: skip
async def test_exception_frame_mid_stream(kind: str, message: str, expected: ErrorKind) -> None:
    body = HELLO + _exception(kind, message)
    async with mock_client([Reply(body, content_type=ES)]) as client:
        provider = BedrockProvider(credentials=CREDS, client=client)
        result, _ = await replay(provider, MODEL, options=NO_KEY)
    assert result.stop_reason is StopReason.ERROR
    assert result.error_kind is expected
    assert result.error_message is not None
    assert message in result.error_message
    assert kind in result.error_message
    assert result.content == [Text(text="Hel")]  # what arrived before the failure is kept


async def test_guardrail_stop_is_content_filtered() -> None:
    body = HELLO + _frames(
        ("contentBlockStop", b'{"contentBlockIndex":0}'),
        ("messageStop", b'{"stopReason":"guardrail_intervened"}'),
        ("metadata", b'{"usage":{"inputTokens":5,"outputTokens":1,"totalTokens":6}}'),
    )
    async with mock_client([Reply(body, content_type=ES)]) as client:
        provider = BedrockProvider(credentials=CREDS, client=client)
        result, _ = await replay(provider, MODEL, options=NO_KEY)
    assert result.error_kind is ErrorKind.CONTENT_FILTERED
    assert result.usage == _usage(5, 1)


async def test_max_tokens_and_cache_usage() -> None:
    body = HELLO + _frames(
        ("messageStop", b'{"stopReason":"max_tokens"}'),
        (
            "metadata",
            b'{"usage":{"inputTokens":5,"outputTokens":1,"cacheReadInputTokens":100,'
            b'"cacheWriteInputTokens":7,"totalTokens":113}}',
        ),
    )
    async with mock_client([Reply(body, content_type=ES)]) as client:
        provider = BedrockProvider(credentials=CREDS, client=client)
        result, _ = await replay(provider, MODEL, options=NO_KEY)
    assert result.stop_reason is StopReason.LENGTH
    assert result.content == [Text(text="Hel")]
    assert result.usage == Usage(input=5, output=1, cache_read=100, cache_write=7, total=113)


async def test_message_stop_without_metadata_is_a_cut_stream() -> None:
    # The metadata frame (with the usage) always follows messageStop: ending before it is a cut.
    body = HELLO + _frames(("messageStop", b'{"stopReason":"end_turn"}'))
    async with mock_client([Reply(body, content_type=ES)]) as client:
        provider = BedrockProvider(credentials=CREDS, client=client)
        result, _ = await replay(provider, MODEL, options=NO_KEY)
    assert result.stop_reason is StopReason.ERROR
    assert result.error_kind is ErrorKind.NETWORK
    assert result.text == "Hel"


async def test_corrupt_frame_is_a_malformed_stream_error() -> None:
    body = bytearray(fixture_bytes("bedrock/converse_stream_reasoning_claude.bin"))
    body[300] ^= 0x10
    async with serve([Reply(bytes(body), content_type=ES)]) as server:
        async with BedrockProvider(credentials=CREDS, base_url=server.base_url) as provider:
            result, _ = await replay(provider, MODEL, options=NO_KEY)
    assert result.stop_reason is StopReason.ERROR
    assert result.error_kind is ErrorKind.OTHER
    assert result.error_message is not None
    assert "CRC32 mismatch" in result.error_message


async def test_truncated_frame_is_a_network_error() -> None:
    body = fixture_bytes("bedrock/converse_stream_reasoning_claude.bin")
    async with serve([Reply(body[:-30], content_type=ES)]) as server:
        async with BedrockProvider(credentials=CREDS, base_url=server.base_url) as provider:
            result, _ = await replay(provider, MODEL, options=NO_KEY)
    assert result.stop_reason is StopReason.ERROR
    assert result.error_kind is ErrorKind.NETWORK
    assert result.error_message is not None
    assert "truncated" in result.error_message
    # Everything before the cut frame was kept.
    assert result.text == "Hello! It's nice to meet you. How can I help you today?"


async def test_http_400_invalid_model() -> None:
    body = fixture_bytes("bedrock/error_400_invalid_model.json")
    headers = {"x-amzn-errortype": "ValidationException"}
    for use_loopback in (False, True):
        if use_loopback:
            async with serve(
                [Reply(body, status=400, headers=headers, content_type="application/json")]
            ) as server:
                async with BedrockProvider(credentials=CREDS, base_url=server.base_url) as provider:
                    result, _ = await replay(provider, MODEL, options=NO_KEY)
        else:
            async with mock_client(
                [Reply(body, status=400, headers=headers, content_type="application/json")]
            ) as client:
                provider = BedrockProvider(credentials=CREDS, client=client)
                result, _ = await replay(provider, MODEL, options=NO_KEY)
        assert result.stop_reason is StopReason.ERROR
        assert result.error_kind is ErrorKind.OTHER
        assert result.error_message is not None
        assert "The provided model identifier is invalid." in result.error_message
        assert "400" in result.error_message


@pytest.mark.parametrize(
    ("status", "expected"),
    [(429, ErrorKind.THROTTLED), (403, ErrorKind.AUTH), (503, ErrorKind.NETWORK)],
)
async def test_http_errors_are_classified(status: int, expected: ErrorKind) -> None:
    reply = Reply(b'{"message":"nope"}', status=status, headers={"retry-after": "3"})
    async with mock_client([reply]) as client:
        provider = BedrockProvider(credentials=CREDS, client=client)
        result, events = await replay(provider, MODEL, options=NO_KEY)
    assert result.error_kind is expected
    if expected is ErrorKind.THROTTLED:
        assert events[-1].retry_after == 3.0  # type: ignore[union-attr]


async def test_missing_credentials_is_an_auth_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)
    seen: list[httpx.Request] = []
    async with mock_client([], seen) as client:
        provider = BedrockProvider(client=client)
        result, _ = await replay(provider, MODEL, options=NO_KEY)
    assert result.error_kind is ErrorKind.AUTH
    assert result.error_message is not None
    assert "AWS_ACCESS_KEY_ID" in result.error_message
    assert seen == []


async def test_credentials_and_region_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secretenv")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "tokenenv")
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    seen: list[httpx.Request] = []
    body = fixture_bytes("bedrock/converse_stream_empty_text_delta_gpt_oss.bin")
    async with mock_client([Reply(body, content_type=ES)], seen) as client:
        provider = BedrockProvider(client=client)
        assert provider.base_url == "https://bedrock-runtime.eu-west-3.amazonaws.com"
        result, _ = await replay(provider, MODEL, options=NO_KEY)
    assert result.stop_reason is StopReason.STOP
    (request,) = seen
    assert request.headers["x-amz-security-token"] == "tokenenv"
    auth = request.headers["authorization"]
    assert "Credential=AKIDENV/" in auth
    assert "/eu-west-3/bedrock/aws4_request" in auth
    assert "x-amz-security-token" in auth.split("SignedHeaders=")[1]
    assert "secretenv" not in str(request.headers)


async def test_bearer_api_key_replaces_signing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-1234")
    seen: list[httpx.Request] = []
    body = fixture_bytes("bedrock/converse_stream_empty_text_delta_gpt_oss.bin")
    async with mock_client([Reply(body, content_type=ES)], seen) as client:
        provider = BedrockProvider(client=client)
        await replay(provider, MODEL, options=NO_KEY)
    (request,) = seen
    assert request.headers["authorization"] == "Bearer bedrock-api-key-1234"
    assert "x-amz-date" not in request.headers


async def test_signature_is_the_one_sigv4_computes() -> None:
    seen: list[httpx.Request] = []
    body = fixture_bytes("bedrock/converse_stream_empty_text_delta_gpt_oss.bin")
    when = dt.datetime(2015, 8, 30, 12, 36, tzinfo=dt.UTC)
    async with mock_client([Reply(body, content_type=ES)], seen) as client:
        provider = BedrockProvider(credentials=CREDS, client=client, clock=lambda: when)
        await replay(provider, MODEL, options=NO_KEY)
    (request,) = seen
    from agentloop_providers._sigv4 import sign_headers

    expected = sign_headers(
        method="POST",
        host="bedrock-runtime.us-east-1.amazonaws.com",
        path="/model/us.amazon.nova-micro-v1%3A0/converse-stream",
        headers={"content-type": "application/json"},
        body=request.content,
        credentials=CREDS,
        region="us-east-1",
        service="bedrock",
        now=when,
    )
    assert request.headers["x-amz-date"] == "20150830T123600Z"
    assert request.headers["authorization"] == expected["Authorization"]
    assert "SignedHeaders=content-type;host;x-amz-date," in expected["Authorization"]


async def test_cancelling_mid_stream_closes_the_connection() -> None:
    body = fixture_bytes("bedrock/converse_stream_reasoning_claude.bin")
    async with serve([Reply(body, content_type=ES, gate_at=len(body) // 2)]) as server:
        async with BedrockProvider(credentials=CREDS, base_url=server.base_url) as provider:
            with anyio.fail_after(10):
                async with contextlib.aclosing(provider(MODEL, context(), NO_KEY)) as stream:
                    await anext(stream)  # the turn is abandoned here, as a cancelled one is
                await server.disconnected.wait()
    assert server.completed == 0


async def test_http_400_context_overflow() -> None:
    reply = Reply(
        b'{"message":"Input is too long for requested model."}',
        status=400,
        headers={"x-amzn-errortype": "ValidationException"},
        content_type="application/json",
    )
    async with mock_client([reply]) as client:
        provider = BedrockProvider(credentials=CREDS, client=client)
        result, _ = await replay(provider, MODEL, options=NO_KEY)
    assert result.error_kind is ErrorKind.CONTEXT_OVERFLOW


def test_every_fixture_has_a_case() -> None:
    files = {p.name for p in (FIXTURES / "bedrock").iterdir()}
    assert files == set(CASES) | {"error_400_invalid_model.json"}


def _events_for(body: bytes, cuts: list[int]) -> list[Any]:
    decoder, parser = _FrameDecoder(), BedrockParser()
    events: list[Any] = []
    start = 0
    for cut in [*sorted(cuts), len(body)]:
        for frame in decoder.feed(body[start:cut]):
            events.extend(parser.feed(frame))
        start = cut
    for frame in decoder.close():
        events.extend(parser.feed(frame))
    return [*events, *parser.end()]


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(CASES)),
    cuts=st.lists(st.integers(min_value=0, max_value=6000), max_size=40),
)
def test_events_do_not_depend_on_how_the_body_is_split(name: str, cuts: list[int]) -> None:
    body = fixture_bytes(f"bedrock/{name}")
    cuts = [c for c in cuts if c <= len(body)]
    assert _events_for(body, cuts) == _events_for(body, [])
