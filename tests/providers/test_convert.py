"""The shared conversion helpers."""

from __future__ import annotations

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
)
from agentloop_providers._convert import (
    BlockIndexer,
    arguments_json,
    assistant_blocks,
    image_data_url,
    max_output_tokens,
    reasoning_effort,
    thinking_budget,
    tool_result_parts,
    usage,
)

MODEL = ModelSpec(provider="anthropic", model_id="m")


def test_an_aborted_answer_replays_without_its_tool_calls() -> None:
    message = AssistantMessage(
        provider="anthropic",
        stop_reason=StopReason.ABORTED,
        content=[Text(text="partial"), ToolCall(id="c", name="t", arguments={})],
    )
    assert assistant_blocks(message, MODEL) == [Text(text="partial")]


def test_native_thinking_is_kept_or_dropped_and_foreign_becomes_text() -> None:
    signed = Thinking(thinking="a", signature="s")
    native = AssistantMessage(provider="anthropic", content=[signed])
    assert assistant_blocks(native, MODEL) == [signed]
    assert assistant_blocks(native, MODEL, keep_thinking=False) == []
    foreign = AssistantMessage(
        provider="openai", content=[signed, Extension(type_name="x", data={})]
    )
    assert assistant_blocks(foreign, MODEL) == [Text(text="a")]
    unknown = AssistantMessage(content=[signed])  # no provider recorded: not provably ours
    assert assistant_blocks(unknown, MODEL) == [Text(text="a")]


def test_arguments_json() -> None:
    assert arguments_json(ToolCall(id="c", name="t", arguments={"a": [1, 2]})) == '{"a":[1,2]}'
    cut = ToolCall(id="c", name="t", arguments={}, partial_json='{"a": [1,')
    assert arguments_json(cut) == '{"a": [1,'


def test_thinking_budgets_and_effort() -> None:
    assert thinking_budget(MODEL) is None
    medium = ModelSpec(provider="p", model_id="m", thinking_level=ThinkingLevel.MEDIUM)
    assert thinking_budget(medium) == 8192
    custom = ModelSpec(
        provider="p",
        model_id="m",
        thinking_level=ThinkingLevel.MEDIUM,
        thinking_budgets=ThinkingBudgets(budgets={ThinkingLevel.LOW: 1}),
    )
    assert thinking_budget(custom) == 8192  # no override for this level
    assert reasoning_effort(ThinkingLevel.OFF) is None
    assert reasoning_effort(ThinkingLevel.MINIMAL) == "minimal"
    assert reasoning_effort(ThinkingLevel.EXTRA_HIGH) == "high"
    assert reasoning_effort(ThinkingLevel.EXTRA_HIGH, extra_high="xhigh") == "xhigh"


def test_max_output_tokens_precedence() -> None:
    model = ModelSpec(provider="p", model_id="m", max_output_tokens=500)
    assert max_output_tokens(model, StreamOptions(max_tokens=100), 9) == 100
    assert max_output_tokens(model, StreamOptions(), 9) == 500
    assert max_output_tokens(MODEL, StreamOptions(), 9) == 9


def test_images_and_tool_results() -> None:
    assert (
        image_data_url(Image(media_type="image/jpeg", data="QUJD")) == "data:image/jpeg;base64,QUJD"
    )
    assert image_data_url(Image(url="https://x/y.png")) == "https://x/y.png"
    result = ToolResultMessage(
        tool_call_id="c",
        content=[
            Text(text="a"),
            Image(data="QUJD"),
            Text(text="b"),
            Extension(type_name="e", data={"k": 1}),
        ],
    )
    text, images = tool_result_parts(result)
    assert text == 'a\nb\n{"k":1}'
    assert images == [Image(data="QUJD")]


def test_usage_total_and_extras() -> None:
    u = usage(input=1, output=2, cache_read=3, cache_write=4, reasoning_tokens=5, zero=0)
    assert (u.total, u.extra) == (10, {"reasoning_tokens": 5})


def test_block_indexer() -> None:
    blocks = BlockIndexer()
    assert blocks.get("text") == (0, True)
    assert blocks.get("tool") == (1, True)
    assert blocks.get("text") == (0, False)
    assert blocks.close("text") == 0
    assert blocks.peek("text") is None
    assert blocks.get("text") == (2, True)  # text after a tool call is a new block
