"""Bedrock Converse requests: the body for every block type, and a full agent run."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from agentloop import (
    AssistantMessage,
    Image,
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
from agentloop.stream import LlmContext, ToolSchema
from agentloop_providers._sigv4 import AwsCredentials
from agentloop_providers.bedrock import BedrockProvider

from ._loopback_ii import Reply, agent_run, fixture_bytes

pytestmark = pytest.mark.anyio

CREDS = AwsCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-tok")
ES = "application/vnd.amazon.eventstream"


def make(**kwargs: Any) -> BedrockProvider:
    return BedrockProvider(credentials=CREDS, region="us-west-2", **kwargs)


def test_payload_for_every_block_type() -> None:
    model = ModelSpec(
        provider="bedrock",
        model_id="us.anthropic.claude-sonnet-4-20250514-v1:0",
        thinking_level=ThinkingLevel.LOW,
        max_output_tokens=4096,
    )
    history = LlmContext(
        system_prompt="Be brief.",
        messages=[
            UserMessage(content=[Text(text="look"), Image(media_type="image/jpeg", data="AAAA")]),
            AssistantMessage(
                provider="bedrock",
                content=[
                    Thinking(thinking="plan", signature="sig-1"),
                    Thinking(redacted=True, data="b64-redacted"),
                    Thinking(thinking="unsigned: cannot be proved"),
                    Text(text="Zooming."),
                    ToolCall(id="tooluse_1", name="zoom", arguments={"x": 1}),
                    ToolCall(id="tooluse_2", name="pan", arguments={}),
                ],
            ),
            ToolResultMessage(
                tool_call_id="tooluse_1",
                content=[Text(text="done"), Image(media_type="image/png", data="BBBB")],
            ),
            ToolResultMessage(tool_call_id="tooluse_2", content=[Text(text="no")], is_error=True),
            AssistantMessage(
                provider="openai",
                content=[Thinking(thinking="foreign", signature="x"), Text(text="")],
            ),
            UserMessage.from_text("thanks"),
        ],
        tools=[ToolSchema(name="zoom", description="Zoom in.", parameters={"type": "object"})],
    )
    # The body as sent: the provider keeps the history encoded (msgspec.Raw items).
    payload = make(prompt_caching=False).payload(model, history, StreamOptions(temperature=0.3))
    body = json.loads(msgspec.json.encode(payload))
    assert body == {
        "system": [{"text": "Be brief."}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"text": "look"},
                    {"image": {"format": "jpeg", "source": {"bytes": "AAAA"}}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "plan", "signature": "sig-1"}}},
                    {"reasoningContent": {"redactedContent": "b64-redacted"}},
                    {"text": "unsigned: cannot be proved"},
                    {"text": "Zooming."},
                    {"toolUse": {"toolUseId": "tooluse_1", "name": "zoom", "input": {"x": 1}}},
                    {"toolUse": {"toolUseId": "tooluse_2", "name": "pan", "input": {}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "tooluse_1",
                            "content": [
                                {"text": "done"},
                                {"image": {"format": "png", "source": {"bytes": "BBBB"}}},
                            ],
                            "status": "success",
                        }
                    },
                    {
                        "toolResult": {
                            "toolUseId": "tooluse_2",
                            "content": [{"text": "no"}],
                            "status": "error",
                        }
                    },
                ],
            },
            {"role": "assistant", "content": [{"text": "foreign"}]},
            {"role": "user", "content": [{"text": "thanks"}]},
        ],
        # Temperature is not sent with extended thinking (Claude rejects the pair).
        "inferenceConfig": {"maxTokens": 4096},
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "zoom",
                        "description": "Zoom in.",
                        "inputSchema": {"json": {"type": "object"}},
                    }
                }
            ]
        },
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 2048}},
    }


def test_endpoint_encodes_the_model_id() -> None:
    model = ModelSpec(provider="bedrock", model_id="us.amazon.nova-micro-v1:0")
    assert make().endpoint(model, StreamOptions()) == (
        "https://bedrock-runtime.us-west-2.amazonaws.com/model/us.amazon.nova-micro-v1%3A0/"
        "converse-stream"
    )


@tool
async def get_temperature(city: str) -> str:
    """The temperature in a city, in degrees Celsius.

    Args:
        city: the city.
    """
    return {"Paris": "21"}.get(city, "unknown")


async def test_agent_run_over_loopback() -> None:
    model = ModelSpec(provider="bedrock", model_id="us.amazon.nova-micro-v1:0")
    replies = [
        Reply(
            fixture_bytes("bedrock/converse_stream_text_then_tool_use_nova.bin"), content_type=ES
        ),
        Reply(fixture_bytes("bedrock/converse_stream_reasoning_claude.bin"), content_type=ES),
    ]
    result, requests = await agent_run(
        make, model, replies, [get_temperature], "How warm is the capital of France?",
        options=StreamOptions(),
    )  # fmt: skip
    assert result.stop_reason is StopReason.STOP
    assert result.text == "Hello! It's nice to meet you. How can I help you today?"
    assert result.usage.input == 471 + 36
    for request in requests:
        assert request.path == "/model/us.amazon.nova-micro-v1%3A0/converse-stream"
        assert request.headers["x-amz-security-token"] == "session-tok"
        assert "/us-west-2/bedrock/aws4_request" in request.headers["authorization"]
    second = json.loads(requests[1].body)
    assert second["messages"][1]["content"][-1] == {
        "toolUse": {
            "toolUseId": "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
            "name": "get_temperature",
            "input": {"city": "Paris"},
        }
    }
    assert second["messages"][2] == {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
                    "content": [{"text": "21"}],
                    "status": "success",
                }
            },
            {"cachePoint": {"type": "default"}},  # Nova caches: the history's last point
        ],
    }
    assert second["messages"][0]["content"][-1] == {"cachePoint": {"type": "default"}}


def test_thinking_leaves_room_to_answer() -> None:
    model = ModelSpec(
        provider="bedrock",
        model_id="anthropic.claude-3-7-sonnet-20250219-v1:0",
        thinking_level=ThinkingLevel.HIGH,
    )
    body = make().payload(
        model, LlmContext(messages=[UserMessage.from_text("hi")]), StreamOptions()
    )
    assert body["inferenceConfig"] == {"maxTokens": 16384 + 4096}
    assert body["additionalModelRequestFields"]["thinking"]["budget_tokens"] == 16384
    nova = ModelSpec(
        provider="bedrock", model_id="amazon.nova-lite-v1:0", thinking_level=ThinkingLevel.HIGH
    )
    nova_body = make().payload(
        nova, LlmContext(messages=[UserMessage.from_text("hi")]), StreamOptions()
    )
    assert "additionalModelRequestFields" not in nova_body
    assert "inferenceConfig" not in nova_body
