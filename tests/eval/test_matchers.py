"""Matchers: golden tool paths, response criteria, the LLM judge, efficiency and budgets."""

from __future__ import annotations

from typing import Any

import pytest

import agentloop as al
from agentloop.testing import (
    FunctionStream,
    ScriptedStream,
    reply_error,
    reply_text,
    reply_tool_calls,
)
from agentloop_eval import (
    Budget,
    BudgetGuard,
    Check,
    Contains,
    Custom,
    DuplicateCalls,
    ExpectedCall,
    JsonSchema,
    LlmJudge,
    NotContains,
    Regex,
    Steps,
    ToolPath,
    ToolStep,
    Trajectory,
    TrajectoryCollector,
    Turn,
    duplicate_call_ratio,
    step_ratio,
)
from agentloop_eval._judge import parse_verdict

from ._helpers import MODEL, get_weather

pytestmark = pytest.mark.anyio


def calls(*steps: str | tuple[str, dict[str, Any]]) -> Trajectory:
    made = []
    for i, step in enumerate(steps):
        name, args = (step, {}) if isinstance(step, str) else step
        made.append(ToolStep(call_id=f"c{i}", name=name, arguments=args))
    return Trajectory(tool_calls=made)


async def passes(matcher: Any, trajectory: Trajectory) -> bool:
    check: Check = await matcher.check(trajectory)
    assert check.name == matcher.name
    return check.passed


# --------------------------------------------------------------------------- tool paths


async def test_exact_paths() -> None:
    path = ToolPath(["search", "read"])
    assert await passes(path, calls("search", "read"))
    assert not await passes(path, calls("read", "search"))
    assert not await passes(path, calls("search", "read", "read"))
    assert not await passes(path, calls("search"))
    check = await path.check(calls("search", "write"))
    assert check.detail.startswith("call 2 is write(), not read: made [search, write]")
    assert await passes(ToolPath([]), calls())


async def test_in_order_paths_allow_calls_between() -> None:
    path = ToolPath(["search", "read"], mode="in_order")
    assert await passes(path, calls("plan", "search", "think", "read", "answer"))
    assert not await passes(path, calls("read", "search"))
    assert not await passes(path, calls("search"))


async def test_any_order_paths_match_each_expected_call_to_its_own_call() -> None:
    path = ToolPath(["read", "search", "read"], mode="any_order")
    assert await passes(path, calls("read", "x", "read", "search"))
    assert not await passes(path, calls("read", "search"))  # one read for two
    # Greedy matching would give the first call to the general expectation and fail.
    general = ExpectedCall(name="get", arguments=None)
    specific = ExpectedCall(name="get", arguments={"id": 1})
    trajectory = calls(("get", {"id": 1}), ("get", {"id": 2}))
    assert await passes(ToolPath([general, specific], mode="any_order"), trajectory)
    check = await ToolPath([specific, specific], mode="any_order").check(trajectory)
    assert not check.passed and "missing get(id=1)" in check.detail


async def test_arguments_must_be_among_the_calls() -> None:
    path = ToolPath([ExpectedCall(name="get_weather", arguments={"city": "Paris"})])
    assert await passes(path, calls(("get_weather", {"city": "Paris", "units": "C"})))
    assert not await passes(path, calls(("get_weather", {"city": "Lyon"})))
    assert not await passes(path, calls(("get_weather", {})))
    with pytest.raises(ValueError, match="mode must be one of"):
        ToolPath(["x"], mode="sorted")  # type: ignore[arg-type]


async def test_tree_paths_include_sub_agents_calls() -> None:
    inner = Trajectory(agent="helper", tool_calls=[ToolStep(call_id="a", name="search")])
    outer = Trajectory(
        tool_calls=[
            ToolStep(call_id="b", name="delegate", sub_agent=inner),
            ToolStep(call_id="c", name="answer"),
        ]
    )
    assert await passes(ToolPath(["delegate", "answer"]), outer)
    assert await passes(ToolPath(["delegate", "search", "answer"], tree=True), outer)
    assert not await passes(ToolPath(["delegate", "answer"], tree=True), outer)


# --------------------------------------------------------------------------- response criteria


async def test_text_criteria() -> None:
    answer = Trajectory(text="It is Sunny, 21 C in Paris.")
    assert await passes(Contains("Paris"), answer)
    assert not await passes(Contains("paris"), answer)
    assert await passes(Contains("paris", ignore_case=True), answer)
    assert await passes(NotContains("rain"), answer)
    assert not await passes(NotContains("SUNNY", ignore_case=True), answer)
    assert await passes(Regex(r"\d+ ?C\b"), answer)
    check = await Regex(r"\d+ ?F\b").check(answer)
    assert not check.passed and "It is Sunny" in check.detail


SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
    "required": ["city", "temp"],
}


async def test_json_schema_of_the_answer_or_the_typed_output() -> None:
    schema = JsonSchema(SCHEMA)
    assert await passes(
        schema,
        Trajectory(text='{"city": "Paris", "temp": 21}', output='{"city": "Paris", "temp": 21}'),
    )
    fenced = '```json\n{"city": "Paris", "temp": 21}\n```'
    assert await passes(schema, Trajectory(text=fenced, output=fenced))
    assert await passes(schema, Trajectory(text="", output={"city": "Paris", "temp": 21}))
    bad = await schema.check(Trajectory(output={"city": "Paris"}))
    assert not bad.passed and "temp" in bad.detail
    prose = await schema.check(Trajectory(output="It is sunny."))
    assert not prose.passed and prose.detail.startswith("not JSON")
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        JsonSchema({"type": "no such type"})


