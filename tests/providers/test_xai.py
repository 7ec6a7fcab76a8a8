"""xAI: chat completions with reasoning_content, and the Responses API stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloop import (
    ErrorKind,
    ModelSpec,
    StopReason,
    StreamOptions,
    ThinkingLevel,
    UserMessage,
    tool,
)
from agentloop.stream import LlmContext
from agentloop_providers.xai import XaiChatProvider, XaiResponsesProvider

from ._fixtures import Case, check, wrap_chunks
from ._loopback_ii import FIXTURES, Reply, agent_run, replay_via

pytestmark = pytest.mark.anyio

CHAT_MODEL = ModelSpec(provider="xai", model_id="grok-3-mini")
RESPONSES_MODEL = ModelSpec(provider="xai", model_id="grok-code-fast-1")


def make_chat(**kwargs: Any) -> XaiChatProvider:
    return XaiChatProvider(api_key="x-test", **kwargs)


def make_responses(**kwargs: Any) -> XaiResponsesProvider:
    return XaiResponsesProvider(api_key="x-test", **kwargs)


def _read(name: str, *, named: bool) -> bytes:
    return wrap_chunks((FIXTURES / "xai" / name).read_bytes(), event_names=named)


CHAT = Case(
    "chat_reasoning_then_tool_call",
    XaiChatProvider,
    _read("chat_reasoning_then_tool_call.chunks.jsonl", named=False),
    StopReason.TOOL_USE,
    ["thinking", "call"],
    model_id="grok-3-mini",
    thinking_start="First, the user is",
    calls=[("weather", "call_55117580", {"location": "San Francisco"})],
    # 291 prompt tokens, 290 of them cached; 26 completion + 196 reasoning tokens billed.
    usage=(1, 222, 290, 0),
    usage_extra={"reasoning_tokens": 196},
)
RESPONSES = Case(
    "responses_reasoning_stream",
    XaiResponsesProvider,
    _read("responses_reasoning_stream.chunks.jsonl", named=True),
    StopReason.STOP,
    ["thinking", "text"],
    model_id="grok-code-fast-1",
    thinking_start='First, the question is: "What is specifically notable',
    text_start="### Overview of Sonoran Cuisine\nSonoran food originates from the Sonoran Desert",
    text_end="food trucks in Tucson or markets in Hermosillo.",
    text_len=2849,
    usage=(24, 923, 192, 0),
    usage_extra={"reasoning_tokens": 323},
)


@pytest.mark.parametrize("transport", ["mock", "loopback"])
async def test_chat_fixture(transport: str) -> None:
    message, _, requests = await replay_via(transport, make_chat, CHAT_MODEL, Reply(CHAT.body))
    check(CHAT, message)
    # xAI reports its own price, in 1e-10 USD ticks: it becomes the message's cost.
    assert message.cost.total == pytest.approx(1330500e-10)
    assert requests[0].path.endswith("/chat/completions")


@pytest.mark.parametrize("transport", ["mock", "loopback"])
async def test_responses_fixture(transport: str) -> None:
    reply = Reply(RESPONSES.body, chunk_size=512, pause=0)
    message, _, requests = await replay_via(transport, make_responses, RESPONSES_MODEL, reply)
    check(RESPONSES, message)
    assert requests[0].path.endswith("/responses")


def test_reasoning_effort_only_for_mini_models() -> None:
    ctx = LlmContext(messages=[UserMessage.from_text("hi")])
    chat = XaiChatProvider(api_key="k")
    responses = XaiResponsesProvider(api_key="k")
    mini = ModelSpec(provider="xai", model_id="grok-3-mini", thinking_level=ThinkingLevel.MEDIUM)
    big = ModelSpec(provider="xai", model_id="grok-4", thinking_level=ThinkingLevel.MEDIUM)
    assert chat.payload(mini, ctx, StreamOptions())["reasoning_effort"] == "high"
    assert "reasoning_effort" not in chat.payload(big, ctx, StreamOptions())
    low = ModelSpec(provider="xai", model_id="grok-3-mini", thinking_level=ThinkingLevel.LOW)
    assert responses.payload(low, ctx, StreamOptions())["reasoning"] == {"effort": "low"}
    body = responses.payload(big, ctx, StreamOptions(max_tokens=50))
    assert "reasoning" not in body
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["max_output_tokens"] == 50
    chat_body = chat.payload(big, ctx, StreamOptions(max_tokens=50))
    assert chat_body["max_tokens"] == 50
    assert chat_body["stream_options"] == {"include_usage": True}


@tool
async def weather(location: str) -> str:
    """Today's weather.

    Args:
        location: a city.
    """
    return f"Sunny in {location}."


def _text_chat(text: str) -> bytes:
    chunks = [
        {"model": "grok-3-mini", "choices": [{"index": 0, "delta": {"content": text}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}},
    ]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return body + b"data: [DONE]\n\n"


async def test_chat_agent_run_over_loopback() -> None:
    replies = [Reply(CHAT.body, chunk_size=90), Reply(_text_chat("Sunny."))]
    result, requests = await agent_run(make_chat, CHAT_MODEL, replies, [weather], "Weather?")
    assert result.stop_reason is StopReason.STOP
    assert result.text == "Sunny."
    second = json.loads(requests[1].body)
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_55117580",
        "content": "Sunny in San Francisco.",
    }
    assert result.cost.total == pytest.approx(1330500e-10)  # xAI's own price, turn one


async def test_responses_agent_run_over_loopback() -> None:
    # Turn one replays a Responses API tool call recorded on Azure (same event protocol).
    call = wrap_chunks(
        (FIXTURES / "azure" / "responses_tool_call.chunks.jsonl").read_bytes(), event_names=True
    )
    replies = [Reply(call, chunk_size=300), Reply(RESPONSES.body, chunk_size=4000, pause=0)]
    result, requests = await agent_run(
        make_responses, RESPONSES_MODEL, replies, [weather], "Weather, then Sonoran food?"
    )
    assert result.stop_reason is StopReason.STOP
    assert result.text.startswith("### Overview of Sonoran Cuisine")
    second = json.loads(requests[1].body)
    assert second["input"][-1] == {
        "type": "function_call_output",
        "call_id": "call_H5DxLSFnsGhiROnUiDHmgyc8",
        "output": "Sunny in San Francisco.",
    }


async def test_context_overflow_is_classified() -> None:
    body = json.dumps(
        {
            "code": "Client specified an invalid argument",
            "error": "This model's maximum prompt length is 131072 but the request contains "
            "537812 tokens.",
        }
    ).encode()
    reply = Reply(body, status=400, content_type="application/json")
    message, _, _ = await replay_via("loopback", make_chat, CHAT_MODEL, reply)
    assert message.error_kind is ErrorKind.CONTEXT_OVERFLOW


def test_every_fixture_has_a_case() -> None:
    files = {p.name.split(".")[0] for p in (FIXTURES / "xai").iterdir()}
    assert files == {CHAT.name, RESPONSES.name}
