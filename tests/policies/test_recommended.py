"""RecommendedPolicies: the bundle, its knobs, and a real agent run with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop import Agent
from agentloop.loop import AgentLoopConfig
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from agentloop_policies import (
    DEFAULT_DENIED,
    Budget,
    LoopDetection,
    MaxTurns,
    RecommendedPolicies,
    Sandbox,
    ToolDenyList,
)

from ._helpers import MODEL, Recorder, real, tool_results

pytestmark = pytest.mark.anyio


def test_defaults() -> None:
    policies = RecommendedPolicies()
    assert isinstance(policies.max_turns, MaxTurns)
    assert isinstance(policies.budget, Budget)
    assert isinstance(policies.deny_list, ToolDenyList)
    assert isinstance(policies.sandbox, Sandbox)
    assert policies.sandbox.roots == (Path.cwd().resolve(),)
    assert policies.pre_turn_policies == [policies.max_turns, policies.budget]
    assert policies.pre_dispatch_policies == [policies.deny_list, policies.sandbox]
    assert policies.post_turn_policies == []
    assert policies.post_loop_policies == []
    assert set(policies.as_kwargs()) == {
        "pre_turn_policies",
        "pre_dispatch_policies",
        "post_turn_policies",
        "post_loop_policies",
    }
    assert "MaxTurns(25)" in repr(policies)


def test_parts_can_be_left_out_and_extended(tmp_path: Path) -> None:
    loop = LoopDetection()
    policies = RecommendedPolicies(
        roots=None,
        max_turns=None,
        max_tokens=None,
        max_cost=None,
        deny=None,
        extra_post_turn=[loop],
    )
    assert policies.pre_turn_policies == []
    assert policies.pre_dispatch_policies == []
    assert policies.post_turn_policies == [loop]
    only_tokens = RecommendedPolicies(roots=[tmp_path], max_cost=None)
    assert only_tokens.budget is not None
    assert only_tokens.budget.max_cost is None


def test_fields_plug_into_the_loop_config() -> None:
    policies = RecommendedPolicies()
    config = AgentLoopConfig(model=MODEL, stream_fn=ScriptedStream([]), **policies.as_kwargs())
    assert list(config.pre_dispatch_policies) == policies.pre_dispatch_policies


@pytest.mark.parametrize("name", ["bash", "Shell", "run_shell_command", "exec_js", "python"])
def test_default_deny_list_covers_shells(name: str) -> None:
    assert ToolDenyList(DEFAULT_DENIED)._patterns.matches(name)


async def test_an_agent_with_the_recommended_set(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    bash, read = Recorder("bash"), Recorder("read_file", reply="hello")
    policies = RecommendedPolicies(roots=[tmp_path], max_turns=2)
    script = [
        reply_tool_calls(("bash", {"text": "cat ~/.aws/credentials"})),
        reply_tool_calls(
            ("read_file", {"path": "../../etc/passwd"}), ("read_file", {"path": "notes.txt"})
        ),
        reply_tool_calls(("read_file", {"path": "notes.txt"})),
        reply_text("never reached"),
    ]
    stream = ScriptedStream(script)
    agent = Agent(model=MODEL, stream_fn=stream, tools=[bash, read], **policies.as_kwargs())
    result = await agent.prompt("summarise my notes")
    assert bash.ran == []
    assert read.ran == [{"path": real(tmp_path, "notes.txt")}]
    denied, escaped, fine = tool_results(result)
    assert "blocked by policy" in denied.text
    assert "outside the allowed directories" in escaped.text
    assert fine.text == "hello"
    assert len(stream.calls) == 2
    assert result.stopped_by == "MaxTurns: turn limit reached (2 turns)"
