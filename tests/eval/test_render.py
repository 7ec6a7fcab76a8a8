"""Reports for people and CI: the console table, Markdown and JUnit XML; JSON round-trips."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from agentloop_eval import (
    CaseResult,
    Check,
    Report,
    RunResult,
    Trajectory,
    gate,
    load_report,
    render_junit,
    render_markdown,
    render_table,
    save_report,
)

if TYPE_CHECKING:
    from pathlib import Path

MISS = Check(name="contains 'Paris'", passed=False, detail="not in 'Lyon'")


def sample() -> Report:
    good = [
        RunResult(
            case="good", repeat=i, status="passed", tokens=100 + i, cost=0.01, turns=2, duration=1.0
        )
        for i in range(3)
    ]
    mixed = [
        RunResult(case="mixed", repeat=0, status="passed", tokens=50, turns=1, duration=0.5),
        RunResult(case="mixed", repeat=1, status="failed", checks=[MISS], tokens=70, turns=1),
        RunResult(case="mixed", repeat=2, status="error", error="timed out after 5s"),
    ]
    broken = [RunResult(case="broken", repeat=0, status="error", error="cassette miss: x")]
    return Report(
        suite="demo",
        created="2025-01-01T00:00:00+00:00",
        duration=2.5,
        cases=[
            CaseResult(name="good", runs=good, tags=["smoke"]),
            CaseResult(name="mixed", runs=mixed, threshold=0.5),
            CaseResult(name="broken", runs=broken),
        ],
    )


def test_the_console_table() -> None:
    text = render_table(sample(), k=2)
    lines = text.splitlines()
    assert lines[0] == "suite demo (cassettes: off)"
    assert lines[1].split() == [
        "case", "runs", "pass", "fail", "err", "rate", "pass@2", "turns", "tokens", "cost", "time", "need",
    ]  # fmt: skip
    assert lines[3].split() == [
        "good",
        "3",
        "3",
        "0",
        "0",
        "100%",
        "1.00",
        "2.0",
        "101",
        "0.0100",
        "1.00s",
        "100%",
        "ok",
    ]
    assert lines[4].split() == [
        "mixed",
        "3",
        "1",
        "1",
        "1",
        "50%",
        "1.00",
        "1.0",
        "60",
        "0.0000",
        "0.25s",
        "50%",
        "ok",
    ]
    assert lines[5].split()[:7] == ["broken", "1", "0", "0", "1", "-", "-"] and lines[5].endswith(
        "BELOW"
    )
    assert lines[6] == "7 runs: 4 passed, 1 failed, 2 errors; pass rate 80%; 2.5s"
    assert lines[7:] == [
        "  mixed[1] failed: contains 'Paris': not in 'Lyon'",
        "  mixed[2] error: timed out after 5s",
        "  broken[0] error: cassette miss: x",
    ]
    assert render_table(sample(), failures=1).splitlines()[-1] == "  ... and 2 more"


def test_markdown_with_the_gates_decision() -> None:
    report = sample()
    text = render_markdown(report, gate=gate(report, max_error_rate=1.0))
    assert text.startswith("## Eval: demo\n\n7 runs: 4 passed, 1 failed, 2 errors")
    assert "**Gate: FAILED**\n\n- case broken: no run could be scored (1 errors)\n" in text
    assert (
        "| `good` | 3 | 3 | 0 | 0 | 100% | 1.00 | 2.0 | 101 | 0.0100 | 1.00s | 100% | ✅ |" in text
    )
    assert "| `broken` | 1 | 0 | 0 | 1 | - | - |" in text and text.count("❌") == 1
    assert "- `mixed[1]` failed: contains 'Paris': not in 'Lyon'" in text


def test_junit_xml() -> None:
    root = ET.fromstring(render_junit(sample()))
    [suite] = root
    assert suite.get("name") == "demo" and suite.get("timestamp") == "2025-01-01T00:00:00+00:00"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "0", "1")
    good, mixed, broken = suite.findall("testcase")
    assert good.find("failure") is None and good.find("error") is None
    assert good.get("time") == "3.000"
    props = {p.get("name"): p.get("value") for p in good.iter("property")}
    assert props == {
        "pass_rate": "100%",
        "threshold": "1.00",
        "passed": "3",
        "failed": "0",
        "errors": "0",
        "tags": "smoke",
    }
    assert mixed.find("failure") is None  # 1 of 2 scored runs meets its threshold of 50%
    assert "[1] failed: contains 'Paris'" in (mixed.findtext("system-out") or "")
    error = broken.find("error")
    assert error is not None and error.get("message") == "no run could be scored (1 errors)"
    below = CaseResult(
        name="below", runs=[RunResult(case="below", repeat=0, status="failed", checks=[MISS])]
    )
    [case] = ET.fromstring(render_junit(Report(suite="s", cases=[below])))[0].findall("testcase")
    failure = case.find("failure")
    assert failure is not None and failure.get("message") == "pass rate 0/1 below 100%"


def test_json_round_trip(tmp_path: Path) -> None:
    report = sample()
    runs = [*report.cases[0].runs]
    runs[0] = RunResult(
        case="good", repeat=0, status="passed", trajectory=Trajectory(prompt="p", text="t")
    )
    report.cases[0].runs[:] = runs
    save_report(report, tmp_path / "out" / "report.json")
    again = load_report(tmp_path / "out" / "report.json")
    assert again == report
    assert again.without_trajectories().cases[0].runs[0].trajectory is None
