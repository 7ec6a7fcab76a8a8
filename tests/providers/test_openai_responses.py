"""OpenAI Responses API: recorded streams, synthetic edge cases, and the request body."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from agentloop import (
    AssistantMessage,
    ErrorKind,
    Extension,
    Image,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    tool,
)
from agentloop.stream import LlmContext, ToolSchema
from agentloop_providers._sse import SSEDecoder
from agentloop_providers.openai_responses import (
    OpenAIResponsesParser,
    OpenAIResponsesProvider,
    responses_payload,
)

from ._fixtures import Case, check, wrap_chunks
from ._loopback_ii import FIXTURES, Reply, agent_run, replay_via, split_responses

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="openai", model_id="gpt-5")
TRANSPORTS = ["mock", "loopback"]


def make(**kwargs: Any) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(api_key="sk-test", **kwargs)


def _read(name: str) -> bytes:
    return (FIXTURES / "openai_responses" / name).read_bytes()


TURNS = split_responses(_read("reasoning_summary_three_function_calls.chunks.jsonl"))
P = OpenAIResponsesProvider

CASES = [
    Case(
        "function_call_stream",
        P,
        _read("function_call_stream.sse"),
        StopReason.TOOL_USE,
        ["call"],
        model_id="gpt-4o-2024-08-06",
        calls=[("get_capital", "call_kL0PCQV7M2WMoVX8V8OtYSAL", {"country": "France"})],
        usage=(255, 16, 0, 0),
    ),
    Case(
        "text_after_tool_result",
        P,
        _read("text_after_tool_result.sse"),
        StopReason.STOP,
        ["text"],
        model_id="gpt-4o-2024-08-06",
        text_start="The capital of France is Paris.",
        text_len=31,
        usage=(278, 9, 0, 0),
    ),
    Case(
        "reasoning#1",
        P,
        TURNS[0],
        StopReason.TOOL_USE,
        ["thinking", "call"],
        model_id="gpt-5.1-codex-max",
        thinking_start="**Calculating step-by-step using calculator**",
        calls=[("calculator", "call_AB6AaRZ1FYZB2RwS6A5vbdqn", {"a": 12, "b": 7, "op": "add"})],
        usage=(134, 28, 0, 0),
    ),
    Case(
        "reasoning#2",
        P,
        TURNS[1],
        StopReason.TOOL_USE,
        ["call"],
        calls=[
            ("calculator", "call_Q6pW65MUgW9vF59BmItYGos3", {"a": 19, "b": 3, "op": "multiply"})
        ],
        usage=(221, 26, 0, 0),
    ),
    Case(
        "reasoning#3",
        P,
        TURNS[2],
        StopReason.TOOL_USE,
        ["call"],
        calls=[
            ("calculator", "call_Zl5vIMnD7dVAjgU6FkhmiCZh", {"a": 57, "b": 10, "op": "multiply"})
        ],
        usage=(260, 26, 0, 0),
    ),
    Case(
        "reasoning#4",
        P,
        TURNS[3],
        StopReason.STOP,
        ["text"],
        text_start="The final result is **570**.",
        text_len=28,
        usage=(299, 12, 0, 0),
    ),
    Case(
        "error_insufficient_quota",
        P,
        wrap_chunks(_read("error_insufficient_quota.chunks.jsonl"), event_names=True),
        StopReason.ERROR,
        [],
        error_kind=ErrorKind.OTHER,
        error_has="You exceeded your current quota",
    ),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("case", CASES, ids=str)
async def test_fixture(case: Case, transport: str) -> None:
    message, _, requests = await replay_via(
        transport, make, MODEL, Reply(case.body, chunk_size=256)
    )
    check(case, message)
    assert requests[0].path == "/responses" or requests[0].path.endswith("/v1/responses")
    assert requests[0].headers["authorization"] == "Bearer test-key"  # options win


async def test_reasoning_is_kept_for_replay() -> None:
    message, _, _ = await replay_via("mock", make, MODEL, Reply(TURNS[0]))
    thinking = message.content[0]
    assert isinstance(thinking, Thinking)
    # The encrypted content is the final one (from output_item.done), with the item id.
    assert thinking.data is not None
    assert thinking.data.startswith("gAAAAABpPDIVOKrsHNZ0GwsoEKA_")
    assert thinking.meta == {"id": "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9"}
    call = message.tool_calls[0]
    history = LlmContext(
        messages=[
            UserMessage.from_text("compute"),
            message,
            ToolResultMessage(
                tool_call_id=call.id, tool_name="calculator", content=[Text(text="19")]
            ),
        ]
    )
    body = responses_payload(MODEL, history, StreamOptions())
    _, reasoning, function_call, output = body["input"]
    assert reasoning == {
        "type": "reasoning",
        "id": "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9",
        "summary": [{"type": "summary_text", "text": thinking.thinking}],
        "encrypted_content": thinking.data,
    }
    assert function_call == {
        "type": "function_call",
        "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
        "name": "calculator",
        "arguments": '{"a":12,"b":7,"op":"add"}',
        "id": "fc_01830d662ab3856501693c32151234819091cfca267e98cc5f",
    }
    assert output == {
        "type": "function_call_output",
        "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
        "output": "19",
    }


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


CREATED = {"type": "response.created", "response": {"model": "gpt-5", "status": "in_progress"}}


def _completed(usage: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    response = {"status": "completed", "usage": usage, **extra}
    return {"type": "response.completed", "response": response}


def _call(out: int, call_id: str, name: str) -> dict[str, Any]:
    item = {"type": "function_call", "id": f"fc_{out}", "call_id": call_id, "name": name}
    return {
        "type": "response.output_item.added",
        "output_index": out,
        "item": {**item, "arguments": ""},
    }


def _args(out: int, delta: str) -> dict[str, Any]:
    return {"type": "response.function_call_arguments.delta", "output_index": out, "delta": delta}


def _call_done(out: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    item = {"type": "function_call", "id": f"fc_{out}", "call_id": call_id, "name": name}
    return {
        "type": "response.output_item.done",
        "output_index": out,
        "item": {**item, "arguments": arguments},
    }


async def test_parallel_calls_with_interleaved_argument_deltas() -> None:
    body = _sse(
        CREATED,
        _call(0, "call_a", "weather"),
        _call(1, "call_b", "time"),
        _args(0, '{"city":'),
        _args(1, '{"tz":"Europe/'),
        _args(0, '"Oslo"}'),
        _args(1, 'Paris"}'),
        _call_done(1, "call_b", "time", '{"tz":"Europe/Paris"}'),
        _call_done(0, "call_a", "weather", '{"city":"Oslo"}'),
        _completed({"input_tokens": 10, "output_tokens": 5}),
    )
    message, _, _ = await replay_via("loopback", make, MODEL, Reply(body, chunk_size=7))
    assert message.stop_reason is StopReason.TOOL_USE
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call_a", "weather", {"city": "Oslo"}),
        ("call_b", "time", {"tz": "Europe/Paris"}),
    ]


async def test_arguments_sent_only_in_the_done_item() -> None:
    body = _sse(
        CREATED,
        _call(0, "call_a", "weather"),
        _call_done(0, "call_a", "weather", '{"city":"Oslo"}'),
        _completed(),
    )
    message, _, _ = await replay_via("mock", make, MODEL, Reply(body))
    assert message.tool_calls[0].arguments == {"city": "Oslo"}


async def test_usage_details_cached_and_reasoning() -> None:
    usage = {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 800},
        "output_tokens": 300,
        "output_tokens_details": {"reasoning_tokens": 200},
        "total_tokens": 1300,
    }
    message, _, _ = await replay_via("mock", make, MODEL, Reply(_sse(CREATED, _completed(usage))))
    assert message.usage == Usage(
        input=200, output=300, cache_read=800, total=1300, extra={"reasoning_tokens": 200}
    )


TEXT = [
    {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message"}},
    {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hal"},
]


@pytest.mark.parametrize(
    ("reason", "stop", "kind"),
    [
        ("max_output_tokens", StopReason.LENGTH, None),
        ("content_filter", StopReason.ERROR, ErrorKind.CONTENT_FILTERED),
    ],
)
async def test_incomplete_response(reason: str, stop: StopReason, kind: ErrorKind | None) -> None:
    incomplete = {
        "type": "response.incomplete",
        "response": {"status": "incomplete", "incomplete_details": {"reason": reason}},
    }
    message, _, _ = await replay_via("mock", make, MODEL, Reply(_sse(CREATED, *TEXT, incomplete)))
    assert message.stop_reason is stop
    assert message.error_kind is kind
    assert message.text == "Hal"


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("server_error", ErrorKind.NETWORK),
        ("rate_limit_exceeded", ErrorKind.THROTTLED),
        ("context_length_exceeded", ErrorKind.CONTEXT_OVERFLOW),
    ],
)
async def test_response_failed(code: str, kind: ErrorKind) -> None:
    failed = {
        "type": "response.failed",
        "response": {"status": "failed", "error": {"code": code, "message": "it failed"}},
    }
    message, _, _ = await replay_via("mock", make, MODEL, Reply(_sse(CREATED, *TEXT, failed)))
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is kind
    assert message.error_message is not None
    assert "it failed" in message.error_message
    assert message.text == "Hal"


async def test_server_tool_items_are_kept_as_extensions() -> None:
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    body = _sse(
        CREATED,
        {"type": "response.output_item.added", "output_index": 0, "item": search},
        {"type": "response.output_item.done", "output_index": 0, "item": search},
        *[{**e, "output_index": 1} for e in TEXT],
        _completed(),
    )
    message, _, _ = await replay_via("mock", make, MODEL, Reply(body))
    assert message.content == [
        Extension(type_name="openai.web_search_call", data=search),
        Text(text="Hal"),
    ]


async def test_stream_cut_before_completion_is_a_network_error() -> None:
    message, _, _ = await replay_via("loopback", make, MODEL, Reply(_sse(CREATED, *TEXT)))
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.NETWORK
    assert message.text == "Hal"


async def test_http_error_status() -> None:
    body = b'{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}'
    reply = Reply(body, status=401, content_type="application/json")
    message, _, _ = await replay_via("loopback", make, MODEL, reply)
    assert message.error_kind is ErrorKind.AUTH


def test_request_payload_for_every_block_type() -> None:
    model = ModelSpec(
        provider="openai",
        model_id="gpt-5",
        thinking_level=ThinkingLevel.HIGH,
        max_output_tokens=4000,
    )
    history = LlmContext(
        system_prompt="Be brief.",
        messages=[
            UserMessage(
                content=[Text(text="look"), Image(media_type="image/png", data="iVBORw0KGgo=")]
            ),
            AssistantMessage(
                provider="anthropic",
                content=[
                    Thinking(thinking="foreign thoughts", signature="sig-anthropic"),
                    Text(text="Looking."),
                    ToolCall(id="toolu_1", name="zoom", arguments={"x": 1}),
                ],
            ),
            ToolResultMessage(
                tool_call_id="toolu_1",
                tool_name="zoom",
                content=[Text(text="bad"), Image(url="https://example.com/z.png")],
                is_error=True,
            ),
            AssistantMessage(
                provider="openai",
                content=[
                    Thinking(thinking="", data="enc-1", meta={"id": "rs_1"}),
                    Thinking(thinking="no data, cannot be replayed"),
                    Text(text="Done."),
                ],
            ),
            UserMessage.from_text("thanks"),
        ],
        tools=[ToolSchema(name="zoom", description="Zoom in.", parameters={"type": "object"})],
    )
    body = responses_payload(model, history, StreamOptions(temperature=0.2, session_id="s-1"))
    assert body == {
        "model": "gpt-5",
        "stream": True,
        "store": False,
        "instructions": "Be brief.",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "look"},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                ],
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [
                    {
                        "type": "output_text",
                        "text": "foreign thoughtsLooking.",
                        "annotations": [],
                    }
                ],
            },
            {"type": "function_call", "call_id": "toolu_1", "name": "zoom", "arguments": '{"x":1}'},
            {
                "type": "function_call_output",
                "call_id": "toolu_1",
                "output": [
                    {"type": "input_text", "text": "Error: bad"},
                    {"type": "input_image", "image_url": "https://example.com/z.png"},
                ],
            },
            {"type": "reasoning", "summary": [], "id": "rs_1", "encrypted_content": "enc-1"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
            },
            {"role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
        ],
        "tools": [
            {
                "type": "function",
                "name": "zoom",
                "description": "Zoom in.",
                "parameters": {"type": "object"},
                "strict": False,
            }
        ],
        "temperature": 0.2,
        "max_output_tokens": 4000,
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "s-1",
    }


async def test_request_goes_out_as_json_with_the_key() -> None:
    ctx = LlmContext(messages=[UserMessage.from_text("hi")])
    _, _, requests = await replay_via("loopback", make, MODEL, Reply(TURNS[3]), ctx=ctx)
    (request,) = requests
    assert request.method == "POST"
    assert request.path == "/responses"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.body)["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ]


@tool
async def calculator(a: int, b: int, op: str) -> str:
    """Apply ``op`` (add or multiply) to two integers.

    Args:
        a: the first operand.
        b: the second operand.
        op: "add" or "multiply".
    """
    return str(a + b if op == "add" else a * b)


async def test_agent_run_over_loopback() -> None:
    replies = [Reply(body, chunk_size=211) for body in TURNS]
    result, requests = await agent_run(make, MODEL, replies, [calculator], "(12 + 7) * 3 * 10?")
    assert result.stop_reason is StopReason.STOP
    assert result.text == "The final result is **570**."
    assert len(requests) == 4
    outputs = [
        [
            i["output"]
            for i in json.loads(r.body)["input"]
            if i.get("type") == "function_call_output"
        ]
        for r in requests
    ]
    assert outputs == [[], ["19"], ["19", "57"], ["19", "57", "570"]]
    second = json.loads(requests[1].body)
    assert second["instructions"] == "Be brief."
    assert second["tools"][0]["name"] == "calculator"
    # The reasoning item of turn one went back with its encrypted content.
    reasoning = [i for i in second["input"] if i.get("type") == "reasoning"]
    assert len(reasoning) == 1
    assert reasoning[0]["encrypted_content"].startswith("gAAAAABpPDIVOKrs")
    assert result.usage.input == 134 + 221 + 260 + 299


async def test_http_context_overflow() -> None:
    body = json.dumps(
        {
            "error": {
                "message": "Your input exceeds the context window of this model. Please adjust "
                "your input and try again.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        }
    ).encode()
    reply = Reply(body, status=400, content_type="application/json")
    message, _, _ = await replay_via("loopback", make, MODEL, reply)
    assert message.error_kind is ErrorKind.CONTEXT_OVERFLOW


def test_every_fixture_has_a_case() -> None:
    files = {p.name.split(".")[0] for p in (FIXTURES / "openai_responses").iterdir()}
    covered = {case.name for case in CASES if "#" not in case.name}
    assert files == covered | {"reasoning_summary_three_function_calls"}  # the "reasoning#n"
    assert len(TURNS) == 4


def _parse(body: bytes, cuts: list[int]) -> list[Any]:
    decoder, parser = SSEDecoder(), OpenAIResponsesParser()
    events: list[Any] = []
    start = 0
    for cut in [*sorted(cuts), len(body)]:
        for frame in decoder.feed(body[start:cut]):
            events.extend(parser.feed(frame))
        start = cut
    return events


@settings(max_examples=60, deadline=None)
@given(
    turn=st.integers(min_value=0, max_value=3),
    cuts=st.lists(st.integers(min_value=0, max_value=40000), max_size=60),
)
def test_events_do_not_depend_on_how_the_body_is_split(turn: int, cuts: list[int]) -> None:
    body = TURNS[turn]
    cuts = [c for c in cuts if c <= len(body)]
    assert _parse(body, cuts) == _parse(body, [])
