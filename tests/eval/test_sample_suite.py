"""The sample suite in eval/suite, replayed offline from cassettes recorded against a real model
(SmolLM2-135M on llama_cpp.server): every run reproduces the recorded one exactly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import agentloop_eval
from agentloop_eval import Report, gate, load_report, load_suite, run_suite

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "eval" / "suite"
RECORDED = SUITE / "recorded.json"  # the report of the recording run


def by_run(report: Report) -> dict[tuple[str, int], agentloop_eval.RunResult]:
    return {(r.case, r.repeat): r for case in report.cases for r in case.runs}


@pytest.mark.anyio
async def test_replay_reproduces_the_recorded_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(model: str) -> object:
        raise AssertionError(f"a replay resolved {model}")

    monkeypatch.setattr("agentloop_eval._runner.resolve_model", offline)
    suite = load_suite(SUITE)
    replayed = await run_suite(suite, cassettes="replay")
    recorded = load_report(RECORDED)
    assert recorded.cassettes == "record" and replayed.errors == 0
    runs, was = by_run(replayed), by_run(recorded)
    assert runs.keys() == was.keys() and len(runs) == 13
    for key, run in runs.items():
        before = was[key]
        assert run.status == before.status, key
        assert run.checks == before.checks, key
        assert (run.tokens, run.turns, run.tool_calls) == (
            before.tokens,
            before.turns,
            before.tool_calls,
        )
        assert run.trajectory is not None and before.trajectory is not None
        assert run.trajectory.without_timing() == before.trajectory.without_timing(), key
    # What the cases exercise, as recorded: a tool call, a sub-agent's call, a sampled answer.
    weather = runs["weather", 0].trajectory
    assert weather is not None and weather.tool_names() == ["get_weather"]
    delegate = runs["delegate", 0].trajectory
    assert delegate is not None and delegate.tool_names(tree=True) == [
        "ask_forecaster",
        "get_weather",
    ]
    assert len({runs["greeting", i].trajectory.text for i in range(10)}) > 5  # type: ignore[union-attr]

    decision = gate(replayed, baseline=recorded)
    assert decision.passed, decision.summary()
    assert {c.verdict for c in decision.comparisons} == {"noise"}
    assert all(c.difference == 0 for c in decision.comparisons)


def test_the_command_replays_and_gates_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "agentloop_eval", "run", str(SUITE), "--cassettes", "replay",
            "--baseline", str(RECORDED), "--gate", "--junit", str(tmp_path / "junit.xml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "", "LLAMACPP_PYTHON_BASE_URL": "http://127.0.0.1:9/v1"},  # nothing to call
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "13 runs: 9 passed, 4 failed, 0 errors" in done.stdout
    assert done.stdout.endswith("gate: passed\n")
    assert (tmp_path / "junit.xml").read_text().count("<testcase ") == 4
