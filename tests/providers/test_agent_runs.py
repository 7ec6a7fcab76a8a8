"""The adapters under the real loop: retries after faults, and full agent runs with tools.

Everything is served by the loopback server on 127.0.0.1 from recorded responses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest

from agentloop import (
    Agent,
    AgentEvent,
    AssistantMessage,
    ErrorKind,
    ModelSpec,
    StopReason,
    StreamRetry,
    ToolResultMessage,
    UserMessage,
    tool,
)
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.retry import ExponentialBackoff
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.ollama import OllamaProvider
from agentloop_providers.openai_chat import OpenAIChatProvider

from ._fixtures import FIXTURES, anthropic_messages
from ._loopback import Reply, serve

if TYPE_CHECKING:
    from agentloop_providers._http import HttpProvider

pytestmark = pytest.mark.anyio

GOOD: dict[type[HttpProvider], tuple[bytes, str]] = {
    AnthropicProvider: (
        (FIXTURES / "anthropic/redacted_thinking.sse").read_bytes(),
        "text/event-stream",
    ),
    OpenAIChatProvider: (
        (FIXTURES / "openai_chat/refusal_deltas.sse").read_bytes(),
        "text/event-stream",
    ),
    OllamaProvider: (
        (FIXTURES / "ollama/chat_stream_text_gemma3.ndjson").read_bytes(),
        "application/x-ndjson",
    ),
}
ADAPTERS = list(GOOD)


def _ids(cls: type[HttpProvider]) -> str:
    return cls.provider_name


async def _run(
    provider_cls: type[HttpProvider], replies: list[Reply]
) -> tuple[Any, list[AgentEvent], int]:
    events: list[AgentEvent] = []
    async with serve(replies) as server:
        async with provider_cls(base_url=server.base_url, api_key="k") as provider:
            config = AgentLoopConfig(
                model=ModelSpec(provider=provider_cls.provider_name, model_id="m"),
                stream_fn=provider,
                retry_strategy=ExponentialBackoff(base_delay=0.01, jitter=False, max_attempts=3),
            )
            with anyio.fail_after(60):
                result = await run_loop(
                    [UserMessage.from_text("hi")], AgentContext(), config, on_event=events.append
                )
        requests = len(server.requests)
    return result, events, requests


@pytest.mark.parametrize("provider_cls", ADAPTERS, ids=_ids)
async def test_429_with_retry_after_then_success(provider_cls: type[HttpProvider]) -> None:
    body, content_type = GOOD[provider_cls]
    replies = [
        Reply(
            status=429, headers={"retry-after": "0.02"}, body=b'{"error":{"message":"slow down"}}'
        ),
        Reply(body=body, content_type=content_type),
    ]
    result, events, requests = await _run(provider_cls, replies)
    assert requests == 2
    assert result.stop_reason is StopReason.STOP
    assert result.error is None
    retries = [e for e in events if isinstance(e, StreamRetry)]
    assert [(r.kind, r.delay) for r in retries] == [
        (ErrorKind.THROTTLED, 0.02)
    ]  # the hint, honoured
    assert [type(m) for m in result.messages] == [UserMessage, AssistantMessage]


@pytest.mark.parametrize("provider_cls", ADAPTERS, ids=_ids)
async def test_5xx_then_success(provider_cls: type[HttpProvider]) -> None:
    body, content_type = GOOD[provider_cls]
    replies = [
        Reply(status=503, body=b"upstream unavailable"),
        Reply(body=body, content_type=content_type),
    ]
    result, events, requests = await _run(provider_cls, replies)
    assert requests == 2
    assert result.stop_reason is StopReason.STOP
    assert [e.kind for e in events if isinstance(e, StreamRetry)] == [ErrorKind.NETWORK]


@pytest.mark.parametrize("provider_cls", ADAPTERS, ids=_ids)
async def test_a_stream_cut_mid_body_then_success(provider_cls: type[HttpProvider]) -> None:
    body, content_type = GOOD[provider_cls]
    replies = [
        Reply(body=body, content_type=content_type, fault="reset", fault_at=len(body) // 2),
        Reply(body=body, content_type=content_type),
    ]
    result, _, requests = await _run(provider_cls, replies)
    assert requests == 2
    assert result.stop_reason is StopReason.STOP
    final = result.final_message
    assert final is not None
    assert final.text  # the retried answer, whole: nothing of the cut attempt leaks in


@pytest.mark.parametrize("provider_cls", ADAPTERS, ids=_ids)
async def test_401_is_not_retried(provider_cls: type[HttpProvider]) -> None:
    replies = [Reply(status=401, body=b'{"error":{"message":"bad key"}}'), Reply(body=b"")]
    result, events, requests = await _run(provider_cls, replies)
    assert requests == 1
    assert result.stop_reason is StopReason.ERROR
    assert result.error_kind is ErrorKind.AUTH
    assert not [e for e in events if isinstance(e, StreamRetry)]


# --------------------------------------------------------------------------- full agent runs


async def test_agent_with_tools_against_anthropic() -> None:
    bodies = anthropic_messages(
        (FIXTURES / "anthropic/multi_turn_client_and_server_tool.chunks.jsonl").read_bytes()
    )
    ran: list[tuple[str, Any]] = []

    @tool(name="readNoteTree")
    async def read_note_tree(noteId: str) -> str:  # noqa: N803
        """Read the tree of a note."""
        ran.append(("readNoteTree", noteId))
        return "- Hello\n- World"

    @tool(name="executeEditorOperation")
    async def execute(noteId: str, operations: list[dict[str, Any]]) -> str:  # noqa: N803
        """Apply editor operations to a note."""
        ran.append(("executeEditorOperation", operations))
        return "ok"

    async with serve([Reply(body=b) for b in bodies]) as server:
        async with AnthropicProvider(base_url=server.base_url, api_key="k") as provider:
            agent = Agent(
                model=ModelSpec(provider="anthropic", model_id="claude-sonnet-4-5"),
                stream_fn=provider,
                tools=[read_note_tree, execute],
                system_prompt="You edit notes.",
            )
            with anyio.fail_after(60):
                result = await agent.prompt("Add a bullet point saying bye")
        requests = server.requests
    assert result.stop_reason is StopReason.STOP
    assert ran == [
        ("readNoteTree", "d10aa585-982b-4bd9-984e-420f9b3717f7"),
        (
            "executeEditorOperation",
            [
                {
                    "op": "insert_node",
                    "type": "bulletedListItem",
                    "text": "bye",
                    "at": {"type": "path", "path": [1]},
                }
            ],
        ),
    ]
    roles = [type(m).__name__ for m in agent.messages]
    assert roles == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
    ]
    assert len(requests) == 3
    second: Any = msgspec.json.decode(requests[1].body)
    replayed = second["messages"][1]["content"]
    assert [b["type"] for b in replayed] == ["text", "tool_use", "server_tool_use"]
    result_block = second["messages"][2]["content"][0]
    assert result_block["type"] == "tool_result"
    assert result_block["tool_use_id"] == "toolu_01U8pzAHj2vNdPCA2Kf8JjeN"
    assert requests[1].headers["x-api-key"] == "k"


async def test_agent_with_parallel_tools_against_openai_chat() -> None:
    first = (FIXTURES / "openai_chat/parallel_tool_calls_usage.sse").read_bytes()
    last = (FIXTURES / "openai_chat/n3_multiple_choices.sse").read_bytes()
    started: list[str] = []
    both_running = anyio.Event()

    async def rendezvous(name: str) -> None:
        started.append(name)
        if len(started) == 2:
            both_running.set()
        with anyio.fail_after(30):
            await both_running.wait()  # proves the two calls run at the same time

    @tool(name="GetWeatherArgs")
    async def weather(city: str, country: str, units: str) -> dict[str, Any]:
        """Weather for a city."""
        await rendezvous("weather")
        return {"city": city, "temperature": 9, "units": units}

    @tool(name="get_stock_price")
    async def stock(ticker: str, exchange: str) -> str:
        """The price of a stock."""
        await rendezvous("stock")
        return f"{ticker} on {exchange}: 230.1"

    async with serve([Reply(body=first), Reply(body=last)]) as server:
        async with OpenAIChatProvider(base_url=server.base_url, api_key="k") as provider:
            agent = Agent(
                model=ModelSpec(provider="openai", model_id="gpt-4o"),
                stream_fn=provider,
                tools=[weather, stock],
            )
            with anyio.fail_after(60):
                result = await agent.prompt("Weather in Edinburgh and the AAPL price?")
        requests = server.requests
    assert result.stop_reason is StopReason.STOP
    assert sorted(started) == ["stock", "weather"]
    assert result.text == '{"city":"San Francisco","temperature":65,"units":"f"}'
    assert result.usage.input == 149 + 79
    second: Any = msgspec.json.decode(requests[1].body)
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [
        "call_JMW1whyEaYG438VE1OIflxA2",
        "call_DNYTawLBoN8fj3KN6qU9N1Ou",
    ]
    assert "AAPL on NASDAQ: 230.1" in tool_messages[1]["content"]


async def test_agent_with_a_tool_against_ollama() -> None:
    first = (FIXTURES / "ollama/docs_chat_stream_tool_call.ndjson").read_bytes()
    last = (FIXTURES / "ollama/chat_stream_text_gemma3.ndjson").read_bytes()
    cities: list[str] = []

    @tool
    async def get_weather(city: str) -> str:
        """Weather for a city."""
        cities.append(city)
        return "rainy, 14 C"

    replies = [
        Reply(body=first, content_type="application/x-ndjson"),
        Reply(body=last, content_type="application/x-ndjson"),
    ]
    async with serve(replies) as server:
        async with OllamaProvider(base_url=server.base_url) as provider:
            agent = Agent(
                model=ModelSpec(provider="ollama", model_id="llama3.2"),
                stream_fn=provider,
                tools=[get_weather],
            )
            with anyio.fail_after(60):
                result = await agent.prompt("Weather in Tokyo?")
        requests = server.requests
    assert result.stop_reason is StopReason.STOP
    assert cities == ["Tokyo"]
    assert result.text == "Okay, here we go!\n\n1, 2, 3, 4, 5\n"
    tool_result = agent.messages[2]
    assert isinstance(tool_result, ToolResultMessage)
    assert tool_result.text == "rainy, 14 C"
    second: Any = msgspec.json.decode(requests[1].body)
    assert second["messages"][-1] == {
        "role": "tool",
        "content": "rainy, 14 C",
        "tool_name": "get_weather",
    }
    assert second["messages"][-2]["tool_calls"] == [
        {"function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}}
    ]
