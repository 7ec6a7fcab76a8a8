"""Request payloads for a context holding every block type, per provider's documented shape.

Anthropic: https://docs.anthropic.com/en/api/messages (content blocks, tool_use/tool_result,
thinking/redacted_thinking, cache_control). OpenAI: https://platform.openai.com/docs/api-reference/chat
(messages, tool_calls with JSON-string arguments, role "tool", image_url parts,
stream_options). Ollama: https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion
(images as base64 lists, tool_calls with object arguments, role "tool" with tool_name, think,
options.num_predict).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import msgspec
import pytest

from agentloop import (
    AssistantMessage,
    Extension,
    Image,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
    ThinkingBudgets,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentloop.stream import LlmContext, ToolSchema
from agentloop_providers.anthropic import AnthropicProvider, anthropic_payload
from agentloop_providers.ollama import OllamaProvider, ollama_payload
from agentloop_providers.openai_chat import (
    OpenAIChatCompat,
    OpenAIChatProvider,
    openai_chat_payload,
)
from agentloop_providers.proxy import ProxyProvider

from ._util import collect

if TYPE_CHECKING:
    from agentloop_providers._http import HttpProvider

pytestmark = pytest.mark.anyio

PNG = "iVBORw0KGgo="
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
SERVER_TOOL = {
    "type": "server_tool_use",
    "id": "srvtoolu_1",
    "name": "web_search",
    "input": {"query": "x"},
}


def every_block_context(provider: str) -> LlmContext:
    """A conversation using every block type, the assistant turns made by ``provider``."""
    return LlmContext(
        system_prompt="You are terse.",
        messages=[
            UserMessage(
                content=[
                    Text(text="What is in these?"),
                    Image(media_type="image/png", data=PNG),
                    Image(url="https://example.com/cat.jpg"),
                ]
            ),
            AssistantMessage(
                provider=provider,
                stop_reason=StopReason.TOOL_USE,
                content=[
                    Thinking(thinking="Let me look.", signature="sig-1"),
                    Thinking(redacted=True, data="opaque-1"),
                    Extension(type_name="server_tool_use", data=SERVER_TOOL),
                    Text(text="Checking the weather."),
                    Text(text=""),
                    ToolCall(id="call_1", name="weather", arguments={"city": "Paris"}),
                    ToolCall(id="call_2", name="weather", arguments={"city": "Oslo"}),
                ],
            ),
            ToolResultMessage(
                tool_call_id="call_1",
                tool_name="weather",
                content=[Text(text="sunny"), Image(media_type="image/png", data=PNG)],
            ),
            ToolResultMessage(
                tool_call_id="call_2",
                tool_name="weather",
                content=[Text(text="no such city")],
                is_error=True,
            ),
            AssistantMessage(
                provider="some-other-provider",
                content=[
                    Thinking(thinking="Foreign thoughts.", signature="not-yours"),
                    Thinking(redacted=True, data="foreign-opaque"),
                    Text(text="Paris is sunny."),
                ],
            ),
            UserMessage.from_text("Thanks. And tomorrow?"),
        ],
        tools=[ToolSchema(name="weather", description="Weather for a city.", parameters=SCHEMA)],
    )


OPTIONS = StreamOptions(temperature=0.2, max_tokens=1000)


def test_anthropic_payload() -> None:
    model = ModelSpec(provider="anthropic", model_id="claude-x")
    body = anthropic_payload(model, every_block_context("anthropic"), OPTIONS)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    assert body == {
        "model": "claude-x",
        "stream": True,
        "max_tokens": 1000,
        "temperature": 0.2,
        "system": [
            {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
        ],
        "tools": [
            {
                "name": "weather",
                "description": "Weather for a city.",
                "input_schema": SCHEMA,
                "cache_control": {"type": "ephemeral"},  # the tools' breakpoint
            }
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in these?"},
                    image,
                    {
                        "type": "image",
                        "source": {"type": "url", "url": "https://example.com/cat.jpg"},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Let me look.", "signature": "sig-1"},
                    {"type": "redacted_thinking", "data": "opaque-1"},
                    SERVER_TOOL,
                    {"type": "text", "text": "Checking the weather."},
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "call_2",
                        "name": "weather",
                        "input": {"city": "Oslo"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_1",
                        "content": [{"type": "text", "text": "sunny"}, image],
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_2",
                        "content": [{"type": "text", "text": "no such city"}],
                        "is_error": True,
                        # The last stable point: where the previous turn's request ended.
                        "cache_control": {"type": "ephemeral"},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Foreign thoughts."},
                    {"type": "text", "text": "Paris is sunny."},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "Thanks. And tomorrow?",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
        ],
    }


def test_anthropic_thinking_budget_and_no_temperature() -> None:
    budgets = ThinkingBudgets(budgets={ThinkingLevel.HIGH: 12000})
    model = ModelSpec(
        provider="anthropic",
        model_id="m",
        thinking_level=ThinkingLevel.HIGH,
        thinking_budgets=budgets,
    )
    body = anthropic_payload(model, every_block_context("anthropic"), OPTIONS, prompt_caching=False)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 12000}
    assert body["max_tokens"] == 12000 + 1024  # room for the answer beyond the budget
    assert "temperature" not in body  # the API refuses a temperature with thinking
    assert "cache_control" not in str(body)
    low = ModelSpec(provider="anthropic", model_id="m", thinking_level=ThinkingLevel.LOW)
    assert (
        anthropic_payload(low, LlmContext(), StreamOptions())["thinking"]["budget_tokens"] == 2048
    )


def test_anthropic_unsigned_thinking_of_its_own_is_replayed_as_text() -> None:
    context = LlmContext(
        messages=[AssistantMessage(provider="anthropic", content=[Thinking(thinking="hmm")])]
    )
    model = ModelSpec(provider="anthropic", model_id="m")
    body = anthropic_payload(model, context, StreamOptions(), prompt_caching=False)
    assert body["messages"] == [{"role": "assistant", "content": [{"type": "text", "text": "hmm"}]}]


def test_openai_chat_payload() -> None:
    model = ModelSpec(provider="openai", model_id="gpt-x", thinking_level=ThinkingLevel.MEDIUM)
    body = openai_chat_payload(model, every_block_context("openai"), OPTIONS)
    data_url = f"data:image/png;base64,{PNG}"
    assert body == {
        "model": "gpt-x",
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.2,
        "max_completion_tokens": 1000,
        "reasoning_effort": "medium",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Weather for a city.",
                    "parameters": SCHEMA,
                },
            }
        ],
        "messages": [
            {"role": "system", "content": "You are terse."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in these?"},
                    {"type": "image_url", "image_url": {"url": data_url}},
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
                ],
            },
            {
                "role": "assistant",
                "content": "Checking the weather.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such city"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Images returned by the tool:"},
                    {"type": "image_url", "image_url": {"url": data_url}},
                ],
            },
            {"role": "assistant", "content": "Foreign thoughts.Paris is sunny."},
            {"role": "user", "content": "Thanks. And tomorrow?"},
        ],
    }


def test_openai_chat_compat_switches() -> None:
    compat = OpenAIChatCompat(
        max_tokens_field="max_tokens",
        system_role="developer",
        stream_usage=False,
        reasoning_effort=False,
        tool_result_images="drop",
    )
    model = ModelSpec(provider="vllm", model_id="m", thinking_level=ThinkingLevel.HIGH)
    body = openai_chat_payload(model, every_block_context("vllm"), OPTIONS, compat)
    assert body["max_tokens"] == 1000
    assert "max_completion_tokens" not in body
    assert body["messages"][0]["role"] == "developer"
    assert "stream_options" not in body
    assert "reasoning_effort" not in body
    assert "Images returned by the tool:" not in str(body)


def test_ollama_payload() -> None:
    model = ModelSpec(provider="ollama", model_id="llama3.2", thinking_level=ThinkingLevel.LOW)
    body = ollama_payload(model, every_block_context("ollama"), OPTIONS)
    assert body == {
        "model": "llama3.2",
        "stream": True,
        "think": True,
        "options": {"temperature": 0.2, "num_predict": 1000},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Weather for a city.",
                    "parameters": SCHEMA,
                },
            }
        ],
        "messages": [
            {"role": "system", "content": "You are terse."},
            {
                "role": "user",
                "content": "What is in these?[image: https://example.com/cat.jpg]",
                "images": [PNG],
            },
            {
                "role": "assistant",
                "content": "Checking the weather.",
                "thinking": "Let me look.",
                "tool_calls": [
                    {"function": {"name": "weather", "arguments": {"city": "Paris"}}},
                    {"function": {"name": "weather", "arguments": {"city": "Oslo"}}},
                ],
            },
            {"role": "tool", "content": "sunny", "tool_name": "weather", "images": [PNG]},
            {"role": "tool", "content": "Error: no such city", "tool_name": "weather"},
            {"role": "assistant", "content": "Foreign thoughts.Paris is sunny."},
            {"role": "user", "content": "Thanks. And tomorrow?"},
        ],
    }


@pytest.mark.parametrize(
    ("provider", "url", "headers"),
    [
        (
            AnthropicProvider(api_key="k-1"),
            "https://api.anthropic.com/v1/messages",
            {
                "x-api-key": "k-1",
                "anthropic-version": "2023-06-01",
                "content-type": "application/json",
            },
        ),
        (
            AnthropicProvider(api_key="k-1", beta=["a-1", "b-2"]),
            "https://api.anthropic.com/v1/messages",
            {"anthropic-beta": "a-1,b-2"},
        ),
        (
            OpenAIChatProvider(api_key="k-2"),
            "https://api.openai.com/v1/chat/completions",
            {"authorization": "Bearer k-2", "content-type": "application/json"},
        ),
        (
            OpenAIChatProvider(base_url="https://api.groq.com/openai/v1/", api_key="k-3"),
            "https://api.groq.com/openai/v1/chat/completions",
            {"authorization": "Bearer k-3"},
        ),
        (OllamaProvider(), "http://127.0.0.1:11434/api/chat", {"content-type": "application/json"}),
        (
            ProxyProvider("https://proxy.example/stream", token="t-4"),
            "https://proxy.example/stream",
            {"authorization": "Bearer t-4"},
        ),
    ],
    ids=["anthropic", "anthropic-beta", "openai", "groq", "ollama", "proxy"],
)
async def test_the_request_on_the_wire(
    provider: HttpProvider, url: str, headers: dict[str, str]
) -> None:
    seen: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500)

    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        # Test seam: route the provider's own client to the mock (a given client is not
        # replaced on another event loop).
        provider._client, provider._owns_client = client, False
        model = ModelSpec(provider="p", model_id="m")
        await collect(provider, model, every_block_context("p"), OPTIONS)
    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == url
    for name, value in headers.items():
        assert request.headers[name] == value
    body: Any = msgspec.json.decode(request.content)
    assert isinstance(body, dict)
    assert "k-1" not in request.content.decode()  # keys travel in headers only
    assert "t-4" not in request.content.decode()


async def test_extra_body_parameters_are_merged_last() -> None:
    seen: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500)

    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        provider = OpenAIChatProvider(client=client, api_key="k")
        options = StreamOptions(
            extra={"extra_body": {"seed": 7, "stream_options": {"include_usage": False}}}
        )
        await collect(provider, ModelSpec(provider="openai", model_id="m"), LlmContext(), options)
    body: Any = msgspec.json.decode(seen[0].content)
    assert body["seed"] == 7
    assert body["stream_options"] == {"include_usage": False}
    assert body["stream"] is True
