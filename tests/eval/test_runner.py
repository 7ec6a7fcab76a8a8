"""The runner: concurrency cap, repeats and pass@k, per-run timeouts, statuses, factories."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

import agentloop as al
from agentloop import multi
from agentloop.testing import ScriptedStream, reply_error, reply_text, reply_tool_calls
from agentloop_eval import (
    BudgetSpec,
    Check,
    Criteria,
    EvalCase,
    JudgeSpec,
    Registry,
    Report,
    RunResult,
    Setup,
    SuiteError,
    ToolExpectation,
    Trajectory,
    run_suite,
)

from ._helpers import (
    PRICED,
    function_provider,
    get_weather,
    make_registry,
    provider,
    scripted_provider,
    suite_of,
    weather_script,
)

pytestmark = pytest.mark.anyio


def only_run(report: Report) -> RunResult:
    [case] = report.cases
    [run] = case.runs
    return run


async def test_a_passing_case_with_its_measures() -> None:
    model = provider(lambda: ScriptedStream(weather_script()), pricing=PRICED)
    case = EvalCase(
        name="weather",
        prompt="Weather in Paris?",
        tools=["get_weather"],
        tags=["tools"],
        expected=ToolExpectation(tools=["get_weather"]),
        criteria=Criteria(contains=["Paris"]),
        budget=BudgetSpec(max_turns=2, max_tokens=100),
    )
    report = await run_suite(suite_of(case, model=model))
    run = only_run(report)
    assert run.status == "passed" and run.error is None
    assert [c.name for c in run.checks] == ["tool path (exact)", "contains 'Paris'", "budget"]
    assert (run.turns, run.tool_calls, run.tokens) == (2, 1, 43)
    assert run.cost == pytest.approx((30 * 1 + 13 * 2) / 1e6)
    assert run.trajectory is not None and run.trajectory.tool_names() == ["get_weather"]
    assert report.cases[0].tags == ["tools"] and report.cases[0].threshold == 1.0
    assert report.suite == "test" and report.cassettes == "off" and report.created


async def test_repeats_pass_rates_and_pass_at_k() -> None:
    answers = itertools.cycle(["4", "5", "4", "four"])  # right, wrong, right, wrong
    model = function_provider(lambda context: reply_text(next(answers)))
    case = EvalCase(name="sum", prompt="2 + 2?", repeats=4, criteria=Criteria(regex=[r"^4$"]))
    seen: list[RunResult] = []
    report = await run_suite(suite_of(case, model=model), concurrency=1, on_run=seen.append)
    [result] = report.cases
    assert [r.repeat for r in result.runs] == [0, 1, 2, 3]
    # Which repeat gets which answer depends on scheduling (trio shuffles it): count them.
    assert sorted(r.status for r in result.runs) == ["failed", "failed", "passed", "passed"]
    assert (result.passed, result.failed, result.errors, result.pass_rate) == (2, 2, 0, 0.5)
    assert result.pass_at(2) == pytest.approx(1 - 1 / 6) and result.pass_at(5) is None
    assert sorted(r.repeat for r in seen) == [0, 1, 2, 3]
    failed = sorted(r.checks[0].detail for r in result.runs if r.status == "failed")
    assert failed == ["no match in '5'", "no match in 'four'"]
    # The runs option repeats every case, whatever it says.
    again = await run_suite(suite_of(case, model=model), repeats=2)
    assert len(again.cases[0].runs) == 2


async def test_no_more_runs_at_once_than_the_cap() -> None:
    release = anyio.Event()
    active = peak = 0

    async def answer(context: Any) -> al.AssistantMessage:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await release.wait()
        active -= 1
        return reply_text("ok")

    model = function_provider(answer)
    cases = [EvalCase(name=f"c{i}", prompt="hi", repeats=2) for i in range(3)]
    reports: list[Report] = []

    async def run() -> None:
        reports.append(await run_suite(suite_of(*cases, model=model), concurrency=2))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        assert active == 2  # two runs wait on the model; four wait for a slot
        release.set()
    assert peak == 2 and reports[0].passed == 6


async def test_a_run_that_takes_too_long_is_an_error_and_the_others_go_on() -> None:
    async def hang(context: Any) -> al.AssistantMessage:
        await anyio.Event().wait()
        raise AssertionError("never answered")

    slow = EvalCase(name="slow", prompt="hi", model=function_provider(hang), timeout=0.2)
    # Waiting for the one slot behind the slow case does not count against this timeout.
    quick = EvalCase(name="quick", prompt="hi", timeout=0.1)
    model = function_provider(lambda context: reply_text("hello"))
    report = await run_suite(suite_of(slow, quick, model=model), concurrency=1)
    slow_run, quick_run = (c.runs[0] for c in report.cases)
    assert slow_run.status == "error" and slow_run.error == "timed out after 0.2s"
    assert slow_run.trajectory is not None and slow_run.trajectory.prompt == "hi"
    assert quick_run.status == "passed"
    assert report.cases[0].pass_rate is None and report.errors == 1


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        (al.ErrorKind.AUTH, "error"),  # the provider, not the agent
        (al.ErrorKind.CONTENT_FILTERED, "failed"),  # what the agent did
        (al.ErrorKind.OTHER, "failed"),
    ],
)
async def test_model_failures_are_errors_or_failures_by_kind(
    kind: al.ErrorKind, status: str
) -> None:
    model = scripted_provider([reply_error(kind, "it went wrong")])
    run = only_run(await run_suite(suite_of(EvalCase(name="x", prompt="hi"), model=model)))
    assert run.status == status and run.error == "it went wrong"
    if status == "failed":
        assert run.checks[0] == Check(name="run", passed=False, detail="it went wrong")


async def test_harness_failures_are_errors() -> None:
    registry = make_registry()

    @registry.tool_factory("broken")
    def broken(setup: Setup) -> al.AgentTool:
        raise RuntimeError("cannot build")

    @registry.check
    def crashes(trajectory: Trajectory) -> bool:
        raise KeyError("oops")

    model = function_provider(lambda context: reply_text("hi"))
    cases = [
        EvalCase(name="factory", prompt="p", tools=["broken"]),
        EvalCase(name="check", prompt="p", criteria=Criteria(checks=["crashes"])),
        EvalCase(name="model", prompt="p", model="nosuchprovider:x"),
    ]
    report = await run_suite(suite_of(*cases, model=model, registry=registry))
    factory, check, unknown = (c.runs[0] for c in report.cases)
    assert factory.status == "error" and factory.error == "RuntimeError('cannot build')"
    assert check.status == "error" and check.error == "check 'crashes': KeyError('oops')"
    assert unknown.status == "error" and "no provider named 'nosuchprovider'" in (
        unknown.error or ""
    )


async def test_an_inconsistent_suite_is_refused_before_running() -> None:
    case = EvalCase(name="x", prompt="p", tools=["nope"])
    with pytest.raises(SuiteError, match="no tool named 'nope'"):
        await run_suite(suite_of(case, model="m:m"))
    with pytest.raises(ValueError, match="concurrency"):
        await run_suite(suite_of(EvalCase(name="x", prompt="p"), model="m:m"), concurrency=0)


async def test_typed_output_is_checked_against_a_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temp": {"type": "integer"}},
        "required": ["city", "temp"],
    }
    model = scripted_provider([reply_tool_calls(("final_result", {"city": "Paris", "temp": 21}))])
    case = EvalCase(
        name="typed", prompt="p", output_schema=schema, criteria=Criteria(json_schema=schema)
    )
    run = only_run(await run_suite(suite_of(case, model=model)))
    assert run.status == "passed", run
    assert run.trajectory is not None and run.trajectory.output == {"city": "Paris", "temp": 21}
    # Never valid: the run fails (the agent's doing), with the reason.
    bad = scripted_provider([reply_tool_calls(("final_result", {"city": 1}))] * 3)
    run = only_run(await run_suite(suite_of(case, model=bad)))
    assert run.status == "failed" and run.checks[0].name == "run"


async def test_the_judge_runs_on_its_own_model() -> None:
    judge = scripted_provider([reply_text("FAIL\nIt never says the temperature.")])
    model = scripted_provider(weather_script())
    case = EvalCase(
        name="judged",
        prompt="Weather?",
        tools=["get_weather"],
        criteria=Criteria(judge=JudgeSpec(rubric="Gives the temperature.", model=judge)),
    )
    run = only_run(await run_suite(suite_of(case, model=model)))
    assert run.status == "failed"
    assert run.checks == [
        Check(name="judge", passed=False, detail="It never says the temperature.", score=0.0)
    ]
    # The judge's spending is not the agent's.
    assert run.tokens == 43


async def test_agents_and_sub_agent_tools_from_the_registry() -> None:
    registry = Registry()

    @registry.tool_factory("ask_helper")
    def ask_helper(setup: Setup) -> al.AgentTool:
        def helper() -> al.Agent:
            return al.Agent(
                model=setup.model, stream_fn=setup.stream_fn, name="helper", tools=[get_weather]
            )

        return multi.SubAgentTool(helper, name="ask_helper", description="Asks the helper.")

    @registry.agent("boss")
    def boss(setup: Setup, tools: list[al.AgentTool]) -> al.Agent:
        assert setup.case.name == "nested" and setup.repeat == 0
        return al.Agent(model=setup.model, stream_fn=setup.stream_fn, name="boss", tools=tools)

    def answer(context: Any) -> al.AssistantMessage:
        # One model for both agents, answering by what was asked.
        last = context.messages[-1]
        if isinstance(last, al.UserMessage) and last.text == "Plan a picnic.":
            return reply_tool_calls(("ask_helper", {"task": "Weather in Oslo?"}))
        if isinstance(last, al.UserMessage):
            return reply_tool_calls(("get_weather", {"city": "Oslo"}))
        return reply_text(f"Done: {last.text}")

    case = EvalCase(
        name="nested",
        prompt="Plan a picnic.",
        agent="boss",
        tools=["ask_helper"],
        expected=ToolExpectation(tools=["ask_helper", "get_weather"], tree=True),
    )
    run = only_run(
        await run_suite(suite_of(case, model=function_provider(answer), registry=registry))
    )
    assert run.status == "passed", run.checks
    assert run.trajectory is not None and run.trajectory.agent == "boss"
    [helper] = run.trajectory.sub_agents()
    assert helper.agent == "helper" and helper.text == "Done: Sunny, 21 C in Oslo."
