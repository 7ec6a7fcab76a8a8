"""The recorded provider responses in tests/fixtures and what each must turn into.

Every expectation below was read off the fixture itself (see tests/fixtures/SOURCES.md for
where each recording comes from).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import (
    AssistantMessage,
    ErrorKind,
    Extension,
    StopReason,
    Text,
    Thinking,
    ToolCall,
)
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.ollama import OllamaProvider
from agentloop_providers.openai_chat import OpenAIChatProvider

if TYPE_CHECKING:
    from agentloop_providers._http import HttpProvider

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def wrap_chunks(raw: bytes, *, event_names: bool) -> bytes:
    """A vercel ``.chunks.jsonl`` file (one decoded ``data:`` payload a line) as an SSE body."""
    out: list[bytes] = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        if event_names:
            name = msgspec.json.decode(line)["type"].encode()
            out.append(b"event: " + name + b"\n")
        out.append(b"data: " + line + b"\n\n")
    return b"".join(out)


def anthropic_messages(raw: bytes) -> list[bytes]:
    """Split a chunks file holding several Anthropic message streams into one body each."""
    bodies: list[list[bytes]] = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        if msgspec.json.decode(line)["type"] == "message_start":
            bodies.append([])
        bodies[-1].append(line)
    return [wrap_chunks(b"\n".join(lines), event_names=True) for lines in bodies]


@dataclass(frozen=True)
class Case:
    """One fixture replay and the message it must give."""

    name: str
    provider: type[HttpProvider]
    body: bytes
    stop: StopReason
    kinds: list[str]  # block kinds in order: text, thinking, redacted, call, ext:<type>
    status: int = 200
    content_type: str = "text/event-stream"
    model_id: str | None = None
    text_start: str = ""
    text_end: str = ""
    text_len: int | None = None
    thinking_start: str = ""
    signatures: list[str] = field(default_factory=list)  # prefixes, one per signed block
    calls: list[tuple[str, str | None, Any]] = field(default_factory=list)  # name, id, args
    partial_json_end: str | None = None
    usage: tuple[int, int, int, int] | None = None  # input, output, cache_read, cache_write
    usage_extra: dict[str, int] = field(default_factory=dict)
    error_kind: ErrorKind | None = None
    error_has: str = ""

    def __str__(self) -> str:
        return self.name


def _kind(block: Any) -> str:
    if type(block) is Text:
        return "text"
    if type(block) is Thinking:
        return "redacted" if block.redacted else "thinking"
    if type(block) is ToolCall:
        return "call"
    assert type(block) is Extension
    return f"ext:{block.type_name}"


def check(case: Case, message: AssistantMessage) -> None:
    """Assert that ``message`` is what ``case`` must give."""
    assert message.stop_reason is case.stop, (message.stop_reason, message.error_message)
    assert [_kind(b) for b in message.content] == case.kinds
    if case.model_id is not None:
        assert message.model_id == case.model_id
    text = message.text
    assert text.startswith(case.text_start)
    assert text.endswith(case.text_end)
    if case.text_len is not None:
        assert len(text) == case.text_len
    thinking = [b for b in message.content if type(b) is Thinking]
    if case.thinking_start:
        assert thinking[0].thinking.startswith(case.thinking_start)
    signed = [b.signature for b in thinking if b.signature]
    assert len(signed) == len(case.signatures)
    for signature, prefix in zip(signed, case.signatures, strict=True):
        assert signature.startswith(prefix)
    for block in thinking:
        if block.redacted:
            assert block.data
            assert not block.thinking
    calls = message.tool_calls
    assert [c.name for c in calls] == [c[0] for c in case.calls]
    for call, (_, call_id, args) in zip(calls, case.calls, strict=True):
        if call_id is not None:
            assert call.id == call_id
        else:
            assert call.id  # generated, but present
        assert call.arguments == args
    if case.partial_json_end is not None:
        assert calls[-1].partial_json is not None
        assert calls[-1].partial_json.endswith(case.partial_json_end)
    if case.usage is not None:
        u = message.usage
        assert (u.input, u.output, u.cache_read, u.cache_write) == case.usage
        assert u.total == sum(case.usage)
        assert u.extra == case.usage_extra
    assert message.error_kind is case.error_kind
    if case.error_kind is None:
        assert message.error_message is None
    else:
        assert message.error_message is not None
        assert case.error_has in message.error_message


def _read(rel: str) -> bytes:
    return (FIXTURES / rel).read_bytes()


def _anthropic_cases() -> list[Case]:
    multi = anthropic_messages(_read("anthropic/multi_turn_client_and_server_tool.chunks.jsonl"))
    return [
        Case(
            "anthropic/thinking_signature_text",
            AnthropicProvider,
            _read("anthropic/thinking_signature_text.sse"),
            StopReason.STOP,
            ["thinking", "text"],
            model_id="claude-sonnet-4-20250514",
            text_start="Here are the basic steps for safely crossing the street:",
            text_end="safety over speed when crossing streets.",
            text_len=1021,
            thinking_start="This is a straightforward question about pedestrian safety.",
            signatures=["EvMCCkYICxgCKkCHP2cS"],
            usage=(43, 282, 0, 0),
        ),
        Case(
            "anthropic/redacted_thinking",
            AnthropicProvider,
            _read("anthropic/redacted_thinking.sse"),
            StopReason.STOP,
            ["redacted", "redacted", "text"],
            text_start="I notice that you've sent what appears to be",
            text_len=359,
            usage=(92, 189, 0, 0),
        ),
        Case(
            "anthropic/tool_use_text_then_tool",
            AnthropicProvider,
            _read("anthropic/tool_use_text_then_tool.sse"),
            StopReason.TOOL_USE,
            ["text", "call"],
            text_start="I'll check the current weather in Paris for you.",
            text_len=48,
            calls=[("get_weather", "toolu_01NRLabsLyVHZPKxbKvkfSMn", {"location": "Paris"})],
            usage=(377, 65, 0, 0),
        ),
        Case(
            "anthropic/tool_use_truncated_max_tokens",
            AnthropicProvider,
            _read("anthropic/tool_use_truncated_max_tokens.sse"),
            StopReason.LENGTH,
            ["text", "call"],
            text_end="Let me do that for you now.",
            calls=[("make_file", "toolu_01EKqbqmZrGRXy18eN7m9kvY", {})],
            partial_json_end='\n"Filing taxes',
            usage=(450, 124, 0, 0),
        ),
        Case(
            "anthropic/thinking_then_tool_use",
            AnthropicProvider,
            _read("anthropic/thinking_then_tool_use.sse"),
            StopReason.TOOL_USE,
            ["thinking", "call"],
            model_id="claude-haiku-4-5-20251001",
            thinking_start="The user wants me to:\n1. Use the fixed_version tool",
            signatures=["EoQDCm0IDhgCKkCDzGs2"],
            calls=[("fixed_version", "toolu_01825dXWLSoJwCst1qTsiWdb", {})],
            usage=(598, 92, 0, 0),
            usage_extra={"thinking_tokens": 53},
        ),
        Case(
            "anthropic/web_search_server_tool",
            AnthropicProvider,
            _read("anthropic/web_search_server_tool.sse"),
            StopReason.STOP,
            ["ext:server_tool_use", "ext:web_search_tool_result"] + ["text"] * 10,
            text_start="Based on the search results, here's the current weather in San Francisco:",
            text_end="a Level 1 storm system bringing periods of rain this weekend.",
            usage=(10423, 341, 0, 0),
            usage_extra={"web_search_requests": 1},
        ),
        Case(
            "anthropic/multi_turn#1",
            AnthropicProvider,
            multi[0],
            StopReason.TOOL_USE,
            ["text", "call", "ext:server_tool_use"],
            text_start="I'll help you with this task.",
            calls=[
                (
                    "readNoteTree",
                    "toolu_01U8pzAHj2vNdPCA2Kf8JjeN",
                    {"noteId": "d10aa585-982b-4bd9-984e-420f9b3717f7"},
                )
            ],
            usage=(879, 177, 0, 0),
        ),
        Case(
            "anthropic/multi_turn#2",
            AnthropicProvider,
            multi[1],
            StopReason.TOOL_USE,
            ["ext:tool_search_tool_result", "text", "call"],
            calls=[("executeEditorOperation", "toolu_01QoRrvXNv6w4vZSyo9cnxP2", _ANY)],
            usage=(1398, 213, 0, 0),
        ),
        Case(
            "anthropic/multi_turn#3",
            AnthropicProvider,
            multi[2],
            StopReason.STOP,
            ["text"],
            usage=(1639, 95, 0, 0),
        ),
    ]


class _Anything:
    """Matches any value (arguments whose exact shape is not the point of a case)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict) and bool(other)

    def __repr__(self) -> str:
        return "<any non-empty object>"


