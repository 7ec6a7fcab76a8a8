"""Context management: token estimates, the sliding window and the summarising compactor."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agentloop import (
    Agent,
    AgentMessage,
    AssistantMessage,
    ContextCompacted,
    CustomMessage,
    ErrorKind,
    Image,
    ModelSpec,
    StopReason,
    Text,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentloop._config import TransformContext
from agentloop._context import (
    SUMMARY_HEADER,
    EstimatingCounter,
    SlidingWindow,
    SummarizingCompactor,
    compact_messages,
    estimate_tokens,
    render_transcript,
)
from agentloop.testing import FunctionStream, ScriptedStream, ScriptItem, reply_error, reply_text

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop import AgentEvent
    from agentloop.stream import LlmContext

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="test", model_id="m")
COUNTER = EstimatingCounter()


class Note(CustomMessage, frozen=True, tag="test-context-note"):
    text: str


def make_ctx(*, overflow: bool = False) -> tuple[TransformContext, list[AgentEvent]]:
    events: list[AgentEvent] = []
    return TransformContext(overflow=overflow, model=MODEL, turn=0, emit=events.append), events


def user(text: str) -> UserMessage:
    return UserMessage(content=[Text(text=text)])


def said(text: str) -> AssistantMessage:
    return AssistantMessage(content=[Text(text=text)])


def tool_unit(call_ids: list[str], size: int = 40) -> list[AgentMessage]:
    calls = [ToolCall(id=c, name="lookup", arguments={"q": "x" * size}) for c in call_ids]
    unit: list[AgentMessage] = [
        AssistantMessage(content=list(calls), stop_reason=StopReason.TOOL_USE)
    ]
    for c in call_ids:
        unit.append(
            ToolResultMessage(tool_call_id=c, tool_name="lookup", content=[Text(text="r" * size)])
        )
    return unit


def tokens(messages: list[AgentMessage], system_prompt: str = "") -> int:
    return estimate_tokens(messages, system_prompt=system_prompt, counter=COUNTER)


def compactions(events: list[AgentEvent]) -> list[ContextCompacted]:
    return [e for e in events if isinstance(e, ContextCompacted)]


# --------------------------------------------------------------------------- estimates


def test_estimate_counts_characters_over_four_and_images_at_a_fixed_cost() -> None:
    counter = EstimatingCounter(image_tokens=500, message_overhead=0)
    assert counter.count_text("abcdefgh") == 2
    assert counter.count_text("abcdefghi") == 3  # rounds up
    assert counter.count(user("a" * 40)) == 10
    with_image = UserMessage(content=[Text(text="a" * 40), Image(data="AAAA")])
    assert counter.count(with_image) == 510
    call = AssistantMessage(content=[ToolCall(id="c", name="abcd", arguments={"k": "v" * 30})])
    assert counter.count(call) == -(-(4 + len('{"k":"' + "v" * 30 + '"}')) // 4)
    assert counter.count(Note(text="x" * 100)) > 25


def test_estimate_tokens_includes_the_system_prompt_and_overheads() -> None:
    history: list[AgentMessage] = [user("a" * 40), said("b" * 40)]
    assert estimate_tokens(history) == 2 * (10 + 4)
    assert estimate_tokens(history, system_prompt="s" * 400) == 2 * 14 + 100


# --------------------------------------------------------------------------- sliding window


def test_window_passes_a_history_that_fits_through_unchanged() -> None:
    history: list[AgentMessage] = [user("hello"), said("hi")]
    ctx, events = make_ctx()
    assert SlidingWindow(1000)(history, ctx) is history
    assert events == []


def test_window_without_any_budget_is_a_no_op() -> None:
    history: list[AgentMessage] = [user("x" * 4000) for _ in range(10)]
    ctx, events = make_ctx()
    assert SlidingWindow()(history, ctx) is history
    assert events == []


def test_window_drops_the_oldest_keeps_the_first_user_message_and_reports() -> None:
    first = user("the task: " + "t" * 30)
    middle: list[AgentMessage] = []
    for i in range(10):
        middle += [user(f"question {i} " + "q" * 60), said(f"answer {i} " + "a" * 60)]
    history = [first, *middle]
    budget = tokens([first, *middle[-4:]])
    ctx, events = make_ctx()
    kept = SlidingWindow(budget)(history, ctx)
    assert kept == [first, *middle[-4:]]
    assert history == [first, *middle]  # the input is not mutated
    (report,) = compactions(events)
    assert report.dropped == 16
    assert "dropped 16 messages" in report.report
    assert report.details["strategy"] == "sliding_window"
    assert report.details["tokens_after"] == budget
    assert report.details["overflow"] is False


def test_window_never_separates_a_tool_call_from_its_results() -> None:
    first = user("start")
    pair = tool_unit(["a", "b"], size=200)
    tail: list[AgentMessage] = [said("done"), user("next")]
    history = [first, *pair, *tail]
    # Room for the tail and the last tool result, but not for the whole pair.
    budget = tokens([first, pair[-1], *tail])
    ctx, events = make_ctx()
    assert SlidingWindow(budget)(history, ctx) == [first, *tail]
    assert compactions(events)[0].dropped == len(pair)


def test_window_keeps_the_newest_unit_even_when_it_alone_exceeds_the_budget() -> None:
    first = user("start")
    big = tool_unit(["a"], size=4000)
    history = [first, said("x" * 400), *big]
    ctx, _ = make_ctx()
    assert SlidingWindow(50)(history, ctx) == [first, *big]


def test_window_uses_the_tighter_budget_on_overflow() -> None:
    history: list[AgentMessage] = [user("goal")]
    for i in range(20):
        history += [user(f"u{i} " + "u" * 80), said(f"a{i} " + "a" * 80)]
    window = SlidingWindow(1000, overflow_tokens=300)
    normal_ctx, normal_events = make_ctx()
    overflow_ctx, overflow_events = make_ctx(overflow=True)
    normal = window(history, normal_ctx)
    tight = window(history, overflow_ctx)
    assert 300 < tokens(normal) <= 1000
    assert tokens(tight) <= 300
    assert len(tight) < len(normal)
    assert tight[0] is history[0]
    assert normal[0] is history[0]
    assert compactions(overflow_events)[0].details["overflow"] is True
    assert compactions(normal_events)[0].details["budget"] == 1000
    # Without an explicit overflow budget, the tighter one is half the normal budget.
    assert SlidingWindow(1000).budget(MODEL, overflow=True) == 500


def test_window_counts_the_system_prompt_against_the_budget() -> None:
    history: list[AgentMessage] = [user("goal")]
    for i in range(20):
        history += [user(f"u{i} " + "u" * 80), said(f"a{i} " + "a" * 80)]
    prompt = "p" * 1600  # 400 tokens
    ctx, _ = make_ctx()
    plain = SlidingWindow(1000)(history, ctx)
    prompted = SlidingWindow(1000, system_prompt=prompt)(history, ctx)
    assert tokens(prompted, prompt) <= 1000 < tokens(plain, prompt)


def test_window_budget_defaults_to_the_models_context_window() -> None:
    model = ModelSpec(provider="t", model_id="m", context_window=1000, max_output_tokens=200)
    assert SlidingWindow().budget(model, overflow=False) == 800
    assert SlidingWindow().budget(model, overflow=True) == 400
    quarter = ModelSpec(provider="t", model_id="m", context_window=1000)
    assert SlidingWindow().budget(quarter, overflow=False) == 750


def test_window_on_a_growing_history_matches_a_fresh_window() -> None:
    history: list[AgentMessage] = [user("goal")]
    window = SlidingWindow(400)
    for i in range(30):
        history = history + ([user(f"u{i} " + "u" * 50)] if i % 3 else tool_unit([f"c{i}"], 30))
        ctx, _ = make_ctx()
        assert window(history, ctx) == SlidingWindow(400)(history, ctx)
    # A history that is replaced rather than extended is re-indexed.
    replaced = [user("other"), *history[5:]]
    ctx, _ = make_ctx()
    assert window(replaced, ctx) == SlidingWindow(400)(replaced, ctx)


def test_compact_messages_applies_the_window_once() -> None:
    history: list[AgentMessage] = [user("goal")]
    for i in range(10):
        history += [user("u" * 100), said(f"a{i}")]
    done = compact_messages(history, max_tokens=100)
    assert done.messages[0] is history[0]
    assert done.messages[-1] is history[-1]
    assert done.dropped == len(history) - len(done.messages) > 0
    assert done.tokens_after == tokens(done.messages) <= 100 < done.tokens_before
    unchanged = compact_messages(history, max_tokens=10_000)
    assert unchanged.messages == history
    assert unchanged.dropped == 0
    model = ModelSpec(provider="t", model_id="m", context_window=400)
    assert compact_messages(history, model=model).tokens_after <= 300
    with pytest.raises(ValueError, match="max_tokens"):
        compact_messages(history)


# --------------------------------------------------------------------------- the property

_text = st.text(alphabet="abcdefgh ", max_size=300)


@st.composite
def histories(draw: st.DrawFn) -> list[list[AgentMessage]]:
    """A history as a list of units; a tool unit is a call and its (shuffled) results."""
    units: list[list[AgentMessage]] = []
    if draw(st.booleans()):
        units.append([user(draw(_text))])
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["user", "said", "tools", "note"]))
        if kind == "user":
            units.append([user(draw(_text))])
        elif kind == "said":
            units.append([said(draw(_text))])
        elif kind == "note":
            units.append([Note(text=draw(_text))])
        else:
            # Ids repeat across units, as real providers' ids sometimes do.
            ids = draw(
                st.lists(
                    st.sampled_from(["c1", "c2", "c3", "c4"]), min_size=1, max_size=3, unique=True
                )
            )
            unit = tool_unit(ids, size=draw(st.integers(0, 200)))
            results = draw(st.permutations(unit[1:]))
            middle: list[AgentMessage] = list(results)
            if len(middle) > 1 and draw(st.booleans()):
                middle.insert(1, Note(text="progress"))
            units.append([unit[0], *middle])
    return units


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    units=histories(),
    budget=st.integers(1, 2000),
    overflow=st.booleans(),
    prompt=st.text(alphabet="p", max_size=400),
)
def test_window_property(
    units: list[list[AgentMessage]], budget: int, overflow: bool, prompt: str
) -> None:
    history = [m for unit in units for m in unit]
    window = SlidingWindow(budget, overflow_tokens=budget // 3 or 1, system_prompt=prompt)
    ctx, events = make_ctx(overflow=overflow)
    kept = window(history, ctx)
    limit = budget // 3 or 1 if overflow else budget
    kept_ids = {id(m) for m in kept}

    # Order is preserved: the result is a prefix plus a suffix of the history.
    positions = [next(i for i, m in enumerate(history) if m is k) for k in kept]
    assert positions == sorted(positions)

    # Units move as a whole: a tool call is never separated from its results.
    for unit in units:
        inside = [id(m) in kept_ids for m in unit]
        assert all(inside) or not any(inside)

    # The anchor (the first user message and anything before it) is always kept.
    first_user = next((i for i, m in enumerate(history) if isinstance(m, UserMessage)), None)
    anchor_len = 0 if first_user is None else first_user + 1
    assert kept[:anchor_len] == history[:anchor_len]

    # The budget holds, unless only the anchor and the newest unit are left.
    newest = len(history) - len(units[-1]) if units else 0
    minimal = history[:anchor_len] + history[max(anchor_len, newest) :]
    total = tokens(kept, prompt)
    assert total <= limit or kept == minimal

    reports = compactions(events)
    if tokens(history, prompt) <= limit:
        assert kept is history
        assert not reports
    if kept == history:
        assert not reports
    else:
        (report,) = reports
        assert report.dropped == len(history) - len(kept)
        assert report.details["tokens_after"] == total
        # No more was dropped than needed: the newest dropped unit would not have fitted.
        dropped_units = [u for u in units if id(u[0]) not in kept_ids]
        assert tokens([*kept, *dropped_units[-1]], prompt) > limit


# --------------------------------------------------------------------------- summaries


def long_history(turns: int = 12) -> list[AgentMessage]:
    history: list[AgentMessage] = [user("the goal is to count the widgets")]
    for i in range(turns):
        history += tool_unit([f"w{i}"], size=60)
        history += [said(f"found {i} widgets " + "a" * 60), user(f"continue {i}")]
    return history


async def test_summarizer_replaces_the_oldest_units_with_a_summary() -> None:
    model = ScriptedStream([reply_text("widgets so far: 0 to 7")])
    compactor = SummarizingCompactor(model, max_tokens=600, summary_max_tokens=100)
    history = long_history()
    ctx, events = make_ctx()
    kept = await compactor(history, ctx)

    assert kept[0] is history[0]
    note = kept[1]
    assert isinstance(note, UserMessage)
    assert note.content == [Text(text=f"{SUMMARY_HEADER}\nwidgets so far: 0 to 7")]
    tail = kept[2:]
    assert tail == history[len(history) - len(tail) :]
    assert tokens(kept) <= 600
    assert not isinstance(tail[0], ToolResultMessage)  # never starts inside a pair

    (call,) = model.calls
    request = call.context.messages[0]
    assert isinstance(request, UserMessage)
    transcript = request.content[0]
    assert isinstance(transcript, Text)
    assert "found 0 widgets" in transcript.text
    assert "[calls tool lookup" in transcript.text
    assert call.options.max_tokens == 100

    (report,) = compactions(events)
    assert report.details["strategy"] == "summary"
    assert report.dropped == len(history) - len(kept) + 1


async def test_summarizer_reuses_its_summary_then_extends_it() -> None:
    seen: list[str] = []

    def summarise(context: LlmContext) -> AssistantMessage:
        message = context.messages[0]
        assert isinstance(message, UserMessage)
        seen.append(render_transcript([message]))
        return reply_text(f"summary {len(seen)}")

    model = FunctionStream(summarise)
    compactor = SummarizingCompactor(model, max_tokens=600, summary_max_tokens=100)
    history = long_history()
    ctx, _ = make_ctx()
    first = await compactor(history, ctx)
    # One more short message still fits next to the same summary: no new model call.
    grown = [*history, said("ok")]
    second = await compactor(grown, ctx)
    assert len(model.calls) == 1
    assert second == [*first, grown[-1]]
    # Much more history needs a new summary, which is built on the old one.
    grown += long_history()[1:]
    third = await compactor(grown, ctx)
    assert len(model.calls) == 2
    assert "summary 1" in seen[1]
    assert isinstance(third[1], UserMessage)
    assert "summary 2" in render_transcript([third[1]])
    assert tokens(third) <= 600


FAILURES: dict[str, Callable[[], ScriptItem]] = {
    "error-event": lambda: reply_error(message="summary model down"),
    "exception": lambda: RuntimeError("boom"),
    "empty": lambda: reply_text("   "),
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_summarizer_falls_back_to_the_window_when_the_summary_fails(failure: str) -> None:
    model = ScriptedStream([FAILURES[failure]()])
    compactor = SummarizingCompactor(model, max_tokens=600)
    history = long_history()
    ctx, events = make_ctx()
    kept = await compactor(history, ctx)
    fresh_ctx, _ = make_ctx()
    assert kept == SlidingWindow(600)(history, fresh_ctx)
    (report,) = compactions(events)
    assert report.details["strategy"] == "sliding_window_fallback"
    assert report.dropped == len(history) - len(kept)
    assert "summary failed" in report.report


async def test_summarizer_falls_back_when_the_summary_call_times_out() -> None:
    async def never(context: LlmContext) -> AssistantMessage:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    compactor = SummarizingCompactor(FunctionStream(never), max_tokens=600, timeout=0.01)
    ctx, events = make_ctx()
    kept = await compactor(long_history(), ctx)
    assert tokens(kept) <= 600
    (report,) = compactions(events)
    assert "TimeoutError" in report.report


async def test_summarizer_does_not_swallow_cancellation() -> None:
    started = anyio.Event()

    async def hang(context: LlmContext) -> AssistantMessage:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    compactor = SummarizingCompactor(FunctionStream(hang), max_tokens=600, timeout=None)
    ctx, events = make_ctx()
    finished = False

    async def run(scope: anyio.CancelScope) -> None:
        nonlocal finished
        with scope:
            await compactor(long_history(), ctx)
            finished = True

    scope = anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run, scope)
        await started.wait()
        scope.cancel()
    assert scope.cancelled_caught
    assert not finished
    assert events == []


async def test_summarizer_passes_a_history_that_fits_through() -> None:
    model = ScriptedStream([])
    history: list[AgentMessage] = [user("hi"), said("hello")]
    ctx, events = make_ctx()
    assert await SummarizingCompactor(model, max_tokens=600)(history, ctx) is history
    assert model.calls == []
    assert events == []


async def test_summarizer_compact_summarises_on_demand() -> None:
    model = ScriptedStream([reply_text("all about widgets"), reply_error()])
    compactor = SummarizingCompactor(model, max_tokens=600)
    history = long_history()
    done = await compactor.compact(history, model=MODEL)
    assert done.summary == "all about widgets"
    assert done.messages[0] is history[0]
    assert done.dropped > 0
    assert done.tokens_after < done.tokens_before
    with pytest.raises(RuntimeError, match="summary failed"):
        await SummarizingCompactor(ScriptedStream([reply_error()]), max_tokens=600).compact(
            history, model=MODEL
        )


# --------------------------------------------------------------------------- inside an agent


async def test_window_in_an_agent_trims_each_request_not_the_history() -> None:
    history = long_history()
    model = ScriptedStream([reply_text("ok")])
    agent = Agent(
        model=MODEL, stream_fn=model, messages=history, transform_context=SlidingWindow(300)
    )
    events: list[AgentEvent] = []
    agent.subscribe(events.append)
    await agent.prompt("and now?")
    sent = model.calls[0].context.messages
    assert sent[0] == history[0]
    assert sent[-1] == agent.messages[-2]  # the new prompt
    assert estimate_tokens(sent) <= 300
    assert agent.messages[: len(history)] == history
    (report,) = compactions(events)
    assert report.dropped == len(history) + 1 - len(sent)


async def test_window_in_an_agent_prunes_harder_after_an_overflow() -> None:
    model = ScriptedStream(
        [reply_error(ErrorKind.CONTEXT_OVERFLOW, "prompt is too long"), reply_text("ok")]
    )
    window = SlidingWindow(500, overflow_tokens=200)
    agent = Agent(model=MODEL, stream_fn=model, messages=long_history(), transform_context=window)
    events: list[AgentEvent] = []
    agent.subscribe(events.append)
    result = await agent.prompt("and now?")
    assert result.text == "ok"
    first, second = (call.context.messages for call in model.calls)
    assert 200 < estimate_tokens(first) <= 500
    assert estimate_tokens(second) <= 200
    assert [r.details["overflow"] for r in compactions(events)] == [False, True]


async def test_summarizer_in_an_agent() -> None:
    summaries = ScriptedStream([reply_text("they counted widgets")])
    model = ScriptedStream([reply_text("ok")])
    agent = Agent(
        model=MODEL,
        stream_fn=model,
        messages=long_history(),
        async_transform_context=SummarizingCompactor(summaries, max_tokens=600),
    )
    await agent.prompt("how many?")
    sent = model.calls[0].context.messages
    assert sent[1] == UserMessage(
        content=[Text(text=f"{SUMMARY_HEADER}\nthey counted widgets")], timestamp=sent[1].timestamp
    )
    assert estimate_tokens(sent) <= 600
    assert len(summaries.calls) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(units=histories(), budget=st.integers(100, 1500))
def test_summarizer_property_over_a_growing_history(
    units: list[list[AgentMessage]], budget: int
) -> None:
    """Turn after turn, the summary keeps anchors and whole units, and the budget holds."""

    async def main() -> None:
        model = FunctionStream(lambda context: reply_text("s" * 40))
        compactor = SummarizingCompactor(model, max_tokens=budget, summary_max_tokens=50)
        history: list[AgentMessage] = []
        for n, unit in enumerate(units, 1):
            history = history + unit
            ctx, events = make_ctx()
            kept = await compactor(history, ctx)
            first_user = next(
                (i for i, m in enumerate(history) if isinstance(m, UserMessage)), None
            )
            anchor_len = 0 if first_user is None else first_user + 1
            newest = len(history) - len(unit)
            minimal = history[:anchor_len] + history[max(anchor_len, newest) :]
            if kept is history:
                assert tokens(history) <= budget or history == minimal
                assert events == []
                continue
            assert len(compactions(events)) == 1
            ids = {id(m) for m in history}
            notes = [m for m in kept if id(m) not in ids]
            assert len(notes) <= 1
            rest = [m for m in kept if id(m) in ids]
            positions = [next(i for i, x in enumerate(history) if x is m) for m in rest]
            assert positions == sorted(positions)
            kept_ids = {id(m) for m in rest}
            for whole in units[:n]:
                inside = [id(m) in kept_ids for m in whole]
                assert all(inside) or not any(inside)
            assert rest[:anchor_len] == history[:anchor_len]
            if notes:
                assert kept[anchor_len] is notes[0]
                assert render_transcript(notes).startswith(f"User: {SUMMARY_HEADER}")
            assert tokens(kept) <= budget or rest == minimal

    for backend in ("asyncio", "trio"):
        anyio.run(main, backend=backend)
