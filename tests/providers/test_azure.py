"""Azure OpenAI: deployment URLs and api-version, api-key or bearer token, filter fields."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloop import ErrorKind, ModelSpec, StopReason, StreamOptions, UserMessage, tool
from agentloop.stream import LlmContext
from agentloop_providers.azure import AzureChatProvider, AzureResponsesProvider

from ._fixtures import Case, check, wrap_chunks
from ._loopback_ii import FIXTURES, Reply, agent_run, replay_via

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="azure", model_id="gpt-5-nano")


def make_chat(**kwargs: Any) -> AzureChatProvider:
    base = kwargs.pop("base_url", "https://res.openai.azure.com")
    return AzureChatProvider(endpoint=base, deployment="my-dep", api_key="az-key", **kwargs)


def make_responses(**kwargs: Any) -> AzureResponsesProvider:
    base = kwargs.pop("base_url", "https://res.openai.azure.com")
    return AzureResponsesProvider(endpoint=base, api_key="az-key", **kwargs)


def _read(name: str, *, named: bool) -> bytes:
    return wrap_chunks((FIXTURES / "azure" / name).read_bytes(), event_names=named)


CHAT = Case(
    "chat_model_router_content_filter",
    AzureChatProvider,
    _read("chat_model_router_content_filter.chunks.jsonl", named=False),
    StopReason.STOP,
    ["text"],
    text_start="Capital of Denmark.",
    text_len=19,
    usage=(15, 78, 0, 0),
    usage_extra={"reasoning_tokens": 64},
)
RESPONSES = Case(
    "responses_tool_call",
    AzureResponsesProvider,
    _read("responses_tool_call.chunks.jsonl", named=True),
    StopReason.TOOL_USE,
    ["call"],
    calls=[("weather", "call_H5DxLSFnsGhiROnUiDHmgyc8", {"location": "San Francisco"})],
    usage=(45, 24, 0, 0),
)
NO_KEY_OPTIONS = StreamOptions()


@pytest.mark.parametrize("transport", ["mock", "loopback"])
async def test_chat_fixture(transport: str) -> None:
    message, _, requests = await replay_via(
        transport, make_chat, MODEL, Reply(CHAT.body), options=NO_KEY_OPTIONS
    )
    check(CHAT, message)
    (request,) = requests
    assert request.path == "/openai/deployments/my-dep/chat/completions?api-version=2024-10-21"
    assert request.headers["api-key"] == "az-key"
    assert "authorization" not in request.headers
    assert json.loads(request.body)["model"] == "my-dep"


@pytest.mark.parametrize("transport", ["mock", "loopback"])
async def test_responses_fixture(transport: str) -> None:
    message, _, requests = await replay_via(
        transport, make_responses, MODEL, Reply(RESPONSES.body), options=NO_KEY_OPTIONS
    )
    check(RESPONSES, message)
    (request,) = requests
    assert request.path == "/openai/responses?api-version=2025-04-01-preview"
    assert request.headers["api-key"] == "az-key"
    assert json.loads(request.body)["model"] == "gpt-5-nano"  # the deployment: the model id


def _chat_sse(*chunks: dict[str, Any]) -> bytes:
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return body + b"data: [DONE]\n\n"


async def test_content_filter_finish_is_classified() -> None:
    filtered = {"hate": {"filtered": True, "severity": "high"}}
    body = _chat_sse(
        {"choices": [], "prompt_filter_results": [{"prompt_index": 0}]},
        {"choices": [{"index": 0, "delta": {"content": "Some"}, "content_filter_results": {}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {},
                    "finish_reason": "content_filter",
                    "content_filter_results": filtered,
                }
            ],
            "obfuscation": "abc",
        },
    )
    message, _, _ = await replay_via("mock", make_chat, MODEL, Reply(body))
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.CONTENT_FILTERED
    assert message.text == "Some"


async def test_prompt_rejected_by_the_content_filter() -> None:
    body = json.dumps(
        {
            "error": {
                "code": "content_filter",
                "message": "The response was filtered due to the prompt triggering Azure "
                "OpenAI's content management policy.",
                "status": 400,
            }
        }
    ).encode()
    reply = Reply(body, status=400, content_type="application/json")
    message, _, _ = await replay_via("loopback", make_chat, MODEL, reply)
    assert message.error_kind is ErrorKind.CONTENT_FILTERED


async def test_incomplete_responses_for_content_filter() -> None:
    events = [
        {"type": "response.created", "response": {"model": "gpt-5"}},
        {
            "type": "response.incomplete",
            "response": {
                "status": "incomplete",
                "incomplete_details": {"reason": "content_filter"},
            },
        },
    ]
    body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
    message, _, _ = await replay_via("mock", make_responses, MODEL, Reply(body))
    assert message.error_kind is ErrorKind.CONTENT_FILTERED


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_bearer_token_from_a_token_provider(api: str) -> None:
    calls = 0

    async def token() -> str:
        nonlocal calls
        calls += 1
        return f"entra-token-{calls}"

    def make(**kwargs: Any) -> AzureChatProvider | AzureResponsesProvider:
        cls = AzureChatProvider if api == "chat" else AzureResponsesProvider
        return cls(endpoint=kwargs.pop("base_url"), token_provider=token, **kwargs)

    body = CHAT.body if api == "chat" else RESPONSES.body
    message, _, requests = await replay_via(
        "loopback", make, MODEL, Reply(body), options=NO_KEY_OPTIONS
    )
    assert message.stop_reason is not StopReason.ERROR
    (request,) = requests
    assert request.headers["authorization"] == "Bearer entra-token-1"
    assert "api-key" not in request.headers


def test_v1_routes_and_endpoint_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://env.openai.azure.com/")
    chat = AzureChatProvider(api_version="v1", api_key="k")
    responses = AzureResponsesProvider(api_version="v1", api_key="k", deployment="dep")
    opts = StreamOptions()
    assert chat.endpoint(MODEL, opts) == "https://env.openai.azure.com/openai/v1/chat/completions"
    assert responses.endpoint(MODEL, opts) == "https://env.openai.azure.com/openai/v1/responses"
    ctx = LlmContext(messages=[UserMessage.from_text("hi")])
    assert responses.payload(MODEL, ctx, opts)["model"] == "dep"
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT")
    with pytest.raises(ValueError, match="AZURE_OPENAI_ENDPOINT"):
        AzureChatProvider(api_key="k")


async def test_missing_key_is_an_auth_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)

    def make(**kwargs: Any) -> AzureChatProvider:
        return AzureChatProvider(endpoint="https://res.openai.azure.com", **kwargs)

    message, _, requests = await replay_via(
        "mock", make, MODEL, Reply(CHAT.body), options=NO_KEY_OPTIONS
    )
    assert message.error_kind is ErrorKind.AUTH
    assert requests == []


@tool
async def weather(location: str) -> str:
    """Today's weather.

    Args:
        location: a city.
    """
    return f"Sunny in {location}."


async def test_chat_agent_run_over_loopback() -> None:
    # Turn one: an OpenAI-compatible tool call recorded from xAI; turn two: Azure's own stream.
    call = wrap_chunks(
        (FIXTURES / "xai" / "chat_reasoning_then_tool_call.chunks.jsonl").read_bytes(),
        event_names=False,
    )
    replies = [Reply(call, chunk_size=100), Reply(CHAT.body, chunk_size=100)]
    result, requests = await agent_run(
        make_chat, MODEL, replies, [weather], "Weather?", options=NO_KEY_OPTIONS
    )
    assert result.stop_reason is StopReason.STOP
    assert result.text == "Capital of Denmark."
    assert all(r.headers["api-key"] == "az-key" for r in requests)
    second = json.loads(requests[1].body)
    assert second["messages"][-1]["content"] == "Sunny in San Francisco."


async def test_responses_agent_run_over_loopback() -> None:
    text = (FIXTURES / "openai_responses" / "text_after_tool_result.sse").read_bytes()
    replies = [Reply(RESPONSES.body, chunk_size=100), Reply(text, chunk_size=100)]
    result, requests = await agent_run(
        make_responses, MODEL, replies, [weather], "Weather?", options=NO_KEY_OPTIONS
    )
    assert result.stop_reason is StopReason.STOP
    assert result.text == "The capital of France is Paris."
    second = json.loads(requests[1].body)
    assert second["input"][-2]["type"] == "function_call"
    assert second["input"][-1]["output"] == "Sunny in San Francisco."


def test_every_fixture_has_a_case() -> None:
    files = {p.name.split(".")[0] for p in (FIXTURES / "azure").iterdir()}
    assert files == {CHAT.name, RESPONSES.name}
