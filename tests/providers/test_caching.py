"""Prompt caching: breakpoints for Anthropic and Bedrock, and cache usage read back."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from agentloop import (
    AssistantMessage,
    ModelSpec,
    Pricing,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    tool,
)
from agentloop.stream import LlmContext, ToolSchema
from agentloop_providers import PromptCaching
from agentloop_providers.anthropic import AnthropicProvider, anthropic_payload
from agentloop_providers.bedrock import BedrockProvider

from ._fixtures import FIXTURES
from ._loopback import Reply
from ._loopback_ii import agent_run

pytestmark = pytest.mark.anyio

TOOL = ToolSchema(name="read", description="Read a file.", parameters={"type": "object"})
CLAUDE = ModelSpec(provider="anthropic", model_id="claude-sonnet-4-5")


def _history() -> LlmContext:
    call = ToolCall(id="c1", name="read", arguments={"path": "a"})
    return LlmContext(
        system_prompt="You are a careful engineer.",
        tools=[TOOL],
        messages=[
            UserMessage.from_text("Read a."),
            AssistantMessage(content=[call], stop_reason=StopReason.TOOL_USE),
            ToolResultMessage(tool_call_id="c1", content=[Text(text="contents of a")]),
            AssistantMessage(content=[Text(text="Done.")], provider="anthropic"),
            UserMessage.from_text("Now b."),
        ],
    )


def _marks(body: Any) -> list[str]:
    """Where the cache_control marks are, in request order."""
    out = []
    out += [f"tool:{t['name']}" for t in body.get("tools", []) if "cache_control" in t]
    out += ["system" for s in body.get("system", []) if "cache_control" in s]
    for i, message in enumerate(body["messages"]):
        for block in message["content"]:
            if "cache_control" in block:
                out.append(f"message {i}:{block['type']}")
    return out


def test_anthropic_breakpoints_by_default() -> None:
    body = anthropic_payload(CLAUDE, _history(), StreamOptions())
    # Tools, system, the point where the previous turn's request ended (the tool result,
    # before the last assistant message) and the last message: Anthropic's limit is four.
    assert _marks(body) == ["tool:read", "system", "message 2:tool_result", "message 4:text"]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_anthropic_knobs() -> None:
    one_hour = PromptCaching(tools=False, messages=1, ttl="1h")
    body = anthropic_payload(CLAUDE, _history(), StreamOptions(), prompt_caching=one_hour)
    assert _marks(body) == ["system", "message 4:text"]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    off = anthropic_payload(CLAUDE, _history(), StreamOptions(), prompt_caching=False)
    assert _marks(off) == []
    # Per call, through the options (turn_options can set it for one turn).
    per_call = StreamOptions(extra={"prompt_caching": False})
    assert _marks(anthropic_payload(CLAUDE, _history(), per_call)) == []


def test_anthropic_never_marks_a_thinking_block() -> None:
    context = LlmContext(
        messages=[
            UserMessage.from_text("Think."),
            AssistantMessage(
                content=[Thinking(thinking="hmm", signature="sig")], provider="anthropic"
            ),
        ]
    )
    body = anthropic_payload(CLAUDE, context, StreamOptions())
    assert _marks(body) == ["message 0:text"]


def test_anthropic_a_bad_setting_is_a_request_error() -> None:
    with pytest.raises(TypeError, match="prompt_caching"):
        anthropic_payload(CLAUDE, _history(), StreamOptions(extra={"prompt_caching": "yes"}))


def _cache_points(body: Any) -> list[str]:
    out = ["system" for b in body.get("system", []) if "cachePoint" in b]
    out += ["tools" for b in body.get("toolConfig", {}).get("tools", []) if "cachePoint" in b]
    for i, message in enumerate(body["messages"]):
        out += [f"message {i}" for b in message["content"] if "cachePoint" in b]
    return out


@pytest.mark.parametrize(
    ("model_id", "setting", "expected"),
    [
        (
            "us.anthropic.claude-sonnet-4-20250514-v1:0",
            None,
            ["system", "tools", "message 0", "message 2"],
        ),
        ("us.amazon.nova-pro-v1:0", None, ["system", "message 0", "message 2"]),  # no tools
        ("meta.llama3-70b-instruct-v1:0", None, []),  # refuses cache points
        ("meta.llama3-70b-instruct-v1:0", True, ["system", "message 0", "message 2"]),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", False, []),
    ],
)
def test_bedrock_cache_points(model_id: str, setting: bool | None, expected: list[str]) -> None:
    context = _history()
    context = LlmContext(
        system_prompt=context.system_prompt, tools=context.tools, messages=context.messages[:3]
    )
    provider = BedrockProvider(api_key="k", prompt_caching=setting)
    payload = provider.payload(
        ModelSpec(provider="bedrock", model_id=model_id), context, StreamOptions()
    )
    body = json.loads(msgspec.json.encode(payload))  # the history is kept as msgspec.Raw
    assert _cache_points(body) == expected


@tool
def get_weather(location: str) -> str:
    """Weather for a place."""
    return "Sunny."


def _with_cache_usage(body: bytes, read: int, write: int, write_1h: int) -> bytes:
    """A recorded answer whose usage reports cache reads and writes."""
    for field, value in (
        (b'"cache_read_input_tokens":0', read),
        (b'"cache_creation_input_tokens":0', write),
        (b'"ephemeral_5m_input_tokens":0', write - write_1h),
        (b'"ephemeral_1h_input_tokens":0', write_1h),
    ):
        assert field in body
        body = body.replace(field, field[:-1] + str(value).encode())
    return body


async def test_an_agent_run_marks_the_stable_point_and_reads_cache_usage_back() -> None:
    turn1 = (FIXTURES / "anthropic/tool_use_text_then_tool.sse").read_bytes()
    turn2 = _with_cache_usage(
        (FIXTURES / "anthropic/thinking_signature_text.sse").read_bytes(), 3000, 500, 100
    )
    model = ModelSpec(
        provider="anthropic",
        model_id="claude-sonnet-4-5",
        pricing=Pricing(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75),
    )
    result, requests = await agent_run(
        AnthropicProvider, model, [Reply(body=turn1), Reply(body=turn2)], [get_weather]
    )
    first, second = (json.loads(r.body) for r in requests)
    assert _marks(first) == ["tool:get_weather", "system", "message 0:text"]
    # The second request repeats the first one's messages: the end of what it sent (the user's
    # question) is its stable point, and the tool result is the new last message.
    assert _marks(second) == [
        "tool:get_weather",
        "system",
        "message 0:text",
        "message 2:tool_result",
    ]
    final = result.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert (final.usage.cache_read, final.usage.cache_write) == (3000, 500)
    assert final.usage.extra["cache_write_1h"] == 100
    assert final.cost.cache_read == pytest.approx(3000 * 0.3 / 1e6)
    assert final.cost.cache_write == pytest.approx(500 * 3.75 / 1e6)
