"""The view model alone, fed by real runs of the agent: no terminal, no widgets."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

import agentloop as al
from agentloop.context import estimate_tokens
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from agentloop_coding import coding_tools
from agentloop_tui import ContextGauge, Conversation, Status
from agentloop_tui._status import gauge_colour

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

SPEC = al.ModelSpec(provider="scripted", model_id="demo", context_window=1000)


def _agent(tmp_path: Path, script: list[al.AssistantMessage]) -> al.Agent[str]:
    return al.Agent(
        model=SPEC, stream_fn=ScriptedStream(script, chunk_size=3), tools=coding_tools(tmp_path)
    )


async def test_a_run_becomes_entries_and_a_status(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    thinking = al.AssistantMessage(
        content=[
            al.Thinking(thinking="Let me look."),
            al.Text(text="I will read it."),
            al.ToolCall(id="c1", name="read_file", arguments={"path": "a.txt"}),
        ],
        stop_reason=al.StopReason.TOOL_USE,
        usage=al.Usage(input=10, output=5),
    )
    agent = _agent(tmp_path, [thinking, reply_text("It says **alpha**.")])
    view = Conversation(title=lambda name, args: f"{name} {args.get('path')}")
    agent.subscribe(view.feed)
    await agent.prompt("what is in a.txt?")

    kinds = [entry.kind for entry in view.entries]
    assert kinds == ["user", "assistant", "tool", "assistant"]
    first = view.entries[1]
    assert [p.kind for p in first.parts] == ["thinking", "text"]  # type: ignore[union-attr]
    assert first.parts[0].collapsed and first.parts[0].text == "Let me look."  # type: ignore[union-attr]
    tool = view.entries[2]
    assert tool.title == "read_file a.txt" and tool.status == "done"  # type: ignore[union-attr]
    assert "alpha" in tool.summary  # type: ignore[union-attr]
    assert view.entries[3].text == "It says **alpha**."  # type: ignore[union-attr]
    assert view.status.state == "idle" and view.status.usage.input == 10


async def test_edits_carry_their_diff_and_errors_their_status(tmp_path: Path) -> None:
    edit = reply_tool_calls(("write_file", {"path": "n.py", "content": "x = 1\n"}))
    bad = reply_tool_calls(("read_file", {"path": "missing.py"}))
    agent = _agent(tmp_path, [edit, bad, reply_text("ok")])
    view = Conversation()
    agent.subscribe(view.feed)
    await agent.prompt("go")
    written, failed = view.tool_entries()
    assert written.diff is not None and "+x = 1" in written.diff
    assert failed.status == "error" and "does not exist" in failed.summary


async def test_tool_blocks_fold_three_seconds_after_they_end(tmp_path: Path) -> None:
    now = [100.0]
    agent = _agent(tmp_path, [reply_tool_calls(("list_dir", {})), reply_text("ok")])
    view = Conversation(clock=lambda: now[0])
    agent.subscribe(view.feed)
    await agent.prompt("go")
    (block,) = view.tool_entries()
    assert block.expanded and block.collapse_at == 103.0
    now[0] = 102.9
    assert view.tick() == [] and block.expanded
    now[0] = 103.0
    assert view.tick() == [block] and not block.expanded


async def test_selection_cycles_and_f2_toggles(tmp_path: Path) -> None:
    calls = reply_tool_calls(("list_dir", {}), ("glob", {"pattern": "*"}), ("list_dir", {}))
    agent = _agent(tmp_path, [calls, reply_text("ok")])
    view = Conversation(auto_collapse=None)
    agent.subscribe(view.feed)
    await agent.prompt("go")
    tools = view.tool_entries()
    assert view.select_tool(-1) is tools[2]
    assert view.select_tool(-1) is tools[1]
    assert view.select_tool(1) is tools[2]
    assert view.select_tool(1) is tools[0]  # wraps
    assert view.toggle_tool() is tools[0] and not tools[0].expanded
    assert view.toggle_tool() is tools[0] and tools[0].expanded


async def test_an_aborted_run_shows_aborted(tmp_path: Path) -> None:
    view = Conversation()

    async def slow(context: object) -> al.AssistantMessage:
        view.request_abort()
        agent.abort()
        await anyio.sleep_forever()
        raise AssertionError

    agent = al.Agent(model=SPEC, stream_fn=al.testing.FunctionStream(slow))
    agent.subscribe(view.feed)
    result = await agent.prompt("go", raise_on_error=False)
    assert result.stop_reason is al.StopReason.ABORTED
    assert view.status.state == "aborted"


@pytest.mark.parametrize(
    ("fraction", "colour"),
    [(0.0, "green"), (0.59, "green"), (0.60, "yellow"), (0.85, "yellow"), (0.851, "red")],
)
def test_gauge_colours(fraction: float, colour: str) -> None:
    assert gauge_colour(fraction) == colour
    status = Status()
    status.set_context(int(fraction * 10_000), 10_000)
    assert status.gauge == gauge_colour(int(fraction * 10_000) / 10_000)


def test_the_gauge_counts_like_the_sliding_window_and_each_message_once() -> None:
    counted: list[object] = []

    class Counting(al.context.EstimatingCounter):
        def count(self, message: al.AgentMessage) -> int:
            counted.append(message)
            return super().count(message)

    gauge = ContextGauge(Counting())
    history: list[al.AgentMessage] = [al.UserMessage.from_text("hello " * 50)]
    assert gauge.update(history, "sys") == estimate_tokens(history, system_prompt="sys")
    history.append(reply_text("answer " * 30))
    assert gauge.update(history, "sys") == estimate_tokens(history, system_prompt="sys")
    assert len(counted) == 2  # the first message was not counted again
    compacted = history[1:]  # not a growth of what was counted: counted afresh
    assert gauge.update(compacted, "sys") == estimate_tokens(compacted, system_prompt="sys")
