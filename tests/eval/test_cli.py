"""``python -m agentloop_eval`` and ``agentloop eval``: run, report, gate, and exit codes."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

import pytest

from agentloop_cli import main as agentloop_main
from agentloop_eval import load_report, main

if TYPE_CHECKING:
    from pathlib import Path

# The suite's registry brings its own fake provider: answers "Paris" unless asked about Lyon.
REGISTRY = """
import agentloop as al
from agentloop.models import ResolvedModel, register_provider
from agentloop.testing import FunctionStream, reply_text
from agentloop_eval import Registry

def answer(context):
    asked = context.messages[-1].text
    return reply_text("I do not know." if "Lyon" in asked else "It is Paris.")

def factory(model_id):
    return ResolvedModel(al.ModelSpec(provider="clitest", model_id=model_id), FunctionStream(answer))

register_provider("clitest", factory, replace=True)
registry = Registry()
"""

CASES = """
- {name: paris, prompt: Capital of France?, tags: [geo], criteria: {contains: [Paris]}}
- {name: lyon, prompt: Weather in Lyon?, tags: [weather], repeats: 2, threshold: 0.0,
   criteria: {contains: [Sunny]}}
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    (root / "cases").mkdir(parents=True)
    (root / "cases" / "cases.yaml").write_text(textwrap.dedent(CASES))
    (root / "registry.py").write_text(REGISTRY)
    (root / "suite.yaml").write_text("name: cli\nmodel: clitest:m\nregistry: registry.py\n")
    return root


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_run_record_then_replay_and_gate(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "run", str(suite), "--cassettes", "record", "--backend", backend,
            "--json", str(out / "r.json"), "--junit", str(out / "j.xml"), "--markdown", str(out / "m.md"),
        ]
    )  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "suite cli (cassettes: record)" in printed.out
    assert "3 runs: 1 passed, 2 failed, 0 errors" in printed.out
    assert sorted(printed.err.strip()) == [".", "F", "F"]  # progress marks
    report = load_report(out / "r.json")
    assert [c.name for c in report.cases] == ["paris", "lyon"]
    assert report.cases[0].runs[0].trajectory is not None
    assert ET.parse(out / "j.xml").getroot()[0].get("tests") == "2"
    assert (out / "m.md").read_text().startswith("## Eval: cli")
    assert sorted(p.name for p in (suite / "cassettes").iterdir()) == ["lyon.jsonl", "paris.jsonl"]

    code = main(["run", str(suite), "--cassettes", "replay", "--gate", "-q", "--backend", backend])
    printed = capsys.readouterr()
    assert code == 0 and printed.out.endswith("gate: passed\n") and printed.err == ""


def test_gate_and_report_on_saved_reports(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    assert main(["run", str(suite), "-q", "--json", str(report), "--no-trajectories"]) == 0
    assert load_report(report).cases[0].runs[0].trajectory is None
    capsys.readouterr()

    assert main(["gate", str(report)]) == 0
    assert capsys.readouterr().out == "gate: passed\n"
    assert main(["gate", str(report), "--threshold", "1"]) == 1
    assert capsys.readouterr().out == "gate: FAILED\n  - case lyon: 0/2 = 0% < 100%\n"
    assert main(["gate", str(report), "--tag-threshold", "weather=0.5"]) == 1
    assert (
        main(["gate", str(report), "--case-threshold", "lyon=0", "--suite-threshold", "0.3"]) == 0
    )
    assert (
        main(
            ["gate", str(report), "--suite-threshold", "0.5", "--markdown", str(tmp_path / "g.md")]
        )
        == 1
    )
    assert "**Gate: FAILED**" in (tmp_path / "g.md").read_text()
    # Against itself as the baseline: nothing changed.
    capsys.readouterr()
    assert main(["gate", str(report), "--baseline", str(report)]) == 0
    assert capsys.readouterr().out == "gate: passed\n"

    for form, start in [("table", "suite cli"), ("markdown", "## Eval: cli"), ("junit", "<?xml")]:
        assert main(["report", str(report), "--format", form]) == 0
        assert capsys.readouterr().out.startswith(start)
    assert main(["report", str(report), "--format", "json", "-o", str(tmp_path / "copy.json")]) == 0
    assert json.loads((tmp_path / "copy.json").read_text())["suite"] == "cli"


def test_selection_and_usage_errors(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(suite), "-q", "-t", "geo"]) == 0
    assert "1 runs: 1 passed" in capsys.readouterr().out
    assert main(["run", str(suite), "-q", "-k", "lyon", "--gate", "--max-error-rate", "0.1"]) == 0
    capsys.readouterr()
    for argv, message in [
        (["run", str(suite), "-k", "nope"], "error: no case selected"),
        (["run", str(tmp_path / "none")], "error: no suite at"),
        (["run", str(tmp_path)], "error: no suite.yaml or suite.yml"),
        (["gate", str(tmp_path / "none.json")], "error: cannot read"),
        (["gate", str(suite / "suite.yaml")], "not a report"),
        (["run", str(suite), "--cassettes", "replay", "--gate", "--confidence", "2"], "confidence"),
        (["gate", "r.json", "--case-threshold", "lyon"], "expected NAME=RATE"),
        (["gate", "r.json", "--threshold", "1.5"], "is not between 0 and 1"),
        (["frobnicate"], "invalid choice"),
    ]:
        assert main(argv) == 2, argv
        assert message in capsys.readouterr().err, argv
    assert main(["--help"]) == 0
    assert "gate      exit 1 unless a report passes" in capsys.readouterr().out


def test_the_agentloop_command_hands_eval_over(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "r.json"
    assert agentloop_main(["eval", "run", str(suite), "-q", "--json", str(report)]) == 0
    assert "suite cli" in capsys.readouterr().out
    assert agentloop_main(["eval", "gate", str(report), "--threshold", "1"]) == 1
    assert agentloop_main(["eval", "frobnicate"]) == 2
    assert "usage: agentloop eval" in capsys.readouterr().err
    # Without its extra, the command names it: tests/test_missing_extras.py.
