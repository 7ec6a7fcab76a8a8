"""Recorded workflow histories replay deterministically against the current code.

``histories/`` holds the histories of the scenarios the other tests run (recorded with
``AGENTLOOP_RECORD_HISTORIES=1``): tools, steering and follow-ups, approval, abort, and the two
runs whose worker was killed. Replaying one re-runs the workflow code (the loop included) in
Temporal's sandbox against the recorded events, without a server; a change that makes the
workflow issue other commands for the same history fails here, as it would fail every run in
flight during a deployment. (Each scenario test also replays its fresh history at once.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

from agentloop_temporal import WORKFLOW_NAME, AgentWorkflow, workflow_runner

pytestmark = pytest.mark.anyio

HISTORIES = Path(__file__).parent / "histories"
RECORDED = sorted(HISTORIES.glob("*.json"))


def _history(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(path.stem, path.read_text())


def test_every_scenario_has_a_recorded_history() -> None:
    assert [p.stem for p in RECORDED] == [
        "abort",
        "approval",
        "killed_during_model",
        "killed_during_tool",
        "steer_follow_up",
        "tools",
    ]


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
async def test_a_recorded_history_replays_against_the_current_code(path: Path) -> None:
    replayer = Replayer(workflows=[AgentWorkflow], workflow_runner=workflow_runner())
    result = await replayer.replay_workflow(_history(path))
    assert result.replay_failure is None


@workflow.defn(name=WORKFLOW_NAME, sandboxed=False)
class _SleepsFirst(AgentWorkflow):
    """The workflow changed so that it issues another command first (a timer)."""

    @workflow.run
    async def run(self, payload: dict[str, Any]) -> dict[str, Any]:
        await workflow.sleep(0.001)
        return await super().run(payload)


async def test_replay_catches_a_workflow_that_no_longer_matches_its_history() -> None:
    replayer = Replayer(workflows=[_SleepsFirst], workflow_runner=UnsandboxedWorkflowRunner())
    result = await replayer.replay_workflow(
        _history(HISTORIES / "tools.json"), raise_on_replay_failure=False
    )
    assert isinstance(result.replay_failure, workflow.NondeterminismError)
