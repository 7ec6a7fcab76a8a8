"""llama.cpp's own ``llama-server``, done right (issue 37, findings 1-5).

The recordings in ``tests/fixtures/llamacpp`` come from a real ``llama-server --jinja`` serving
SmolLM2-135M (see SOURCES.md and ``tests/real_model/record_llama_server.py``); here they are
served over loopback, so CI keeps every quirk it shows.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import msgspec
import pytest

from agentloop import (
    AssistantMessage,
    ErrorKind,
    ModelSpec,
    StopReason,
    StreamError,
    StreamOptions,
    StreamRetry,
    Text,
    UnknownModel,
    UserMessage,
    tool,
)
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.models import resolve_model
from agentloop.retry import ExponentialBackoff
from agentloop.stream import ErrorEvent, LlmContext, ToolSchema
from agentloop_providers import create_provider
from agentloop_providers._classify import classify_response
from agentloop_providers._context_window import discover_context_window
from agentloop_providers.openai_chat import OpenAIChatCompat, OpenAIChatProvider

from ._fixtures import FIXTURES
from ._loopback import RecordedRequest, Reply, serve
from ._util import collect

if TYPE_CHECKING:
    from agentloop import AgentEvent

pytestmark = pytest.mark.anyio

LLAMA = FIXTURES / "llamacpp"
MODEL = ModelSpec(provider="llamacpp", model_id="smollm2")
ADD = ToolSchema(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
ASK = LlmContext(messages=[UserMessage.from_text("Add 2 and 3.")], tools=[ADD])
OVERFLOW = (LLAMA / "error_400_context_overflow.json").read_bytes()
PROPS = (LLAMA / "props.json").read_bytes()


def _reply(name: str, **kw: Any) -> Reply:
    return Reply(body=(LLAMA / name).read_bytes(), **kw)


def _overflow() -> Reply:
    return Reply(body=OVERFLOW, status=400, content_type="application/json")


@tool
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


async def _loop(
    replies: list[Reply],
    *,
    history: list[Any] | None = None,
    model: ModelSpec = MODEL,
    options: StreamOptions | None = None,
    choose: Any = None,
    provider: Any = None,
) -> tuple[Any, list[AgentEvent], list[RecordedRequest]]:
    events: list[AgentEvent] = []
    async with serve(replies, choose) as server:
        stream_fn = provider or create_provider("llamacpp", base_url=f"{server.base_url}/v1")
        config = AgentLoopConfig(
            model=model,
            stream_fn=stream_fn,
            tools=[add],
            stream_options=options or StreamOptions(),
            retry_strategy=ExponentialBackoff(base_delay=0.01, jitter=False),
        )
        try:
            with anyio.fail_after(60):
                result = await run_loop(
                    [UserMessage.from_text("Add 2 and 3.")],
                    AgentContext(messages=history or []),
                    config,
                    on_event=events.append,
                )
        finally:
            await stream_fn.aclose()
    return result, events, server.requests


def _chat_requests(requests: list[RecordedRequest]) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in requests if r.path.endswith("/chat/completions")]


# --------------------------------------------------------------------------- 1: the window


def test_the_overflow_error_states_the_window() -> None:
    event = classify_response("llamacpp", 400, {}, OVERFLOW)
    assert event.kind is ErrorKind.CONTEXT_OVERFLOW
    assert event.context_window == 2048
    assert "3031 tokens" in event.message


def _long_history(pairs: int) -> list[Any]:
    words = "lorem ipsum dolor sit amet " * 16  # about a hundred tokens a message
    history: list[Any] = []
    for n in range(pairs):
        history.append(UserMessage.from_text(f"question {n}: {words}"))
        history.append(AssistantMessage(content=[Text(text=f"answer {n}: {words}")]))
    return history


async def test_overflow_recovery_trims_to_the_window_the_server_stated() -> None:
    # A spec without a context window: before, the recovery halved the *estimated* history
    # (~4,400 of ~8,800 tokens here), which cannot fit the server's 2,048 and failed again.
    history = _long_history(40)
    result, _, requests = await _loop(
        [_overflow(), _reply("text_usage_timings.sse")], history=history
    )
    first, retry = _chat_requests(requests)
    assert result.error is None and result.text  # the retry fit
    size = len(json.dumps(retry["messages"])) // 4  # about the tokens the retry sends
    assert size < 2048 // 2, f"the retry still sends about {size} tokens"
    assert len(retry["messages"]) < len(first["messages"])


async def test_an_overflow_without_the_window_asks_the_server_for_it() -> None:
    # llama_cpp.server (Python) says only "exceeds the available context size": /props says
    # how large it is.
    bare = json.dumps(
        {"error": {"message": "the request exceeds the available context size, try increasing it"}}
    ).encode()

    def choose(request: RecordedRequest) -> Reply:
        if request.path == "/props":
            return Reply(body=PROPS, content_type="application/json")
        if len([r for r in server_requests if r.path.endswith("/completions")]) == 1:
            return Reply(body=bare, status=400, content_type="application/json")
        return _reply("text_usage_timings.sse")

    server_requests: list[RecordedRequest] = []

    def recording(request: RecordedRequest) -> Reply:
        server_requests.append(request)
        return choose(request)

    result, _, requests = await _loop([], history=_long_history(40), choose=recording)
    assert [r.path for r in requests] == [
        "/v1/chat/completions",
        "/props",
        "/v1/chat/completions",
    ]
    assert result.error is None and result.text
    retry = _chat_requests(requests)[1]
    assert len(json.dumps(retry["messages"])) // 4 < 2048 // 2


def test_model_strings_carry_a_context_window() -> None:
    resolved = resolve_model("llamacpp:qwen?context_window=8192")
    assert resolved.spec.model_id == "qwen" and resolved.spec.context_window == 8192
    assert resolve_model("vllm:org/model?context_window=512").spec.model_id == "org/model"
    for bad in ("llamacpp:q?context_window=0", "llamacpp:q?window=8", "llamacpp:q?context_window"):
        with pytest.raises(UnknownModel):
            resolve_model(bad)


def _client(routes: dict[str, Any]) -> httpx.AsyncClient:
    def respond(request: httpx.Request) -> httpx.Response:
        found = routes.get(f"{request.method} {request.url.path}")
        if found is None:
            return httpx.Response(404)
        return httpx.Response(200, json=found)

    return httpx.AsyncClient(transport=httpx.MockTransport(respond))


@pytest.mark.parametrize(
    ("preset", "routes", "window"),
    [
        ("llamacpp", {"GET /props": json.loads(PROPS)}, 2048),
        (
            "ollama",  # a loaded model's window first (/api/ps), then the Modelfile's num_ctx
            {
                "GET /api/ps": {"models": [{"name": "qwen3:4b", "context_length": 8192}]},
                "POST /api/show": {"parameters": "num_ctx 4096"},
            },
            8192,
        ),
        (
            "ollama_openai",
            {
                "GET /api/ps": {"models": []},
                "POST /api/show": {"model_info": {"qwen3.context_length": 40960}},
            },
            40960,
        ),
        (
            "lmstudio",
            {"GET /api/v0/models/qwen3:4b": {"loaded_context_length": 4096}},
            4096,
        ),
        (
            "vllm",
            {"GET /v1/models": {"data": [{"id": "qwen3:4b", "max_model_len": 32768}]}},
            32768,
        ),
        ("llamacpp", {"GET /props": ["not", "an", "object"]}, None),
        ("openai", {}, None),
    ],
)
async def test_servers_say_their_window(
    preset: str, routes: dict[str, Any], window: int | None
) -> None:
    async with _client(routes) as client:
        provider = create_provider(preset, client=client, api_key="k")
        assert await discover_context_window(provider, "qwen3:4b") == window


# --------------------------------------------------------------------------- 2: forced calls


async def test_a_forced_call_goes_as_a_json_schema_and_comes_back_a_call() -> None:
    async with serve([_reply("json_schema_forced_call.sse")]) as server:
        provider = create_provider("llamacpp", base_url=f"{server.base_url}/v1")
        _, message = await collect(provider, MODEL, ASK, StreamOptions(tool_choice="required"))
        await provider.aclose()
    body = json.loads(server.requests[0].body)
    assert "tool_choice" not in body
    assert body["response_format"]["type"] == "json_schema"
    assert message.stop_reason is StopReason.TOOL_USE
    assert not [b for b in message.content if type(b) is Text]
    (call,) = message.tool_calls
    assert (call.name, call.arguments) == ("add", {"a": 2, "b": 3})


async def test_a_forced_call_that_does_not_come_is_a_typed_retryable_error() -> None:
    # As sent before the fix ("required"): the recording answers in prose.
    compat = OpenAIChatCompat(
        max_tokens_field="max_tokens", tool_choice_required="required", model_id_from_server=False
    )
    async with serve([_reply("required_answers_in_text.sse")]) as server:
        provider = OpenAIChatProvider(
            base_url=f"{server.base_url}/v1", compat=compat, provider_name="llamacpp"
        )
        _, message = await collect(provider, MODEL, ASK, StreamOptions(tool_choice="required"))
        await provider.aclose()
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.TOOL_NOT_CALLED
    assert "answered without one" in (message.error_message or "")
    error = StreamError("x", kind=ErrorKind.TOOL_NOT_CALLED)
    assert ExponentialBackoff().should_retry(error, 1)


async def test_the_loop_retries_an_ignored_forced_call() -> None:
    compat = OpenAIChatCompat(max_tokens_field="max_tokens", tool_choice_required="required")
    replies = [
        _reply("required_answers_in_text.sse"),
        _reply("tool_calls_hermes.sse"),
        _reply("text_usage_timings.sse"),
    ]

    def stop_after_the_call(ctx: Any, options: StreamOptions) -> StreamOptions:
        return options if ctx.turn == 0 else msgspec.structs.replace(options, tool_choice="none")

    async with serve(replies) as server:
        provider = OpenAIChatProvider(base_url=f"{server.base_url}/v1", compat=compat)
        config = AgentLoopConfig(
            model=MODEL,
            stream_fn=provider,
            tools=[add],
            stream_options=StreamOptions(tool_choice="required", max_tokens=40),
            retry_strategy=ExponentialBackoff(base_delay=0.01, jitter=False),
            turn_options=stop_after_the_call,
        )
        events: list[AgentEvent] = []
        with anyio.fail_after(60):
            result = await run_loop(
                [UserMessage.from_text("Add 2 and 3.")],
                AgentContext(),
                config,
                on_event=events.append,
            )
        await provider.aclose()
    retries = [e for e in events if type(e) is StreamRetry]
    assert [r.kind for r in retries] == [ErrorKind.TOOL_NOT_CALLED]
    first = result.messages[1]
    assert type(first) is AssistantMessage and first.stop_reason is StopReason.TOOL_USE


# --------------------------------------------------------------------------- 3: mid-stream


async def test_a_mid_stream_server_error_is_not_network_and_is_not_retried() -> None:
    result, events, requests = await _loop([_reply("error_midstream_peg_format.sse")] * 4)
    assert len(_chat_requests(requests)) == 1  # one generation, not four
    assert not [e for e in events if type(e) is StreamRetry]
    assert result.error_kind is ErrorKind.OTHER
    assert "does not match the expected peg-native format" in (result.error or "")


async def test_the_mid_stream_error_event_keeps_the_servers_message() -> None:
    async with serve([_reply("error_midstream_peg_format.sse")]) as server:
        provider = create_provider("llamacpp", base_url=f"{server.base_url}/v1")
        events, message = await collect(provider, MODEL, ASK, StreamOptions())
        await provider.aclose()
    error = events[-1]
    assert type(error) is ErrorEvent and error.kind is ErrorKind.OTHER
    assert error.message.startswith("llamacpp stream error 500 (server_error): The model")
    assert message.error_kind is ErrorKind.OTHER


# --------------------------------------------------------------------------- 4: model id


async def test_the_answer_keeps_the_model_strings_id_not_the_servers_file_path() -> None:
    async with serve([_reply("text_usage_timings.sse")]) as server:
        provider = create_provider("llamacpp", base_url=f"{server.base_url}/v1")
        _, message = await collect(provider, MODEL, ASK, StreamOptions())
        await provider.aclose()
    assert (
        b"model/SmolLM2-135M-Instruct.Q4_1.gguf" in (LLAMA / "text_usage_timings.sse").read_bytes()
    )
    assert message.model_id == "smollm2"


# --------------------------------------------------------------------------- 5: wire quirks


async def test_text_with_a_null_first_content_and_usage_beside_timings() -> None:
    body = (LLAMA / "text_usage_timings.sse").read_bytes()
    assert b'"content":null' in body and b'"choices":[],' in body and b'"timings"' in body
    result, _, _ = await _loop([Reply(body=body, chunk_size=31)])
    assert result.stop_reason is StopReason.LENGTH  # max_tokens 8 when it was recorded
    assert result.text.strip()
    assert not result.usage.estimated
    assert result.usage.input == 33 and result.usage.output == 8


async def test_the_object_tool_choice_is_ignored_by_the_server_so_it_is_not_sent() -> None:
    body = (LLAMA / "named_object_ignored.sse").read_bytes()
    assert b"tool_calls" not in body  # what the server does with the object: nothing
    async with serve([_reply("json_schema_forced_call.sse")]) as server:
        provider = create_provider("llamacpp", base_url=f"{server.base_url}/v1")
        _, message = await collect(provider, MODEL, ASK, StreamOptions(tool_choice="add"))
        await provider.aclose()
    sent = json.loads(server.requests[0].body)
    assert "tool_choice" not in sent and [t["function"]["name"] for t in sent["tools"]] == ["add"]
    assert message.tool_calls[0].name == "add"


async def test_tool_call_chunks_of_a_template_that_speaks_tools() -> None:
    result, _, _ = await _loop(
        [_reply("tool_calls_hermes.sse", chunk_size=17), _reply("text_usage_timings.sse")]
    )
    first = result.messages[1]
    assert type(first) is AssistantMessage and first.stop_reason is StopReason.TOOL_USE
    (call,) = first.tool_calls
    assert call.name == "add" and set(call.arguments) <= {"a", "b"}
    first_chunk = next(
        json.loads(line[6:])
        for line in (LLAMA / "tool_calls_hermes.sse").read_text().splitlines()
        if '"tool_calls"' in line
    )
    assert call.id == first_chunk["choices"][0]["delta"]["tool_calls"][0]["id"]
