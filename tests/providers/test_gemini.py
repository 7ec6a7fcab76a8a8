"""Gemini streamGenerateContent (alt=sse): recorded streams, edge cases, the request body."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from agentloop import (
    AssistantMessage,
    ErrorKind,
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
from agentloop.stream import ErrorEvent, LlmContext, ToolSchema
from agentloop_providers.gemini import SKIP_SIGNATURE, GeminiProvider, _set_path, gemini_payload

from ._fixtures import Case, check, wrap_chunks
from ._loopback_ii import FIXTURES, Reply, agent_run, replay_via, serve
from ._util import opened

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="gemini", model_id="gemini-2.5-pro")
TRANSPORTS = ["mock", "loopback"]
G = GeminiProvider


def make(**kwargs: Any) -> GeminiProvider:
    return GeminiProvider(api_key="g-test", **kwargs)


def _read(name: str) -> bytes:
    return (FIXTURES / "gemini" / name).read_bytes()


CASES = [
    Case(
        "thinking_thought_parts",
        G,
        _read("thinking_thought_parts.sse"),
        StopReason.STOP,
        ["thinking", "text"],
        model_id="gemini-2.5-pro",
        thinking_start="**Clarifying User Goals**\n\nI'm currently focused on defining",
        text_start="This is a great question! Safely crossing the street is all about",
        text_end="Always assume a driver might not see you.",
        text_len=1938,
        usage=(34, 1256, 0, 0),
        usage_extra={"reasoning_tokens": 787},
    ),
    Case(
        "function_call_thought_signature",
        G,
        _read("function_call_thought_signature.sse"),
        StopReason.TOOL_USE,
        ["call"],
        model_id="gemini-3-pro-preview",
        calls=[("get_country", None, {})],
        usage=(29, 212, 0, 0),
        usage_extra={"reasoning_tokens": 202},
    ),
    Case(
        "function_call_gemini2",
        G,
        _read("function_call_gemini2.sse"),
        StopReason.TOOL_USE,
        ["call"],
        model_id="gemini-2.0-flash",
        calls=[("get_capital", None, {"country": "France"})],
        usage=(52, 5, 0, 0),
    ),
    Case(
        "streaming_function_call_partial_args",
        G,
        wrap_chunks(_read("streaming_function_call_partial_args.chunks.jsonl"), event_names=False),
        StopReason.TOOL_USE,
        ["call", "call"],
        model_id="gemini-3.1-pro-preview",
        calls=[
            ("getWeather", None, {"location": "Boston"}),
            ("getWeather", None, {"location": "San Francisco"}),
        ],
        usage=(26, 155, 0, 0),
        usage_extra={"reasoning_tokens": 132},
    ),
    Case(
        "error_429_retry_info",
        G,
        _read("error_429_retry_info.json"),
        StopReason.ERROR,
        [],
        status=429,
        content_type="application/json",
        error_kind=ErrorKind.THROTTLED,
        error_has="You exceeded your current quota",
    ),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("case", CASES, ids=str)
async def test_fixture(case: Case, transport: str) -> None:
    reply = Reply(case.body, status=case.status, content_type=case.content_type, chunk_size=61)
    message, events, requests = await replay_via(transport, make, MODEL, reply)
    check(case, message)
    (request,) = requests
    assert request.path.endswith("/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
    assert request.headers["x-goog-api-key"] == "test-key"
    if case.status == 429:
        last = events[-1]
        assert isinstance(last, ErrorEvent)
        assert last.retry_after == pytest.approx(34.4)


async def test_thought_signature_is_kept_and_replayed() -> None:
    reply = Reply(_read("function_call_thought_signature.sse"))
    model = ModelSpec(provider="gemini", model_id="gemini-3-pro-preview")
    message, _, _ = await replay_via("mock", make, model, reply)
    (call,) = message.tool_calls
    assert call.signature is not None
    assert call.signature.startswith("EpwICpkIAXLI2nxlU6gsWZaZHRYkX1orzuM8vSUF")
    assert call.id.startswith("call_")
    history = LlmContext(
        messages=[
            UserMessage.from_text("where am I?"),
            message,
            ToolResultMessage(tool_call_id=call.id, content=[Text(text="France")]),
        ]
    )
    body = gemini_payload(model, history, StreamOptions())
    assert body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "get_country", "args": {}},
                    "thoughtSignature": call.signature,
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_country", "response": {"output": "France"}}}
            ],
        },
    ]


async def test_partial_arguments_end_when_a_new_call_begins() -> None:
    # The first call of the fixture ends with an empty functionCall; here we check that the
    # assembled value came from two string pieces and that the signature stayed with call 1.
    body = wrap_chunks(
        _read("streaming_function_call_partial_args.chunks.jsonl"), event_names=False
    )
    message, _, _ = await replay_via("loopback", make, MODEL, Reply(body, chunk_size=13))
    first, second = message.tool_calls
    assert first.signature is not None
    assert first.signature.startswith("CiMBjz1rX25Kie")
    assert second.signature is None
    assert first.id != second.id


def test_json_path_assembly() -> None:
    target: dict[str, Any] = {}
    _set_path(target, "$.location", "San ", append=False)
    _set_path(target, "$.location", "Francisco", append=True)
    _set_path(target, "$.units.scale", "C", append=False)
    _set_path(target, "$.days[1]", 3, append=False)
    _set_path(target, "$.days[0]", 2, append=False)
    _set_path(target, "$.stops[0].name", "a", append=False)
    assert target == {
        "location": "San Francisco",
        "units": {"scale": "C"},
        "days": [2, 3],
        "stops": [{"name": "a"}],
    }


def _sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)


def _chunk(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if finish:
        candidate["finishReason"] = finish
    usage = {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}
    return {"candidates": [candidate], "usageMetadata": usage}


@pytest.mark.parametrize(
    ("finish", "stop", "kind"),
    [
        ("MAX_TOKENS", StopReason.LENGTH, None),
        ("SAFETY", StopReason.ERROR, ErrorKind.CONTENT_FILTERED),
        ("RECITATION", StopReason.ERROR, ErrorKind.CONTENT_FILTERED),
        ("MALFORMED_FUNCTION_CALL", StopReason.ERROR, ErrorKind.OTHER),
    ],
)
async def test_finish_reasons(finish: str, stop: StopReason, kind: ErrorKind | None) -> None:
    body = _sse(_chunk([{"text": "Hel"}]), _chunk([{"text": "lo"}], finish))
    message, _, _ = await replay_via("mock", make, MODEL, Reply(body))
    assert message.stop_reason is stop
    assert message.error_kind is kind
    assert message.text == "Hello"


async def test_blocked_prompt() -> None:
    body = _sse({"promptFeedback": {"blockReason": "SAFETY"}})
    message, _, _ = await replay_via("mock", make, MODEL, Reply(body))
    assert message.error_kind is ErrorKind.CONTENT_FILTERED


async def test_error_inside_the_stream() -> None:
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    body = _sse(_chunk([{"text": "Hel"}]), error)
    message, _, _ = await replay_via("loopback", make, MODEL, Reply(body))
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.THROTTLED
    assert message.text == "Hel"


async def test_stream_cut_before_finish_is_a_network_error() -> None:
    body = _sse(_chunk([{"text": "Hel"}]))
    message, _, _ = await replay_via("loopback", make, MODEL, Reply(body))
    assert message.error_kind is ErrorKind.NETWORK
    assert message.text == "Hel"


async def test_thinking_signature_on_a_thought_part() -> None:
    body = _sse(
        _chunk([{"text": "hmm", "thought": True}]),
        _chunk(
            [{"text": "", "thought": True, "thoughtSignature": "sig-1"}, {"text": "Hi"}], "STOP"
        ),
    )
    message, _, _ = await replay_via("mock", make, MODEL, Reply(body))
    assert message.content == [Thinking(thinking="hmm", signature="sig-1"), Text(text="Hi")]


def test_request_payload_for_every_block_type() -> None:
    model = ModelSpec(
        provider="gemini",
        model_id="gemini-3-pro-preview",
        thinking_level=ThinkingLevel.LOW,
        max_output_tokens=2048,
    )
    history = LlmContext(
        system_prompt="Be brief.",
        messages=[
            UserMessage(content=[Text(text="look"), Image(media_type="image/png", data="AAAA")]),
            AssistantMessage(
                provider="anthropic",
                content=[
                    Thinking(thinking="foreign", signature="sig-a"),
                    ToolCall(id="toolu_1", name="zoom", arguments={"x": 1}),
                    ToolCall(id="toolu_2", name="pan", arguments={}),
                ],
            ),
            ToolResultMessage(
                tool_call_id="toolu_1",
                content=[Text(text="zoomed"), Image(media_type="image/jpeg", data="BBBB")],
            ),
            ToolResultMessage(
                tool_call_id="toolu_2", tool_name="pan", content=[Text(text="no")], is_error=True
            ),
            AssistantMessage(
                provider="gemini",
                content=[
                    Thinking(thinking="mine", signature="sig-g"),
                    Text(text="Done."),
                    ToolCall(id="call_x", name="zoom", arguments={"x": 2}, signature="sig-c"),
                ],
            ),
        ],
        tools=[ToolSchema(name="zoom", description="Zoom in.", parameters={"type": "object"})],
    )
    body = gemini_payload(model, history, StreamOptions(temperature=0.5))
    assert body == {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "look"},
                    {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"text": "foreign"},
                    {
                        "functionCall": {"name": "zoom", "args": {"x": 1}},
                        "thoughtSignature": SKIP_SIGNATURE,
                    },
                    {
                        "functionCall": {"name": "pan", "args": {}},
                        "thoughtSignature": SKIP_SIGNATURE,
                    },
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "zoom", "response": {"output": "zoomed"}}},
                    {"inlineData": {"mimeType": "image/jpeg", "data": "BBBB"}},
                    {"functionResponse": {"name": "pan", "response": {"error": "no"}}},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"text": "mine", "thought": True, "thoughtSignature": "sig-g"},
                    {"text": "Done."},
                    {
                        "functionCall": {"name": "zoom", "args": {"x": 2}},
                        "thoughtSignature": "sig-c",
                    },
                ],
            },
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "zoom",
                        "description": "Zoom in.",
                        "parametersJsonSchema": {"type": "object"},
                    }
                ]
            }
        ],
        "generationConfig": {
            "temperature": 0.5,
            "maxOutputTokens": 2048,
            "thinkingConfig": {"includeThoughts": True, "thinkingLevel": "low"},
        },
    }


def test_thinking_budget_for_gemini_2_5() -> None:
    model = ModelSpec(
        provider="gemini", model_id="gemini-2.5-flash", thinking_level=ThinkingLevel.MEDIUM
    )
    body = gemini_payload(
        model, LlmContext(messages=[UserMessage.from_text("hi")]), StreamOptions()
    )
    assert body["generationConfig"] == {
        "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 8192}
    }


@tool
async def get_capital(country: str) -> str:
    """The capital city of a country.

    Args:
        country: the country's name.
    """
    return {"France": "Paris"}.get(country, "unknown")


async def test_agent_run_over_loopback() -> None:
    replies = [
        Reply(_read("function_call_gemini2.sse"), chunk_size=40),
        Reply(_read("thinking_thought_parts.sse"), chunk_size=500),
    ]
    result, requests = await agent_run(make, MODEL, replies, [get_capital], "Capital of France?")
    assert result.stop_reason is StopReason.STOP
    assert result.text.startswith("This is a great question!")
    first, second = (json.loads(r.body) for r in requests)
    assert first["tools"][0]["functionDeclarations"][0]["name"] == "get_capital"
    assert first["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert second["contents"][1:] == [
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "get_capital", "args": {"country": "France"}}}],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_capital", "response": {"output": "Paris"}}}
            ],
        },
    ]


async def test_cancelling_mid_stream_closes_the_connection() -> None:
    body = _read("thinking_thought_parts.sse")
    async with serve([Reply(body, gate_at=len(body) // 2)]) as server:
        async with make(base_url=server.base_url) as provider:
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:

                    async def consume() -> None:
                        async with opened(provider, MODEL, LlmContext(), StreamOptions()) as stream:
                            async for _ in stream:
                                tg.cancel_scope.cancel()  # cancel the turn at its first event

                    tg.start_soon(consume)
                await server.disconnected.wait()
    assert server.completed == 0


async def test_context_overflow_is_classified() -> None:
    body = json.dumps(
        {
            "error": {
                "code": 400,
                "message": "The input token count (1196265) exceeds the maximum number of tokens "
                "allowed (1048575).",
                "status": "INVALID_ARGUMENT",
            }
        }
    ).encode()
    reply = Reply(body, status=400, content_type="application/json")
    message, _, _ = await replay_via("loopback", make, MODEL, reply)
    assert message.error_kind is ErrorKind.CONTEXT_OVERFLOW


def test_gemini_call_ids_go_back_on_call_and_response() -> None:
    call = ToolCall(id="fc-9", name="zoom", arguments={}, meta={"gemini_id": "fc-9"})
    history = LlmContext(
        messages=[
            UserMessage.from_text("zoom"),
            AssistantMessage(provider="gemini", content=[call]),
            ToolResultMessage(tool_call_id="fc-9", content=[Text(text="ok")]),
        ]
    )
    body = gemini_payload(MODEL, history, StreamOptions())
    assert body["contents"][1]["parts"] == [
        {"functionCall": {"name": "zoom", "args": {}, "id": "fc-9"}}
    ]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "zoom", "response": {"output": "ok"}, "id": "fc-9"}}
    ]


async def test_call_id_given_by_the_server_is_used() -> None:
    body = _sse(
        _chunk([{"functionCall": {"id": "fc-9", "name": "zoom", "args": {"x": 1}}}], "STOP")
    )
    message, _, _ = await replay_via("mock", make, MODEL, Reply(body))
    (call,) = message.tool_calls
    assert (call.id, call.meta) == ("fc-9", {"gemini_id": "fc-9"})


def test_every_fixture_has_a_case() -> None:
    files = {p.name.split(".")[0] for p in (FIXTURES / "gemini").iterdir()}
    assert files == {case.name for case in CASES}