async def test_custom_checks_in_every_form() -> None:
    answer = Trajectory(text="42")

    async def is_42(t: Trajectory) -> bool:
        return t.text == "42"

    assert await passes(Custom(is_42), answer)
    assert (await Custom(is_42).check(answer)).name == "is_42"
    detail = await Custom(lambda t: (False, "too short"), name="length").check(answer)
    assert detail == Check(name="length", passed=False, detail="too short")
    own = Check(name="mine", passed=True, score=0.5)
    assert await Custom(lambda t: own).check(answer) is own
    with pytest.raises(TypeError, match="returned str"):
        await Custom(lambda t: "yes", name="odd").check(answer)  # type: ignore[arg-type,return-value]


# --------------------------------------------------------------------------- the judge


def judge_answering(*answers: str) -> ScriptedStream:
    return ScriptedStream([reply_text(a) for a in answers])


async def test_the_judge_reads_pass_or_fail() -> None:
    trajectory = Trajectory(
        prompt="Weather in Paris?",
        text="Sunny, 21 C.",
        tool_calls=[
            ToolStep(call_id="c", name="get_weather", arguments={"city": "Paris"}, result="Sunny")
        ],
    )
    judge_model = judge_answering("PASS\nIt gives the weather.", "**Fail** - no city.", "Hmm.")
    judge = LlmJudge(MODEL, rubric="Gives the weather.", stream_fn=judge_model)
    assert await judge.check(trajectory) == Check(
        name="judge", passed=True, detail="It gives the weather.", score=1.0
    )
    assert not (await judge.check(trajectory)).passed
    unclear = await judge.check(trajectory)
    assert not unclear.passed and unclear.detail.startswith("no verdict")
    # What the judge was shown: the task, the calls and their results, the answer, the rubric.
    asked = judge_model.calls[0].context.messages[-1].text
    for part in (
        "Weather in Paris?",
        "get_weather({'city': 'Paris'}) -> 'Sunny'",
        "Sunny, 21 C.",
        "Gives the weather.",
    ):
        assert part in asked


def test_verdicts() -> None:
    assert parse_verdict("PASS") is True
    assert parse_verdict("  fail: it did not") is False
    assert parse_verdict("The answer is correct. PASS") is True
    assert parse_verdict("It passed, I think") is None  # only PASS/FAIL in capitals, mid-text
    assert parse_verdict("The answer is not passed.") is None
    assert parse_verdict("") is None


async def test_a_judge_that_cannot_answer_raises() -> None:
    judge = LlmJudge(
        MODEL,
        rubric="r",
        stream_fn=ScriptedStream([reply_error(al.ErrorKind.AUTH, "bad key")]),
    )
    with pytest.raises(al.ModelError, match="bad key"):
        await judge.check(Trajectory(text="x"))


# --------------------------------------------------------------------------- efficiency and budgets


async def test_duplicate_calls_and_steps() -> None:
    t = calls(("read", {"a": 1, "b": 2}), ("read", {"b": 2, "a": 1}), ("read", {"a": 2}), "write")
    assert duplicate_call_ratio(t) == 0.25  # argument order does not make a call new
    assert duplicate_call_ratio(Trajectory()) == 0.0
    assert not await passes(DuplicateCalls(), t)
    assert await passes(DuplicateCalls(max_ratio=0.25), t)
    assert (await DuplicateCalls().check(t)).score == 0.75
    assert step_ratio(t, 2) == 2.0 and step_ratio(Trajectory(), 0) == 1.0
    check = await Steps(2, max_ratio=1.5).check(t)
    assert not check.passed and check.score == 0.5
    assert await passes(Steps(4), t)
    with pytest.raises(ValueError, match="optimal"):
        step_ratio(t, -1)


async def test_budgets() -> None:
    t = Trajectory(
        turns=[Turn(index=0), Turn(index=1), Turn(index=2)],
        usage=al.Usage(input=700, output=400),
        cost=al.Cost(total=0.02),
        duration=3.5,
    )
    assert await passes(Budget(max_cost=0.02, max_tokens=1100, max_turns=3, max_seconds=4), t)
    over = await Budget(max_cost=0.01, max_tokens=1000, max_turns=2, max_seconds=3).check(t)
    assert over.detail == "cost 0.02 > 0.01; tokens 1100 > 1000; turns 3 > 2; time 3.5s > 3s"
    assert await passes(Budget(), t)


async def test_the_guard_ends_a_runaway_run_one_turn_over_budget() -> None:
    # A model that never stops calling tools.
    loop = FunctionStream(lambda c: reply_tool_calls(("get_weather", {"city": "Paris"})))
    agent = al.Agent(
        model=MODEL,
        stream_fn=loop,
        tools=[get_weather],
        post_turn_policies=[Budget(max_turns=3).guard()],
    )
    collector = TrajectoryCollector()
    agent.subscribe(collector)
    result = await agent.prompt("go")
    assert len(collector.trajectory().turns) == 4 and "3 turns" in (result.stopped_by or "")
    assert not (await Budget(max_turns=3).check(collector.trajectory())).passed

    spender = al.Agent(
        model=MODEL,
        stream_fn=FunctionStream(
            lambda c: reply_tool_calls(("get_weather", {"city": "Oslo"}), usage=al.Usage(total=600))
        ),
        tools=[get_weather],
        post_turn_policies=[BudgetGuard(max_tokens=1000)],
    )
    result = await spender.prompt("go")
    assert result.usage.total == 1200 and "1000 tokens" in (result.stopped_by or "")
