"""The data model's behaviour: arithmetic, defaults, helpers, secrets, typed errors."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, strategies as st

import agentloop
from agentloop import (
    Aborted,
    AgentError,
    AgentResult,
    AssistantMessage,
    ContentBlock,
    ContextWindowOverflow,
    Cost,
    CustomMessage,
    ErrorKind,
    Extension,
    Image,
    ModelError,
    ModelSpec,
    ModelThrottled,
    NetworkError,
    Pricing,
    StopReason,
    StreamError,
    StreamOptions,
    Text,
    Thinking,
    ThinkingBudgets,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    extract_text,
)

# --------------------------------------------------------------------------- usage and cost


def test_usage_adds_every_field_and_merges_extra() -> None:
    a = Usage(input=1, output=2, cache_read=3, cache_write=4, total=10, extra={"a": 1, "b": 2})
    b = Usage(input=10, output=20, cache_read=30, cache_write=40, total=100, extra={"b": 5, "c": 7})
    assert a + b == Usage(
        input=11,
        output=22,
        cache_read=33,
        cache_write=44,
        total=110,
        extra={"a": 1, "b": 7, "c": 7},
    )
    assert a.merge(b) == a + b


def test_usage_addition_leaves_operands_unchanged() -> None:
    a = Usage(input=1, extra={"a": 1})
    b = Usage(input=2, extra={"a": 2})
    _ = a + b
    assert a == Usage(input=1, extra={"a": 1})
    assert b == Usage(input=2, extra={"a": 2})
    # The sum must not share its extra map with either operand.
    assert (a + Usage()).extra is not a.extra
    assert (Usage() + a).extra is not a.extra


def test_usage_iadd_rebinds_to_the_sum() -> None:
    total = Usage()
    original = total
    for i in range(1, 4):
        total += Usage(input=i, output=2 * i, extra={"reasoning": i})
    assert total == Usage(input=6, output=12, extra={"reasoning": 6})
    assert original == Usage()


def test_usage_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        _ = Usage() + Cost()  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = Usage() + 1  # type: ignore[operator]


def test_usage_is_empty() -> None:
    assert Usage().is_empty
    assert not Usage(output=1).is_empty
    assert not Usage(extra={"x": 0}).is_empty


def test_cost_adds_every_field_and_merges_extra() -> None:
    a = Cost(
        input=0.5, output=1.0, cache_read=0.25, cache_write=0.125, total=1.875, extra={"x": 1.5}
    )
    b = Cost(
        input=0.5, output=2.0, cache_read=0.25, cache_write=0.125, total=2.875, extra={"y": 2.0}
    )
    assert a + b == Cost(
        input=1.0,
        output=3.0,
        cache_read=0.5,
        cache_write=0.25,
        total=4.75,
        extra={"x": 1.5, "y": 2.0},
    )
    c = Cost()
    c += a
    c += a
    assert c.extra == {"x": 3.0}
    assert c.total == 3.75
    with pytest.raises(TypeError):
        _ = Cost() + Usage()  # type: ignore[operator]


def test_pricing_cost_is_per_million_tokens() -> None:
    pricing = Pricing(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = Usage(input=1_000_000, output=2_000_000, cache_read=500_000, cache_write=0, total=9)
    cost = pricing.cost(usage)
    assert cost.input == pytest.approx(3.0)
    assert cost.output == pytest.approx(30.0)
    assert cost.cache_read == pytest.approx(0.15)
    assert cost.cache_write == 0.0
    assert cost.total == pytest.approx(33.15)
    assert Pricing().cost(usage) == Cost()


# --------------------------------------------------------------------------- model


def test_thinking_budgets_get() -> None:
    budgets = ThinkingBudgets(budgets={ThinkingLevel.LOW: 1024, ThinkingLevel.HIGH: 16384})
    assert budgets.get(ThinkingLevel.LOW) == 1024
    assert budgets.get(ThinkingLevel.HIGH) == 16384
    assert budgets.get(ThinkingLevel.MEDIUM) is None
    assert ThinkingBudgets().get(ThinkingLevel.LOW) is None


def test_model_spec_defaults() -> None:
    spec = ModelSpec(provider="anthropic", model_id="claude")
    assert spec.thinking_level is ThinkingLevel.OFF
    assert spec.thinking_budgets is None
    assert spec.context_window is None
    assert spec.max_output_tokens is None
    assert spec.pricing is None
    with pytest.raises(TypeError):
        ModelSpec(provider="p")  # type: ignore[call-arg]


def test_enum_values_are_the_designed_strings() -> None:
    assert [s.value for s in StopReason] == ["stop", "length", "tool_use", "aborted", "error"]
    assert [r.value for r in agentloop.TurnEndReason] == [
        "complete",
        "tools_executed",
        "steering_interrupt",
        "error",
        "aborted",
    ]
    assert [t.value for t in ThinkingLevel] == [
        "off",
        "minimal",
        "low",
        "medium",
        "high",
        "extra_high",
    ]


def test_stream_options_never_show_the_api_key() -> None:
    secret = "sk-very-secret-0123456789"
    options = StreamOptions(api_key=secret, temperature=0.5, extra={"top_p": 0.9})
    for shown in (repr(options), str(options), f"{options}", f"{options!r}"):
        assert secret not in shown
        assert "api_key='***'" in shown
        assert "temperature=0.5" in shown
    assert "api_key=None" in repr(StreamOptions())
    # rich and other pretty printers use __rich_repr__ when a class defines one.
    rich_fields = dict(options.__rich_repr__())
    assert secret not in repr(rich_fields)
    assert rich_fields["temperature"] == 0.5


def test_stream_options_defaults() -> None:
    options = StreamOptions()
    assert options.temperature is None
    assert options.max_tokens is None
    assert options.session_id is None
    assert options.transport == "sse"
    assert options.api_key is None
    assert options.extra == {}


# --------------------------------------------------------------------------- messages


def test_extract_text_joins_only_text_blocks() -> None:
    blocks: list[ContentBlock] = [
        Text(text="Hello, "),
        Thinking(thinking="hmm"),
        Image(data="AAAA"),
        ToolCall(id="c1", name="t", arguments={"text": "no"}),
        Extension(type_name="citation", data={"text": "no"}),
        Text(text="world"),
    ]
    assert extract_text(blocks) == "Hello, world"
    assert extract_text(tuple(blocks)) == "Hello, world"
    assert extract_text([]) == ""


def test_assistant_message_tool_calls_and_text() -> None:
    c1 = ToolCall(id="c1", name="a", arguments={"x": 1})
    c2 = ToolCall(id="c2", name="b")
    message = AssistantMessage(
        content=[Text(text="Let me "), c1, Thinking(thinking="..."), Text(text="check."), c2]
    )
    assert message.tool_calls == [c1, c2]
    assert message.text == "Let me check."
    assert AssistantMessage().tool_calls == []
    assert AssistantMessage().text == ""
    assert c2.arguments == {}


def test_assistant_message_defaults() -> None:
    message = AssistantMessage()
    assert message.stop_reason is StopReason.STOP
    assert message.usage == Usage()
    assert message.cost == Cost()
    assert message.error_message is None
    assert message.error_kind is None
    assert message.timestamp > 1_600_000_000_000  # milliseconds, not seconds


def test_user_message_text_helper() -> None:
    image = Image(url="https://example.com/cat.png")
    assert UserMessage.from_text("hi").content == [Text(text="hi")]
    assert UserMessage.from_text("look", images=[image]).content == [Text(text="look"), image]


def test_tool_result_text() -> None:
    result = ToolResultMessage(
        tool_call_id="c1", content=[Text(text="4"), Image(data="x"), Text(text="2")]
    )
    assert result.text == "42"
    assert not result.is_error
    assert result.details is None


def test_messages_are_frozen() -> None:
    message = AssistantMessage()
    with pytest.raises(AttributeError):
        message.stop_reason = StopReason.ERROR  # type: ignore[misc]


def test_custom_message_subclasses_register_by_tag() -> None:
    class Banner(CustomMessage, frozen=True, tag="test-types-banner"):
        text: str

    class LoudBanner(Banner, frozen=True, tag="test-types-loud-banner"):
        volume: int = 11

    registered = CustomMessage.registered()
    assert registered["test-types-banner"] is Banner
    assert registered["test-types-loud-banner"] is LoudBanner


def test_custom_message_tag_clashing_with_a_role_is_refused() -> None:
    # In a subprocess: a clashing subclass would poison the registry for every other test.
    code = (
        "import agentloop\n"
        "class Impostor(agentloop.CustomMessage, tag='assistant'):\n"
        "    pass\n"
        "try:\n"
        "    agentloop.CustomMessage.registered()\n"
        "except TypeError as exc:\n"
        "    print('refused:', exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.startswith("refused:")
    assert "clashes" in out.stdout


# --------------------------------------------------------------------------- results


def _result(
    stop: StopReason, kind: ErrorKind | None = None, error: str | None = None
) -> AgentResult:
    return AgentResult(messages=[], stop_reason=stop, error=error, error_kind=kind, output="")


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (ErrorKind.CONTEXT_OVERFLOW, ContextWindowOverflow),
        (ErrorKind.THROTTLED, ModelThrottled),
        (ErrorKind.NETWORK, NetworkError),
        (ErrorKind.AUTH, StreamError),
        (ErrorKind.CONTENT_FILTERED, StreamError),
        (ErrorKind.OTHER, StreamError),
        (None, StreamError),
    ],
)
def test_raise_for_error_maps_kinds_to_typed_errors(
    kind: ErrorKind | None, expected: type[ModelError]
) -> None:
    with pytest.raises(expected) as info:
        _result(StopReason.ERROR, kind, "it broke").raise_for_error()
    assert type(info.value) is expected
    assert isinstance(info.value, AgentError)
    assert info.value.kind is (kind or ErrorKind.OTHER)
    assert str(info.value) == "it broke"


def test_raise_for_error_without_message_still_says_something() -> None:
    with pytest.raises(StreamError, match=r"\S"):
        _result(StopReason.ERROR).raise_for_error()


def test_raise_for_error_on_abort_and_success() -> None:
    with pytest.raises(Aborted):
        _result(StopReason.ABORTED).raise_for_error()
    for stop in (StopReason.STOP, StopReason.LENGTH, StopReason.TOOL_USE):
        _result(stop).raise_for_error()  # does not raise


def test_agent_result_final_message_and_text() -> None:
    first = AssistantMessage(content=[Text(text="first")])
    last = AssistantMessage(content=[Text(text="last")])
    result = AgentResult(
        messages=[
            UserMessage.from_text("q"),
            first,
            ToolResultMessage(tool_call_id="c", content=[]),
            last,
            UserMessage.from_text("after"),
        ],
        stop_reason=StopReason.STOP,
        output="last",
    )
    assert result.final_message is last
    assert result.text == "last"
    empty = AgentResult(
        messages=[UserMessage.from_text("q")], stop_reason=StopReason.ABORTED, output=""
    )
    assert empty.final_message is None
    assert empty.text == ""


def test_error_hierarchy_matches_design() -> None:
    for model_error in (ContextWindowOverflow, ModelThrottled, NetworkError, StreamError):
        assert issubclass(model_error, ModelError)
    for cls in (
        ModelError,
        agentloop.StructuredOutputFailed,
        agentloop.AlreadyRunning,
        agentloop.NoMessages,
        agentloop.InvalidContinue,
        Aborted,
    ):
        assert issubclass(cls, AgentError)
    failed = agentloop.StructuredOutputFailed(3, "missing field `x`")
    assert failed.attempts == 3
    assert "3 attempts" in str(failed)
    assert "missing field `x`" in str(failed)
    throttled = ModelThrottled("slow down", retry_after=2.5)
    assert throttled.retry_after == 2.5
    assert throttled.message == "slow down"


# ---------------------------------------------------------------- adding up a run's spending


def _spending(cls: type[Any], value: st.SearchStrategy[Any], **extra: Any) -> Any:
    """A ``Usage`` or ``Cost`` strategy: ``value`` for each of the five counts."""
    counts = dict.fromkeys(("input", "output", "cache_read", "cache_write", "total"), value)
    return st.builds(cls, **counts, **extra)


_counts = st.integers(0, 10**9)
_usages = _spending(
    agentloop.Usage,
    _counts,
    extra=st.dictionaries(st.sampled_from(["a", "b", "c"]), _counts, max_size=2),
    estimated=st.booleans(),
)
_money = st.floats(0, 1e3, allow_nan=False)
_costs = _spending(
    agentloop.Cost, _money, extra=st.dictionaries(st.sampled_from(["a", "b"]), _money, max_size=2)
)


@given(_usages, st.lists(_usages, max_size=6), _costs, st.lists(_costs, max_size=6))
def test_adding_up_in_one_pass_is_adding_one_by_one(
    start: agentloop.Usage,
    usages: list[agentloop.Usage],
    start_cost: agentloop.Cost,
    costs: list[agentloop.Cost],
) -> None:
    # A run adds up its answers' usage and cost when asked, in one pass: the same sums (the
    # same float additions in the same order) as ``+`` one answer at a time, and dicts of
    # their own.
    from agentloop._types import add_cost, add_usage

    one_by_one = start
    for usage in usages:
        one_by_one = one_by_one + usage
    total = add_usage(start, usages)
    assert total == one_by_one
    assert total.extra is not start.extra
    cost_by_one = start_cost
    for cost in costs:
        cost_by_one = cost_by_one + cost
    assert add_cost(start_cost, costs) == cost_by_one