_ANY: Any = _Anything()


def _openai_cases() -> list[Case]:
    return [
        Case(
            "openai_chat/parallel_tool_calls_usage",
            OpenAIChatProvider,
            _read("openai_chat/parallel_tool_calls_usage.sse"),
            StopReason.TOOL_USE,
            ["call", "call"],
            model_id="gpt-4o-2024-08-06",
            calls=[
                (
                    "GetWeatherArgs",
                    "call_JMW1whyEaYG438VE1OIflxA2",
                    {"city": "Edinburgh", "country": "GB", "units": "c"},
                ),
                (
                    "get_stock_price",
                    "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                    {"ticker": "AAPL", "exchange": "NASDAQ"},
                ),
            ],
            usage=(149, 60, 0, 0),
        ),
        Case(
            "openai_chat/finish_reason_length",
            OpenAIChatProvider,
            _read("openai_chat/finish_reason_length.sse"),
            StopReason.LENGTH,
            ["text"],
            text_start='{"',
            text_len=2,
            usage=(79, 1, 0, 0),
        ),
        Case(
            "openai_chat/refusal_deltas",
            OpenAIChatProvider,
            _read("openai_chat/refusal_deltas.sse"),
            StopReason.STOP,
            ["text"],
            text_start="I'm sorry, I can't assist with that request.",
            text_len=44,
            usage=(79, 11, 0, 0),
        ),
        Case(
            "openai_chat/n3_multiple_choices",
            OpenAIChatProvider,
            _read("openai_chat/n3_multiple_choices.sse"),
            StopReason.STOP,
            ["text"],
            text_start='{"city":"San Francisco","temperature":65,"units":"f"}',
            text_len=53,
            usage=(79, 42, 0, 0),
        ),
        Case(
            "openai_chat/single_tool_call",
            OpenAIChatProvider,
            _read("openai_chat/single_tool_call.sse"),
            StopReason.TOOL_USE,
            ["call"],
            calls=[
                (
                    "GetWeatherArgs",
                    "call_c91SqDXlYFuETYv8mUHzz6pp",
                    {"city": "Edinburgh", "country": "UK", "units": "c"},
                )
            ],
            usage=(76, 24, 0, 0),
        ),
        Case(
            "openai_chat/groq_event_error_tool_use_failed",
            OpenAIChatProvider,
            _read("openai_chat/groq_event_error_tool_use_failed.sse"),
            StopReason.ERROR,
            ["thinking"],
            model_id="openai/gpt-oss-120b",
            thinking_start="We need to call the tool with invalid parameters first",
            error_kind=ErrorKind.OTHER,
            error_has="Tool call validation failed",
        ),
        Case(
            "openai_chat/openrouter_error_in_chunk",
            OpenAIChatProvider,
            _read("openai_chat/openrouter_error_in_chunk.sse"),
            StopReason.ERROR,
            ["thinking"],
            thinking_start="We need to respond to a greeting. The user",
            usage=(43, 10, 0, 0),
            usage_extra={"reasoning_tokens": 11},
            error_kind=ErrorKind.OTHER,
            error_has="Token limit reached",
        ),
    ]


