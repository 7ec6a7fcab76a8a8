"""Adapter stream parsers on hand-written wire snippets: the cases no recording covers."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from agentloop import AssistantMessage, ErrorKind, ModelSpec, StopReason
from agentloop.stream import Accumulator, AssistantMessageEvent
from agentloop_providers._http import ProtocolError
from agentloop_providers._sse import ServerSentEvent
from agentloop_providers.anthropic import AnthropicStreamParser
from agentloop_providers.ollama import OllamaStreamParser
from agentloop_providers.openai_chat import OpenAIChatStreamParser

MODEL = ModelSpec(provider="p", model_id="m")


def sse(payload: Any, event: str = "message") -> ServerSentEvent:
    data = payload if isinstance(payload, str) else msgspec.json.encode(payload).decode()
    return ServerSentEvent(event, data)


def fold(events: list[AssistantMessageEvent]) -> AssistantMessage:
    accumulator = Accumulator(MODEL)
    for event in events:
        accumulator.push(event)
    return accumulator.finish()


def run_anthropic(*payloads: Any) -> AssistantMessage:
    parser = AnthropicStreamParser()
    events: list[AssistantMessageEvent] = []
    for payload in payloads:
        events.extend(parser.feed(sse(payload, payload.get("type", "message"))))
    events.extend(parser.end())
    return fold(events)


def start(usage: dict[str, int]) -> dict[str, Any]:
    return {"type": "message_start", "message": {"model": "claude-x", "usage": usage}}


def block(index: int, content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": content}


def delta(index: int, content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": content}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def end(reason: str, usage: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": usage},
        {"type": "message_stop"},
    ]


def test_anthropic_cache_usage_and_signature_deltas() -> None:
    message = run_anthropic(
        start(
            {
                "input_tokens": 12,
                "cache_read_input_tokens": 900,
                "cache_creation_input_tokens": 40,
                "output_tokens": 1,
            }
        ),
        block(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "hmm"}),
        delta(0, {"type": "signature_delta", "signature": "abc"}),
        delta(0, {"type": "signature_delta", "signature": "def"}),
        stop(0),
        block(1, {"type": "text", "text": ""}),
        delta(1, {"type": "text_delta", "text": "hi"}),
        delta(1, {"type": "citations_delta", "citation": {"type": "char_location"}}),
        stop(1),
        *end("end_turn", {"output_tokens": 7}),
    )
    assert message.stop_reason is StopReason.STOP
    assert message.model_id == "claude-x"
    thinking = message.content[0]
    assert thinking.signature == "abcdef"  # type: ignore[union-attr]
    assert message.text == "hi"
    u = message.usage
    assert (u.input, u.output, u.cache_read, u.cache_write, u.total) == (12, 7, 900, 40, 959)


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("end_turn", StopReason.STOP),
        ("stop_sequence", StopReason.STOP),
        ("max_tokens", StopReason.LENGTH),
        ("model_context_window_exceeded", StopReason.LENGTH),
        ("tool_use", StopReason.TOOL_USE),
        ("pause_turn", StopReason.STOP),
        ("some_future_reason", StopReason.STOP),
    ],
)
def test_anthropic_stop_reasons(reason: str, expected: StopReason) -> None:
    message = run_anthropic(start({"input_tokens": 1}), *end(reason, {"output_tokens": 1}))
    assert message.stop_reason is expected


def test_anthropic_refusal_is_content_filtered() -> None:
    message = run_anthropic(
        start({"input_tokens": 1}),
        block(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "I can"}),
        *end("refusal", {"output_tokens": 2}),
    )
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.CONTENT_FILTERED
    assert message.text == "I can"


def test_anthropic_unknown_block_with_streamed_input_is_an_extension() -> None:
    message = run_anthropic(
        start({"input_tokens": 1}),
        block(0, {"type": "mcp_tool_use", "id": "m1", "name": "x", "input": {}}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"q": '}),
        delta(0, {"type": "input_json_delta", "partial_json": '"v"}'}),
        stop(0),
        *end("end_turn", {"output_tokens": 1}),
    )
    (ext,) = message.content
    assert ext.type_name == "mcp_tool_use"  # type: ignore[union-attr]
    assert ext.data == {"type": "mcp_tool_use", "id": "m1", "name": "x", "input": {"q": "v"}}  # type: ignore[union-attr]


def test_anthropic_stop_for_a_block_never_started_is_a_protocol_error() -> None:
    parser = AnthropicStreamParser()
    with pytest.raises(ProtocolError):
        parser.feed(sse(stop(3)))


def run_openai(*payloads: Any, done: bool = True) -> AssistantMessage:
    parser = OpenAIChatStreamParser()
    events: list[AssistantMessageEvent] = []
    for payload in payloads:
        events.extend(parser.feed(sse(payload)))
    if done:
        events.extend(parser.feed(sse("[DONE]")))
    events.extend(parser.end())
    return fold(events)


def chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> dict[str, Any]:
    return {
        "model": "gpt-x",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
    }


def test_openai_tool_calls_without_index_are_told_apart_by_id() -> None:
    message = run_openai(
        chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": '{"x": 1}'}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    )
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("a", "f", {"x": 1}),
        ("b", "g", {}),
    ]


def test_openai_arguments_sent_as_an_object() -> None:
    message = run_openai(
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "a", "function": {"name": "f", "arguments": {"x": 1}}}
                ]
            }
        ),
        chunk({}, "tool_calls"),
    )
    assert message.tool_calls[0].arguments == {"x": 1}


def test_openai_stop_after_tool_calls_means_tool_use() -> None:
    message = run_openai(
        chunk(
            {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}]}
        ),
        chunk({}, "stop"),
    )
    assert message.stop_reason is StopReason.TOOL_USE


def test_openai_content_filter() -> None:
    message = run_openai(chunk({"content": "Sure, here"}), chunk({}, "content_filter"))
    assert message.error_kind is ErrorKind.CONTENT_FILTERED
    assert message.text == "Sure, here"


def test_openai_reasoning_content_then_text_and_cached_usage() -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 12},
    }
    message = run_openai(
        chunk({"reasoning_content": "think"}),
        chunk({"content": "answer"}),
        chunk({}, "stop"),
        {"model": "gpt-x", "choices": [], "usage": usage},
    )
    assert [type(b).__name__ for b in message.content] == ["Thinking", "Text"]
    u = message.usage
    assert (u.input, u.output, u.cache_read, u.total, u.extra) == (
        36,
        20,
        64,
        120,
        {"reasoning_tokens": 12},
    )


def test_openai_missing_done_after_finish_and_usage_is_tolerated() -> None:
    usage = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    message = run_openai(chunk({"content": "ok"}), chunk({}, "stop"), usage, done=False)
    assert message.stop_reason is StopReason.STOP
    assert message.text == "ok"
    assert message.usage.input == 3


def test_openai_a_stream_cut_after_the_finish_reason_before_usage_is_a_cut_stream() -> None:
    # The usage chunk (or, at OpenRouter, an error) follows the finish reason: ending there
    # means the rest was lost.
    message = run_openai(chunk({"content": "ok"}), chunk({}, "stop"), done=False)
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.NETWORK


def test_openai_done_without_finish_reason_is_a_cut_stream() -> None:
    message = run_openai(chunk({"content": "o"}))
    assert message.error_kind is ErrorKind.NETWORK


def test_openai_other_choices_are_ignored() -> None:
    message = run_openai(
        chunk({"content": "zero"}), chunk({"content": "one"}, index=1), chunk({}, "stop")
    )
    assert message.text == "zero"


def run_ollama(*lines: dict[str, Any]) -> AssistantMessage:
    parser = OllamaStreamParser()
    events: list[AssistantMessageEvent] = []
    for line in lines:
        events.extend(parser.feed(line))
    return fold(events)


def test_ollama_error_line_mid_stream() -> None:
    message = run_ollama(
        {"model": "m", "message": {"role": "assistant", "content": "par"}, "done": False},
        {"error": "llama runner process has terminated: signal: killed"},
    )
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.OTHER
    assert message.text == "par"


def test_ollama_length_and_string_arguments() -> None:
    message = run_ollama(
        {"model": "m", "message": {"role": "assistant", "content": "a"}, "done": False},
        {
            "model": "m",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "length",
        },
    )
    assert message.stop_reason is StopReason.LENGTH
    message = run_ollama(
        {
            "model": "m",
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "f", "arguments": '{"a": 1}'}}],
            },
            "done": True,
        }
    )
    assert message.tool_calls[0].arguments == {"a": 1}
    assert message.stop_reason is StopReason.TOOL_USE


def test_ollama_generated_call_ids_are_unique() -> None:
    line = {
        "model": "m",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "f", "arguments": {}}}] * 2,
        },
        "done": True,
    }
    ids = [c.id for c in run_ollama(line).tool_calls]
    assert len(set(ids)) == 2
