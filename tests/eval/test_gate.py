"""The gate: thresholds per case, tag and suite, errors, and the baseline comparison."""

from __future__ import annotations

import pytest

from agentloop_eval import CaseResult, Report, RunResult, Thresholds, gate
from agentloop_eval._gate import thresholds_of


def case(
    name: str,
    passed: int,
    failed: int = 0,
    errors: int = 0,
    *,
    tags: tuple[str, ...] = (),
    threshold: float = 1.0,
) -> CaseResult:
    statuses = ["passed"] * passed + ["failed"] * failed + ["error"] * errors
    runs = [RunResult(case=name, repeat=i, status=s) for i, s in enumerate(statuses)]  # type: ignore[arg-type]
    return CaseResult(name=name, runs=runs, tags=list(tags), threshold=threshold)


def report(*cases: CaseResult, **settings: object) -> Report:
    return Report(suite="s", cases=list(cases), **settings)  # type: ignore[arg-type]


def test_case_thresholds() -> None:
    assert gate(report(case("a", 3, 1, threshold=0.75))).passed
    result = gate(report(case("a", 2, 2, threshold=0.75), case("b", 1)))
    assert not result.passed
    assert result.failures == ["case a: 2/4 = 50% < 75%"]
    assert result.summary() == "gate: FAILED\n  - case a: 2/4 = 50% < 75%"


def test_errors_stay_out_of_pass_rates_but_have_their_own_limit() -> None:
    flaky = report(case("a", 3, 0, 2))
    result = gate(flaky)
    assert result.failures == ["errors: 2 of 5 runs (at most 0%)"]
    assert gate(flaky, max_error_rate=0.4).passed
    assert gate(report(case("a", 3, 0, 2), max_error_rate=0.4)).passed
    none_scored = gate(report(case("a", 0, 0, 2)), max_error_rate=1.0)
    assert none_scored.failures == ["case a: no run could be scored (2 errors)"]


def test_tag_and_suite_thresholds() -> None:
    cases = (
        case("a", 4, 0, tags=("tools",), threshold=0.0),
        case("b", 1, 3, tags=("tools",), threshold=0.0),
        case("c", 0, 4, tags=("text",), threshold=0.0),
    )
    assert gate(report(*cases)).passed
    limits = Thresholds(default=0.0, tags={"tools": 0.7, "text": 0.0, "absent": 1.0}, suite=0.5)
    result = gate(report(*cases), thresholds=limits)
    assert result.failures == ["tag tools: 5/8 = 62% < 70%", "suite: 5/12 = 42% < 50%"]
    # The report carries the suite's own thresholds for the gate.
    assert gate(report(*cases, thresholds=limits)).failures == result.failures


def test_given_thresholds_replace_the_reports() -> None:
    r = report(case("a", 1, 1, threshold=0.5), case("b", 1, 3, threshold=0.25))
    assert gate(r).passed
    assert thresholds_of(r).cases == {"a": 0.5, "b": 0.25}
    assert gate(r, thresholds=Thresholds(default=0.5)).failures == ["case b: 1/4 = 25% < 50%"]
    assert gate(r, thresholds=Thresholds(default=1.0, cases={"a": 0.5, "b": 0.2})).passed


def test_a_real_drop_is_a_regression_and_a_small_one_is_noise() -> None:
    loose = Thresholds(default=0.0)
    baseline = report(case("a", 20, 0), case("b", 19, 1))
    now = report(case("a", 6, 14), case("b", 17, 3))
    result = gate(now, baseline=baseline, thresholds=loose)
    verdicts = {(c.scope, c.name): c.verdict for c in result.comparisons}
    assert verdicts == {
        ("case", "a"): "regression",
        ("case", "b"): "noise",
        ("suite", "s"): "regression",
    }
    assert result.failures[0].startswith("regression in case a: 20/20 -> 6/20 (-70%; interval")
    assert not result.passed and [c.name for c in result.regressions] == ["a", "s"]
    better = gate(baseline, baseline=now, thresholds=loose)
    assert better.passed and {c.verdict for c in better.comparisons} == {"improvement", "noise"}
    assert "  improvement: case a: 6/20 -> 20/20 (+70%, interval" in better.summary()
    assert result.summary().count("case a: 20/20 -> 6/20") == 1  # once, among the failures
    # A margin tolerates drops smaller than itself.
    assert gate(now, baseline=baseline, thresholds=loose, margin=0.8).passed


def test_more_comparisons_widen_each_interval() -> None:
    # 20/20 -> 14/20 is a regression when it is the only comparison made (one case, its
    # suite), not when many cases share the error budget (Bonferroni).
    loose = Thresholds(default=0.0)
    alone = gate(report(case("a", 14, 6)), baseline=report(case("a", 20)), thresholds=loose)
    assert [c.verdict for c in alone.comparisons] == ["regression", "regression"]
    steady = [case(f"s{i}", 10) for i in range(20)]
    crowd = gate(
        report(case("a", 14, 6), *steady),
        baseline=report(case("a", 20), *steady),
        thresholds=loose,
    )
    assert crowd.comparisons[0].verdict == "noise" and crowd.passed
    assert crowd.comparisons[0].low < alone.comparisons[0].low


def test_cases_missing_on_either_side() -> None:
    result = gate(report(case("new", 1)), baseline=report(case("old", 1)))
    assert result.passed and result.notes == ["cases in the baseline only: old"]
    assert [c.scope for c in result.comparisons] == ["suite"]
    with pytest.raises(ValueError, match="confidence"):
        gate(report(case("a", 1)), confidence=1.5)
