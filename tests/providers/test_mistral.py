"""Mistral: content-part arrays, index-less tool calls, nine-character tool call ids."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, strategies as st

from agentloop import (
    AssistantMessage,
    ErrorKind,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    tool,
)
from agentloop.stream import LlmContext
from agentloop_providers.mistral import MistralProvider, mistral_payload, mistral_tool_id

from ._fixtures import Case, check, wrap_chunks
from ._loopback_ii import FIXTURES, Reply, agent_run, replay_via

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="mistral", model_id="magistral-medium-latest")
M = MistralProvider


def make(**kwargs: Any) -> MistralProvider:
    return MistralProvider(api_key="m-test", **kwargs)


def _read(name: str) -> bytes:
    return (FIXTURES / "mistral" / name).read_bytes()


CASES = [
    Case(
        "magistral_thinking",
        M,
        _read("magistral_thinking.sse"),
        StopReason.STOP,
        ["thinking", "text"],
        model_id="magistral-medium-latest",
        thinking_start="Okay, the user is asking how to cross the street.",
        text_start="To cross the street safely, follow these steps:\n\n1. Look both ways",
        text_end="By following these steps, you can ensure a safe crossing.",
        text_len=607,
        usage=(10, 232, 0, 0),
    ),
    Case(
        "tool_call_single_chunk",
        M,
        wrap_chunks(_read("tool_call_single_chunk.chunks.jsonl"), event_names=False),
        StopReason.TOOL_USE,
        ["call"],
        model_id="mistral-small-latest",
        calls=[("weather", "gSIMJiOkT", {"location": "San Francisco"})],
        usage=(124, 22, 0, 0),
    ),
]


@pytest.mark.parametrize("transport", ["mock", "loopback"])
@pytest.mark.parametrize("case", CASES, ids=str)
async def test_fixture(case: Case, transport: str) -> None:
    message, _, requests = await replay_via(
        transport, make, MODEL, Reply(case.body, chunk_size=256)
    )
    check(case, message)
    (request,) = requests
    assert request.path.endswith("/chat/completions")
    assert request.headers["authorization"] == "Bearer test-key"


async def test_thinking_and_text_parts_in_one_delta() -> None:
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "plan"}]},
        {"type": "text", "text": "Answer"},
    ]
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": parts}}]},
        {"choices": [{"index": 0, "delta": {"content": "."}, "finish_reason": "stop"}]},
    ]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    message, _, _ = await replay_via("mock", make, MODEL, Reply(body + b"data: [DONE]\n\n"))
    assert message.content == [Thinking(thinking="plan"), Text(text="Answer.")]


@given(st.text(min_size=1, max_size=60))
def test_generated_ids_are_nine_letters_and_digits(original: str) -> None:
    made = mistral_tool_id(original)
    assert re.fullmatch(r"[A-Za-z0-9]{9}", made)
    assert mistral_tool_id(original) == made  # stable: the call and its result agree


def test_valid_ids_are_kept_and_others_differ() -> None:
    assert mistral_tool_id("gSIMJiOkT") == "gSIMJiOkT"
    assert mistral_tool_id("call_abc") != mistral_tool_id("call_abd")


def test_history_from_another_provider_gets_mistral_ids() -> None:
    history = LlmContext(
        system_prompt="Be brief.",
        messages=[
            UserMessage.from_text("weather?"),
            AssistantMessage(
                provider="anthropic",
                content=[
                    Thinking(thinking="let me check", signature="sig"),
                    ToolCall(id="toolu_01ABCDEF", name="weather", arguments={"city": "Oslo"}),
                    ToolCall(id="gSIMJiOkT", name="time", arguments={}),
                ],
            ),
            ToolResultMessage(tool_call_id="toolu_01ABCDEF", content=[Text(text="rain")]),
            ToolResultMessage(
                tool_call_id="gSIMJiOkT", tool_name="time", content=[Text(text="noon")]
            ),
        ],
    )
    model = ModelSpec(
        provider="mistral", model_id="mistral-small-latest", thinking_level=ThinkingLevel.HIGH
    )
    body = mistral_payload(model, history, StreamOptions(max_tokens=100))
    new_id = mistral_tool_id("toolu_01ABCDEF")
    assert body["messages"][2:] == [
        {
            "role": "assistant",
            "content": "let me check",
            "tool_calls": [
                {
                    "id": new_id,
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                },
                {
                    "id": "gSIMJiOkT",
                    "type": "function",
                    "function": {"name": "time", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": new_id, "content": "rain", "name": "weather"},
        {"role": "tool", "tool_call_id": "gSIMJiOkT", "content": "noon", "name": "time"},
    ]
    assert body["max_tokens"] == 100
    assert "stream_options" not in body
    assert "reasoning_effort" not in body
    assert "max_completion_tokens" not in body


@tool
async def weather(location: str) -> str:
    """Today's weather.

    Args:
        location: a city.
    """
    return f"Sunny in {location}."


async def test_agent_run_over_loopback() -> None:
    replies = [
        Reply(CASES[1].body, chunk_size=50),
        Reply(CASES[0].body, chunk_size=400),
    ]
    result, requests = await agent_run(make, MODEL, replies, [weather], "Weather in SF?")
    assert result.stop_reason is StopReason.STOP
    assert result.text.startswith("To cross the street safely")
    second = json.loads(requests[1].body)
    assistant, tool_message = second["messages"][2:]
    assert assistant["tool_calls"][0]["id"] == "gSIMJiOkT"
    assert tool_message == {
        "role": "tool",
        "tool_call_id": "gSIMJiOkT",
        "content": "Sunny in San Francisco.",
        "name": "weather",
    }


async def test_context_overflow_is_classified() -> None:
    body = json.dumps(
        {
            "object": "error",
            "message": "Prompt contains 140000 tokens and 0 draft tokens, too large for model "
            "with 131072 maximum context length",
            "type": "invalid_request_message_error",
            "param": None,
            "code": "3051",
        }
    ).encode()
    reply = Reply(body, status=400, content_type="application/json")
    message, _, _ = await replay_via("loopback", make, MODEL, reply)
    assert message.error_kind is ErrorKind.CONTEXT_OVERFLOW


def test_every_fixture_has_a_case() -> None:
    files = {p.name.split(".")[0] for p in (FIXTURES / "mistral").iterdir()}
    assert files == {case.name for case in CASES}
