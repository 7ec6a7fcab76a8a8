"""AuditLogger: the JSON lines a real run leaves behind."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import pytest

from agentloop import Agent, AgentTool, ToolCall, Usage
from agentloop.policy import ApprovalDecision, ApprovedWith, Rejected, Skip
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from agentloop_policies import AuditLogger, MaxTurns, PiiRedactor, ToolDenyList, WatchedPolicy

from ._helpers import MODEL, Recorder, dispatch_ctx, policy_ctx, run

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_run_is_logged_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    read, bash = Recorder("read", reply="x" * 1_000), Recorder("bash")
    script = [
        reply_tool_calls(("read", {"path": "a"}), ("bash", {"text": "ls"}), usage=Usage(input=7)),
        reply_text("done", usage=Usage(input=9, output=2)),
    ]
    with AuditLogger(path, max_text=10) as audit:
        result, _ = await run(
            script,
            tools=[read, bash],
            on_event=audit,
            pre_dispatch_policies=[audit.watch(ToolDenyList("bash"))],
        )
    assert result.text == "done"
    lines = read_lines(path)
    kinds = [line["type"] for line in lines]
    assert kinds[0] == "run_start"
    assert kinds[-1] == "run_end"
    assert kinds.count("model_call") == 2
    assert kinds.count("tool_call") == 2
    assert kinds.count("verdict") == 1
    assert all(line["run"] == 1 and line["at"].endswith("+00:00") for line in lines)

    first_model = next(line for line in lines if line["type"] == "model_call")
    assert first_model["turn"] == 0
    assert first_model["tool_calls"] == ["read", "bash"]
    assert first_model["usage"]["input"] == 7
    assert first_model["duration_ms"] >= 0
    assert first_model["stop_reason"] == "tool_use"

    verdict = next(line for line in lines if line["type"] == "verdict")
    assert verdict["policy"] == "ToolDenyList"
    assert verdict["verdict"] == "skip"
    assert verdict["tool"] == "bash"
    assert "blocked by policy" in verdict["reason"]

    tools = {line["tool"]: line for line in lines if line["type"] == "tool_call"}
    assert tools["read"]["is_error"] is False
    assert tools["read"]["arguments"] == {"path": "a"}
    assert tools["read"]["result"] == "x" * 10 + "..."
    assert tools["read"]["duration_ms"] >= 0
    assert tools["read"]["verdicts"] == []
    assert tools["bash"]["is_error"] is True
    assert [v["verdict"] for v in tools["bash"]["verdicts"]] == ["skip"]
    assert lines[-1]["messages"] == len(result.messages)


async def test_approval_decisions_and_turn_verdicts_are_logged() -> None:
    records: list[dict[str, Any]] = []
    audit = AuditLogger(records.append, include_arguments=False)

    async def approve(call: ToolCall, tool: AgentTool | None) -> ApprovalDecision:
        if call.arguments.get("text") == "bad":
            return Rejected(reason="not today")
        return ApprovedWith(arguments={"text": "safer"})

    echo = Recorder("echo")
    script = [
        reply_tool_calls(("echo", {"text": "bad"}), ("echo", {"text": "fine"})),
        reply_tool_calls(("echo", {"text": "again"})),
    ]
    result, _ = await run(
        script,
        tools=[echo],
        on_event=audit,
        approval=audit.watch_approval(approve),
        pre_turn_policies=[audit.watch(MaxTurns(1))],
    )
    assert echo.ran == [{"text": "safer"}]
    verdicts = [r for r in records if r["type"] == "verdict"]
    assert [(v["policy"], v["verdict"]) for v in verdicts] == [
        ("approval", "rejected"),
        ("approval", "approved_with"),
        ("MaxTurns", "stop"),
    ]
    assert all("arguments" not in v for v in verdicts)
    assert verdicts[2]["turn"] == 1
    assert all(r.get("arguments") is None for r in records if r["type"] == "tool_call")
    assert result.stopped_by == "MaxTurns: turn limit reached (1 turns)"


def test_watched_policy_keeps_name_and_verdict() -> None:
    records: list[dict[str, Any]] = []
    audit = AuditLogger(records.append)
    deny = ToolDenyList("x")
    watched = audit.watch(deny)
    assert isinstance(watched, WatchedPolicy)
    assert watched.name == "ToolDenyList"
    verdict = watched.evaluate(dispatch_ctx("x"))
    assert isinstance(verdict, Skip)
    assert records[0]["call_id"] == "c1"
    watched.evaluate(dispatch_ctx("y"))
    assert len(records) == 1  # an Allow is not worth a line


def test_watched_policy_that_raises_is_logged_and_reraised() -> None:
    records: list[dict[str, Any]] = []

    class Broken:
        def evaluate(self, ctx: Any) -> Any:
            raise RuntimeError("boom")

    watched = AuditLogger(records.append).watch(Broken())
    with pytest.raises(RuntimeError):
        watched.evaluate(policy_ctx(turn=2))
    assert records[0]["verdict"] == "raised"
    assert records[0]["turn"] == 2
    assert "boom" in records[0]["reason"]


def test_a_failing_sink_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    def sink(record: dict[str, Any]) -> None:
        raise OSError("disk full")

    with caplog.at_level(logging.ERROR, logger="agentloop.policies.audit"):
        AuditLogger(sink).write({"type": "x"})
    assert "disk full" in caplog.text


def test_file_sink_appends_and_closes(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"type": "old"}\n')
    audit = AuditLogger(str(path))
    audit.write({"type": "new", "value": object()})  # unencodable values fall back to repr
    audit.close()
    audit.close()
    lines = read_lines(path)
    assert [line["type"] for line in lines] == ["old", "new"]
    assert lines[1]["value"].startswith("<object")


async def test_an_agent_subscriber_numbers_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    stream = ScriptedStream([reply_tool_calls(("echo", {})), reply_text("one"), reply_text("two")])
    with AuditLogger(path) as audit:
        agent = Agent(model=MODEL, stream_fn=stream, tools=[Recorder("echo")])
        agent.subscribe(audit)
        await agent.prompt("first")
        await agent.prompt("second")
    lines = read_lines(path)
    assert [(line["run"], line["type"]) for line in lines] == [
        (1, "run_start"),
        (1, "model_call"),
        (1, "tool_call"),
        (1, "model_call"),
        (1, "run_end"),
        (2, "run_start"),
        (2, "model_call"),
        (2, "run_end"),
    ]
    assert [line["turn"] for line in lines if line["type"] == "model_call"] == [0, 1, 0]


async def test_results_can_be_redacted_before_logging() -> None:
    records: list[dict[str, Any]] = []
    audit = AuditLogger(records.append, redact=PiiRedactor().redact)
    script = [reply_tool_calls(("lookup", {})), reply_text("ok")]
    await run(script, tools=[Recorder("lookup", reply="ann@example.com")], on_event=audit)
    (line,) = [r for r in records if r["type"] == "tool_call"]
    assert line["result"] == "[REDACTED:email]"
