"""The gate: does a report pass, and did anything really get worse than in a baseline?

Two kinds of rules:

* **Thresholds**, fixed bars: each case's pass rate, each tag's (over every run of the tag's
  cases) and the suite's must reach theirs, and at most ``max_error_rate`` of the runs may be
  errors. Errors are kept out of pass rates (they say nothing about the agent) but a case with
  no scored run fails.
* **The baseline comparison**, for noise: for each case, each tag and the whole suite present
  in both reports, the Newcombe score interval of the pass-rate difference (new - baseline).
  A difference is a *regression* when the whole interval lies below ``-margin``, an
  *improvement* when it lies above ``margin``, and *noise* otherwise. The intervals are
  Bonferroni-corrected over all the comparisons made, so that with no real change anywhere the
  gate fails at most ``1 - confidence`` of the time (5 % at the default 0.95), however many
  cases the suite has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

import msgspec

from ._stats import rate_difference

if TYPE_CHECKING:
    from ._case import Thresholds
    from ._report import Report

__all__ = ["Comparison", "GateResult", "Verdict", "gate", "thresholds_of"]

Verdict: TypeAlias = Literal["regression", "improvement", "noise"]


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    """One pass rate compared with the baseline's: counts, difference and its interval."""

    scope: Literal["case", "tag", "suite"]
    name: str
    base_passed: int
    base_scored: int
    new_passed: int
    new_scored: int
    difference: float
    low: float
    high: float
    verdict: Verdict


class GateResult(msgspec.Struct, frozen=True, kw_only=True):
    """The gate's decision: ``passed``, and every reason it did not (``failures``)."""

    passed: bool
    failures: list[str] = msgspec.field(default_factory=list)
    comparisons: list[Comparison] = msgspec.field(default_factory=list)
    confidence: float = 0.95
    notes: list[str] = msgspec.field(default_factory=list)

    @property
    def regressions(self) -> list[Comparison]:
        """The comparisons whose verdict is a regression."""
        return [c for c in self.comparisons if c.verdict == "regression"]

    def summary(self) -> str:
        """The decision in a few lines of text."""
        lines = ["gate: " + ("passed" if self.passed else "FAILED")]
        lines += [f"  - {failure}" for failure in self.failures]
        lines += [f"  note: {note}" for note in self.notes]
        for c in self.comparisons:
            if c.verdict == "improvement":  # regressions are among the failures already
                lines.append(
                    f"  {c.verdict}: {c.scope} {c.name}: {c.base_passed}/{c.base_scored} -> "
                    f"{c.new_passed}/{c.new_scored} ({c.difference:+.0%}, interval "
                    f"{c.low:+.0%} to {c.high:+.0%})"
                )
        return "\n".join(lines)


def thresholds_of(report: Report) -> Thresholds:
    """The thresholds a report was made with: each case's, the tags' and the suite's."""
    return msgspec.structs.replace(
        report.thresholds, cases={c.name: c.threshold for c in report.cases}
    )


def _below(passed: int, scored: int, threshold: float) -> bool:
    return passed < threshold * scored - 1e-9


def _rate(passed: int, scored: int) -> str:
    return f"{passed}/{scored} = {passed / scored:.0%}"


def gate(
    report: Report,
    *,
    baseline: Report | None = None,
    thresholds: Thresholds | None = None,
    max_error_rate: float | None = None,
    confidence: float = 0.95,
    margin: float = 0.0,
) -> GateResult:
    """Decide whether ``report`` passes.

    Args:
        report: the report to judge.
        baseline: an earlier report to compare with.
        thresholds: the pass rates to require (default: the report's own, ``thresholds_of``);
            a case not in ``thresholds.cases`` gets ``thresholds.default``.
        max_error_rate: the share of runs that may be errors (default: the report's).
        confidence: the confidence of the baseline comparison as a whole.
        margin: drops smaller than this are never regressions.

    Raises:
        ValueError: ``confidence`` is not strictly between 0 and 1.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
    limits = thresholds if thresholds is not None else thresholds_of(report)
    error_limit = report.max_error_rate if max_error_rate is None else max_error_rate
    failures: list[str] = []
    notes: list[str] = []

    for case in report.cases:
        bar = limits.cases.get(case.name, limits.default)
        if case.scored == 0:
            failures.append(f"case {case.name}: no run could be scored ({case.errors} errors)")
        elif _below(case.passed, case.scored, bar):
            failures.append(f"case {case.name}: {_rate(case.passed, case.scored)} < {bar:.0%}")
    for tag, bar in sorted(limits.tags.items()):
        if not any(tag in case.tags for case in report.cases):
            continue
        passed, scored = report.tag_counts(tag)
        if scored == 0:
            failures.append(f"tag {tag}: no run could be scored")
        elif _below(passed, scored, bar):
            failures.append(f"tag {tag}: {_rate(passed, scored)} < {bar:.0%}")
    passed, scored = report.passed, report.passed + report.failed
    if limits.suite is not None and scored and _below(passed, scored, limits.suite):
        failures.append(f"suite: {_rate(passed, scored)} < {limits.suite:.0%}")
    if report.runs and report.errors > error_limit * report.runs + 1e-9:
        failures.append(
            f"errors: {report.errors} of {report.runs} runs (at most {error_limit:.0%})"
        )

    comparisons: list[Comparison] = []
    if baseline is not None:
        comparisons = _compare(report, baseline, confidence, margin)
        failures += [
            f"regression in {c.scope} {c.name}: {c.base_passed}/{c.base_scored} -> "
            f"{c.new_passed}/{c.new_scored} ({c.difference:+.0%}; interval {c.low:+.0%} to "
            f"{c.high:+.0%})"
            for c in comparisons
            if c.verdict == "regression"
        ]
        gone = [c.name for c in baseline.cases if report.case(c.name) is None]
        if gone:
            notes.append(f"cases in the baseline only: {', '.join(gone)}")
    return GateResult(
        passed=not failures,
        failures=failures,
        comparisons=comparisons,
        confidence=confidence,
        notes=notes,
    )


def _compare(
    report: Report, baseline: Report, confidence: float, margin: float
) -> list[Comparison]:
    pairs: list[tuple[Literal["case", "tag", "suite"], str, tuple[int, int], tuple[int, int]]] = []
    for case in report.cases:
        was = baseline.case(case.name)
        if was is not None and was.scored and case.scored:
            pairs.append(("case", case.name, (was.passed, was.scored), (case.passed, case.scored)))
    for tag in report.tags():
        new, old = report.tag_counts(tag), baseline.tag_counts(tag)
        if new[1] and old[1]:
            pairs.append(("tag", tag, old, new))
    new_suite = (report.passed, report.passed + report.failed)
    old_suite = (baseline.passed, baseline.passed + baseline.failed)
    if new_suite[1] and old_suite[1]:
        pairs.append(("suite", report.suite, old_suite, new_suite))
    if not pairs:
        return []
    # Bonferroni: every comparison at 1 - alpha/m keeps the chance of any false alarm <= alpha.
    each = 1.0 - (1.0 - confidence) / len(pairs)
    out: list[Comparison] = []
    for scope, name, (bp, bs), (np_, ns) in pairs:
        d, low, high = rate_difference(bp, bs, np_, ns, each)
        verdict: Verdict = "noise"
        if high < -margin:
            verdict = "regression"
        elif low > margin:
            verdict = "improvement"
        out.append(
            Comparison(
                scope=scope,
                name=name,
                base_passed=bp,
                base_scored=bs,
                new_passed=np_,
                new_scored=ns,
                difference=d,
                low=low,
                high=high,
                verdict=verdict,
            )
        )
    return out