def _ollama_cases() -> list[Case]:
    ndjson = "application/x-ndjson"
    return [
        Case(
            "ollama/chat_stream_text_gemma3",
            OllamaProvider,
            _read("ollama/chat_stream_text_gemma3.ndjson"),
            StopReason.STOP,
            ["text"],
            content_type=ndjson,
            model_id="gemma3:1b",
            text_start="Okay, here we go!\n\n1, 2, 3, 4, 5\n",
            text_len=33,
            usage=(16, 22, 0, 0),
        ),
        Case(
            "ollama/chat_stream_thinking_gpt_oss",
            OllamaProvider,
            _read("ollama/chat_stream_thinking_gpt_oss.ndjson"),
            StopReason.STOP,
            ["thinking", "text"],
            content_type=ndjson,
            thinking_start='User asks: "Count from 1 to 5".',
            text_start="1  \n2  \n3  \n4  \n5",
            text_len=17,
            usage=(74, 57, 0, 0),
        ),
        Case(
            "ollama/chat_tool_call_with_thinking_nonstream",
            OllamaProvider,
            _read("ollama/chat_tool_call_with_thinking_nonstream.json"),
            StopReason.TOOL_USE,
            ["thinking", "call"],
            content_type="application/json",
            thinking_start="User asks about weather in San Francisco.",
            calls=[("getWeather", "call_mo1wm122", {"location": "San Francisco, CA"})],
            usage=(145, 44, 0, 0),
        ),
        Case(
            "ollama/docs_chat_stream_tool_call",
            OllamaProvider,
            _read("ollama/docs_chat_stream_tool_call.ndjson"),
            StopReason.TOOL_USE,
            ["call"],
            content_type=ndjson,
            calls=[("get_weather", None, {"city": "Tokyo"})],
            usage=(169, 15, 0, 0),
        ),
        Case(
            "ollama/error_400_model_does_not_support_tools",
            OllamaProvider,
            _read("ollama/error_400_model_does_not_support_tools.json"),
            StopReason.ERROR,
            [],
            status=400,
            content_type="application/json",
            error_kind=ErrorKind.OTHER,
            error_has="does not support tools",
        ),
    ]


CASES: list[Case] = [*_anthropic_cases(), *_openai_cases(), *_ollama_cases()]
