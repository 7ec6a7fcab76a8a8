"""Reports for people and for CI: a console table, Markdown (a pull-request comment, a job
summary) and JUnit XML (what CI systems show as test results). JSON is the report itself
(``save_report``).

In JUnit XML each case is one test case: it fails when its pass rate is below its threshold,
and is an error when none of its runs could be scored; each run's outcome is in its output.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._gate import GateResult
    from ._report import CaseResult, Report, RunResult

__all__ = ["render_junit", "render_markdown", "render_table"]

_HEADERS = (
    "case",
    "runs",
    "pass",
    "fail",
    "err",
    "rate",
    "pass@k",
    "turns",
    "tokens",
    "cost",
    "time",
)


def _rate(case: CaseResult) -> str:
    rate = case.pass_rate
    return "-" if rate is None else f"{rate:.0%}"


def _at(case: CaseResult, k: int) -> str:
    value = case.pass_at(k)
    return "-" if value is None else f"{value:.2f}"


def _row(case: CaseResult, k: int) -> list[str]:
    return [
        case.name,
        str(len(case.runs)),
        str(case.passed),
        str(case.failed),
        str(case.errors),
        _rate(case),
        _at(case, k),
        f"{case.mean('turns'):.1f}",
        f"{case.mean('tokens'):.0f}",
        f"{case.mean('cost'):.4f}",
        f"{case.mean('duration'):.2f}s",
    ]


def _meets(case: CaseResult) -> bool:
    return case.scored > 0 and case.passed >= case.threshold * case.scored - 1e-9


def _problems(run: RunResult) -> str:
    if run.status == "error":
        return run.error or ""
    failing = [c for c in run.checks if not c.passed]
    return "; ".join(f"{c.name}: {c.detail}" if c.detail else c.name for c in failing)


def _total(report: Report) -> str:
    rate = report.pass_rate
    shown = "-" if rate is None else f"{rate:.0%}"
    return (
        f"{report.runs} runs: {report.passed} passed, {report.failed} failed, "
        f"{report.errors} errors; pass rate {shown}; {report.duration:.1f}s"
    )


def render_table(report: Report, *, k: int = 3, failures: int = 20) -> str:
    """The report as a plain-text table, then up to ``failures`` failed or errored runs.

    ``pass@k`` is shown for cases with at least ``k`` scored runs; means are over the runs that
    were not errors.
    """
    header = [*_HEADERS[:6], f"pass@{k}", *_HEADERS[7:], "need"]
    rows = [header] + [
        [*_row(case, k), f"{case.threshold:.0%} {'ok' if _meets(case) else 'BELOW'}"]
        for case in report.cases
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [f"suite {report.suite} (cassettes: {report.cassettes})"]
    for index, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append(_total(report))
    bad = [r for case in report.cases for r in case.runs if r.status != "passed"]
    for run in bad[:failures]:
        lines.append(f"  {run.case}[{run.repeat}] {run.status}: {_problems(run)}")
    if len(bad) > failures:
        lines.append(f"  ... and {len(bad) - failures} more")
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report, *, gate: GateResult | None = None, k: int = 3) -> str:
    """The report as Markdown: a summary, a table of cases, the failures, and the gate's
    decision when given."""
    lines = [
        f"## Eval: {report.suite}",
        "",
        _total(report) + f" (cassettes: {report.cassettes})",
        "",
    ]
    if gate is not None:
        lines += [f"**Gate: {'passed' if gate.passed else 'FAILED'}**", ""]
        lines += [f"- {_md(failure)}" for failure in gate.failures]
        for c in gate.comparisons:
            if c.verdict != "noise":
                lines.append(
                    f"- {c.verdict}: {c.scope} `{c.name}` {c.base_passed}/{c.base_scored} → "
                    f"{c.new_passed}/{c.new_scored} ({c.difference:+.0%}, {c.low:+.0%} to "
                    f"{c.high:+.0%})"
                )
        lines.append("")
    headers = [*_HEADERS[:6], f"pass@{k}", *_HEADERS[7:], "threshold", ""]
    lines.append("| " + " | ".join(headers) + " |")
    lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|")
    for case in report.cases:
        row = _row(case, k)
        row[0] = f"`{_md(case.name)}`"
        mark = "✅" if _meets(case) else "❌"
        lines.append("| " + " | ".join([*row, f"{case.threshold:.0%}", mark]) + " |")
    bad = [r for case in report.cases for r in case.runs if r.status != "passed"]
    if bad:
        lines += ["", "### Failures", ""]
        lines += [f"- `{r.case}[{r.repeat}]` {r.status}: {_md(_problems(r))}" for r in bad]
    return "\n".join(lines) + "\n"


def render_junit(report: Report) -> str:
    """The report as JUnit XML: one test suite, one test case per eval case."""
    failing = sum(1 for c in report.cases if c.scored and not _meets(c))
    erring = sum(1 for c in report.cases if not c.scored)
    root = ET.Element("testsuites", name="agentloop eval")
    suite = ET.SubElement(
        root,
        "testsuite",
        name=report.suite,
        tests=str(len(report.cases)),
        failures=str(failing),
        errors=str(erring),
        skipped="0",
        time=f"{report.duration:.3f}",
    )
    if report.created:
        suite.set("timestamp", report.created)
    for case in report.cases:
        element = ET.SubElement(
            suite,
            "testcase",
            classname=report.suite,
            name=case.name,
            time=f"{sum(r.duration for r in case.runs):.3f}",
        )
        properties = ET.SubElement(element, "properties")
        values = {
            "pass_rate": _rate(case),
            "threshold": f"{case.threshold:.2f}",
            "passed": case.passed,
            "failed": case.failed,
            "errors": case.errors,
            "tags": ",".join(case.tags),
        }
        for name, value in values.items():
            ET.SubElement(properties, "property", name=name, value=str(value))
        details = "\n".join(
            f"[{r.repeat}] {r.status}" + (f": {_problems(r)}" if r.status != "passed" else "")
            for r in case.runs
        )
        if not case.scored:
            error = ET.SubElement(
                element, "error", message=f"no run could be scored ({case.errors} errors)"
            )
            error.text = details
        elif not _meets(case):
            message = f"pass rate {case.passed}/{case.scored} below {case.threshold:.0%}"
            failure = ET.SubElement(element, "failure", message=message)
            failure.text = details
        ET.SubElement(element, "system-out").text = details
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
