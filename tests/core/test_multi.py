"""Agents of agents (``agentloop.multi``): sub-agents as tools, teams, registries, pipelines."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest

import agentloop as al
from agentloop import multi
from agentloop.policy import APPROVED, Rejected
from agentloop.testing import FunctionStream, reply_text

from ._helpers import MODEL, agent, calls, paired, text

pytestmark = pytest.mark.anyio


# ---------------------------------------------------------------- sub-agents as tools


async def test_a_sub_agent_answers_and_its_events_are_relayed_with_a_path() -> None:
    @al.tool
    async def search(q: str) -> str:
        """Search."""
        return f"found {q}"

    researcher = agent(
        "researcher", [calls(("search", {"q": "cats"})), text("Cats purr.")], tools=[search]
    )
    planner = agent(
        "planner",
        [calls(("research", {"task": "what do cats do?"})), text("Done: cats purr.")],
        tools=[researcher.as_tool(name="research", description="Researches a question.")],
    )
    seen: list[al.AgentEvent] = []
    planner.subscribe(seen.append)
    result = await planner.prompt("plan")
    assert result.output == "Done: cats purr."
    [tool_result] = [m for m in result.messages if isinstance(m, al.ToolResultMessage)]
    assert tool_result.text == "Cats purr."
    hop = multi.Hop(call_id="call_1", agent="researcher")
    start = next(e for e in seen if isinstance(e, multi.DelegationStart))
    end = next(e for e in seen if isinstance(e, multi.DelegationEnd))
    assert start.path == [hop] and start.prompt == "what do cats do?"
    assert end.path == [hop] and end.stop_reason is al.StopReason.STOP
    inner = [e for e in seen if isinstance(e, multi.SubAgentEvent)]
    assert {tuple(e.path) for e in inner} == {(hop,)}
    kinds = [type(e.event).__name__ for e in inner]
    assert kinds[0] == "AgentStart" and kinds[-1] == "AgentEnd"
    assert "ToolExecutionStart" in kinds and "ToolExecutionEnd" in kinds
    # Delegation events sit inside the parent's tool execution, in order.
    order = [type(e).__name__ for e in seen]
    assert order.index("ToolExecutionStart") < order.index("DelegationStart")
    assert order.index("DelegationEnd") < order.index("ToolExecutionEnd")
    # Usage rolls up: the planner's two answers and the researcher's two.
    assert result.usage.total == 4 * 20
    assert end.usage.total == 2 * 20
    assert [type(m).__name__ for m in end.messages][0] == "UserMessage"


async def test_nested_sub_agents_get_flat_paths_and_total_usage() -> None:
    leaf = agent("leaf", [text("leaf answer", 1)])
    middle = agent(
        "middle",
        [calls(("leaf", {"task": "go deeper"}), tokens=2), text("middle answer", 2)],
        tools=[leaf.as_tool(description="The leaf.")],
    )
    top = agent(
        "top",
        [calls(("middle", {"task": "go"}), tokens=4), text("top answer", 4)],
        tools=[middle.as_tool(description="The middle.")],
    )
    seen: list[al.AgentEvent] = []
    top.subscribe(seen.append)
    result = await top.prompt("start")
    paths = {
        tuple(h.agent for h in e.path)
        for e in seen
        if isinstance(e, multi.SubAgentEvent | multi.DelegationStart)
    }
    assert paths == {("middle",), ("middle", "leaf")}
    assert all(
        not isinstance(e.event, multi.SubAgentEvent)
        for e in seen
        if isinstance(e, multi.SubAgentEvent)
    )
    assert result.usage.total == (8 + 8) + (4 + 4) + 2  # top, middle, leaf


async def test_parallel_calls_get_fresh_agents_from_a_factory() -> None:
    made: list[str] = []

    def worker() -> al.Agent[Any]:
        made.append("w")
        return agent("worker", [text(f"worker {len(made)}")])

    tool = multi.SubAgentTool(worker, name="work", description="Does work.")
    boss = agent(
        "boss",
        [calls(("work", {"task": "a"}), ("work", {"task": "b"})), text("both done")],
        tools=[tool],
    )
    result = await boss.prompt("split it")
    texts = sorted(m.text for m in result.messages if isinstance(m, al.ToolResultMessage))
    assert texts == ["worker 1", "worker 2"]
    assert len(made) == 2


async def test_a_shared_agent_refuses_a_second_concurrent_call() -> None:
    gate = anyio.Event()

    @al.tool
    async def wait() -> str:
        """Wait for the gate."""
        await gate.wait()
        return "waited"

    shared = agent("shared", [calls(("wait", {})), text("first")], tools=[wait])
    tool = shared.as_tool(description="Shared.")

    @al.tool
    async def open_gate() -> str:
        """Open the gate once both calls started."""
        await anyio.lowlevel.checkpoint()
        gate.set()
        return "opened"

    boss = agent(
        "boss",
        [
            calls(("shared", {"task": "1"}), ("shared", {"task": "2"}), ("open_gate", {})),
            text("ok"),
        ],
        tools=[tool, open_gate],
    )
    result = await boss.prompt("go")
    first, second = [m for m in result.messages if isinstance(m, al.ToolResultMessage)][:2]
    # Whichever call claimed the agent ran it; the other was refused.
    assert sorted([first.text, second.text])[1] == "first"
    busy = first if first.is_error else second
    assert busy.is_error and "busy" in busy.text


async def test_aborting_the_parent_cancels_the_child_and_keeps_its_transcript() -> None:
    started = anyio.Event()

    @al.tool
    async def forever() -> str:
        """Never ends."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    child = agent("child", [calls(("forever", {}), tokens=3)], tools=[forever])
    parent = agent(
        "parent", [calls(("child", {"task": "x"}))], tools=[child.as_tool(description="c")]
    )
    seen: list[al.AgentEvent] = []
    parent.subscribe(seen.append)

    async def abort_when_started() -> None:
        await started.wait()
        parent.abort()

    async with anyio.create_task_group() as tg:
        tg.start_soon(abort_when_started)
        result = await parent.prompt("go", raise_on_error=False)
    assert result.stop_reason is al.StopReason.ABORTED
    end = next(e for e in seen if isinstance(e, multi.DelegationEnd))
    assert end.stop_reason is al.StopReason.ABORTED
    assert end.usage.total == 6  # the child's partial spending is kept
    assert paired(end.messages)
    child_events = [e.event for e in seen if isinstance(e, multi.SubAgentEvent)]
    assert isinstance(child_events[-1], al.AgentEnd)
    assert not child.is_running
    assert result.usage.total == 20 + 6  # the parent's answer and the child's


async def test_steering_the_parent_interrupts_the_child() -> None:
    started = anyio.Event()

    @al.tool
    async def slow() -> str:
        """Slow."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    @al.tool
    async def quick() -> str:
        """Quick, once the child runs."""
        await started.wait()
        return "quick"

    child = agent("child", [calls(("slow", {}))], tools=[slow])
    parent = agent(
        "parent",
        [calls(("child", {"task": "x"}), ("quick", {})), text("steered")],
        tools=[child.as_tool(description="c"), quick],
    )
    parent.steer("stop that")
    result = await parent.prompt("go")
    child_result, quick_result = [m for m in result.messages if isinstance(m, al.ToolResultMessage)]
    assert child_result.text == "tool call cancelled: user requested steering interrupt"
    assert quick_result.text == "quick"
    assert result.output == "steered"


async def test_approvals_inside_a_sub_agent_are_asked_at_the_top() -> None:
    asked: list[str] = []

    async def approve(call: al.ToolCall, tool: Any) -> Any:
        asked.append(call.name)
        return Rejected(reason="not today") if call.name == "delete" else APPROVED

    @al.tool(requires_approval=True)
    async def delete(path: str) -> str:
        """Delete."""
        return "deleted"

    child = agent("child", [calls(("delete", {"path": "x"})), text("could not")], tools=[delete])
    parent = agent(
        "parent",
        [calls(("child", {"task": "delete x"})), text("ok")],
        tools=[child.as_tool(description="c")],
        approval=approve,
    )
    await parent.prompt("go")
    assert asked == ["child", "delete"]
    rejected = [m for m in child.messages if isinstance(m, al.ToolResultMessage)][0]
    assert rejected.text == "tool call rejected: not today"


async def test_a_typed_input_for_a_sub_agent() -> None:
    class Job(msgspec.Struct):
        city: str
        days: int

    child = agent("planner", [text("itinerary")])
    tool = multi.SubAgentTool(
        child,
        name="plan_trip",
        description="Plans a trip.",
        input_type=Job,
        prompt=lambda job: f"{job.days} days in {job.city}",
    )
    assert tool.parameters["required"] == ["city", "days"]
    parent = agent(
        "p", [calls(("plan_trip", {"city": "Oslo", "days": 3})), text("ok")], tools=[tool]
    )
    await parent.prompt("go")
    first = child.messages[0]
    assert isinstance(first, al.UserMessage)
    assert first.text == "3 days in Oslo"


async def test_a_shared_budget_limits_the_whole_tree() -> None:
    budget = multi.SharedBudget(max_turns=3)
    child = agent("child", [calls(("child_tool", {})), text("never")])

    @al.tool
    async def child_tool() -> str:
        """Nothing."""
        return "ok"

    child.add_tool(child_tool)
    parent = agent(
        "parent",
        [calls(("child", {"task": "x"})), text("parent done"), text("never")],
        tools=[multi.SubAgentTool(child, name="child", description="c", policies=[budget])],
        pre_turn_policies=[budget],
        post_turn_policies=[budget],
    )
    result = await parent.prompt("go")
    # parent turn 1, child turn 1, child turn 2 would be the third: the child is stopped
    # before it; then the parent is stopped before its second turn.
    assert budget.turns == 3
    assert result.stopped_by is not None and "turns" in result.stopped_by


# ---------------------------------------------------------------- teams


async def test_a_transfer_hands_the_conversation_over() -> None:
    triage = agent("triage", [calls(("transfer_to_billing", {"reason": "a refund"}))])
    billing = agent("billing", [text("Refund issued.")])
    team = multi.Team([triage, billing], descriptions={"billing": "money matters"})
    seen: list[al.AgentEvent] = []
    result = await team.run("I want my money back", on_event=seen.append)
    assert result.output == "Refund issued."
    assert result.chain == ["triage", "billing"]
    assert result.agent == "billing"
    assert any(isinstance(e, multi.TransferInitiated) and e.target == "billing" for e in seen)
    # Billing saw the whole conversation, and who handed it over and why.
    offered = billing.stream_fn.calls[0].context  # type: ignore[attr-defined]
    assert offered.messages[0].text == "I want my money back"
    assert "handed to you by triage: a refund" in offered.messages[-1].text
    assert [t.name for t in offered.tools] == ["transfer_to_triage"]
    assert paired(result.messages)


async def test_transfers_back_are_refused_as_cycles_and_unknown_targets_too() -> None:
    a = agent("a", [calls(("transfer_to_b", {"reason": "yours"}))])
    b = agent(
        "b",
        [calls(("transfer_to_a", {"reason": "no, yours"})), text("fine, mine")],
    )
    seen: list[al.AgentEvent] = []
    result = await multi.Team([a, b]).run("x", on_event=seen.append)
    assert result.chain == ["a", "b"]
    assert result.output == "fine, mine"
    rejected = [e for e in seen if isinstance(e, multi.TransferRejected)]
    assert len(rejected) == 1 and "cycle" in rejected[0].reason
    refusal = [m for m in result.messages if isinstance(m, al.ToolResultMessage)][-1]
    assert refusal.is_error and refusal.text.startswith("transfer to a rejected")


async def test_the_transfer_depth_is_limited() -> None:
    members = [
        agent(f"m{i}", [calls((f"transfer_to_m{i + 1}", {"reason": "next"})), text(f"m{i} ends")])
        for i in range(4)
    ] + [agent("m4", [text("m4 ends")])]
    result = await multi.Team(members, max_transfers=2).run("x")
    assert result.chain == ["m0", "m1", "m2"]
    assert result.output == "m2 ends"


# ---------------------------------------------------------------- registry and mailboxes


async def test_a_registry_spawns_awaits_and_delivers_mail() -> None:
    gate = anyio.Event()

    @al.tool
    async def wait() -> str:
        """Wait."""
        await gate.wait()
        return "ok"

    writer = agent(
        "writer", [calls(("send_message", {"to": "reader", "text": "hi"})), text("sent")]
    )
    reader = agent(
        "reader", [calls(("wait", {})), text("read first"), text("got your mail")], tools=[wait]
    )
    slow = agent("slow", [calls(("wait", {})), text("never")], tools=[wait])
    async with multi.AgentRegistry([writer, reader, slow]) as registry:
        writer.add_tool(registry.messaging_tool("writer"))
        r = registry.spawn("reader", "start")
        s = registry.spawn("slow", "start")
        w = await registry.spawn("writer", "say hi")
        assert w.output == "sent"
        s.abort()
        gate.set()
        assert (await s).stop_reason is al.StopReason.ABORTED
        result = await r
    assert result.output == "got your mail"  # the mail arrived as a follow-up
    assert any(
        isinstance(m, al.UserMessage) and m.text == "[message from writer] hi"
        for m in reader.messages
    )


async def test_leaving_the_registry_waits_and_a_failing_block_cancels() -> None:
    never = anyio.Event()

    @al.tool
    async def hang() -> str:
        """Hang."""
        await never.wait()
        return "no"

    hanging = agent("hanging", [calls(("hang", {}))], tools=[hang])
    handles: list[multi.AgentHandle] = []

    async def fail_inside() -> None:
        async with multi.AgentRegistry([hanging]) as registry:
            handles.append(registry.spawn("hanging", "go"))
            await anyio.lowlevel.checkpoint()
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await fail_inside()
    assert handles[0].done
    assert not hanging.is_running


# ---------------------------------------------------------------- pipelines


async def test_sequential_parallel_and_loop() -> None:
    upper = lambda: al.Agent(  # noqa: E731
        model=MODEL,
        name="upper",
        stream_fn=FunctionStream(lambda c: reply_text(c.messages[-1].text.upper())),
    )
    exclaim = lambda: al.Agent(  # noqa: E731
        model=MODEL,
        name="exclaim",
        stream_fn=FunctionStream(lambda c: reply_text(c.messages[-1].text + "!")),
    )
    seq = await multi.Sequential([upper, exclaim]).run("hi")
    assert seq.output == "HI!"
    assert len(seq.results) == 2
    par = await multi.Parallel([upper, exclaim]).run("yo")
    assert par.output == "YO\n\nyo!"
    custom = await multi.Parallel(
        [upper, exclaim], merge=lambda parts: "|".join(p.output for p in parts)
    ).run("a")
    assert custom.output == "A|a!"
    loop = await multi.Loop(exclaim, until_contains="!!!", max_iterations=10).run("x")
    assert loop.output == "x!!!"
    assert len(loop.results) == 3


async def test_parallel_first_cancels_the_slower_steps() -> None:
    slow_started = anyio.Event()

    @al.tool
    async def forever() -> str:
        """Never."""
        slow_started.set()
        await anyio.sleep_forever()
        return "no"

    async def answer_once_the_slow_one_runs(context: Any) -> al.AssistantMessage:
        await slow_started.wait()
        return text("fast wins", 1)

    fast = al.Agent(
        model=MODEL, name="fast", stream_fn=FunctionStream(answer_once_the_slow_one_runs)
    )
    slow = agent("slow", [calls(("forever", {}), tokens=5)], tools=[forever])
    result = await multi.Parallel([fast, slow], merge="first").run("race")
    assert result.output == "fast wins"
    assert not slow.is_running
    last = slow.messages[-1]
    assert isinstance(last, al.ToolResultMessage)
    assert last.text == "tool call aborted: the run was cancelled"
    assert paired(slow.messages)
    assert result.usage.total == 2 + 10  # the cancelled step's spending is counted too


async def test_a_pipeline_as_a_tool_relays_and_rolls_up() -> None:
    a = agent("a", [text("from a", 1)])
    b = agent("b", [text("from b", 1)])
    tool = multi.Parallel([a, b]).as_tool(name="ask_both", description="Asks a and b.")
    boss = agent(
        "boss", [calls(("ask_both", {"task": "q"}), tokens=5), text("merged", 5)], tools=[tool]
    )
    seen: list[al.AgentEvent] = []
    boss.subscribe(seen.append)
    result = await boss.prompt("go")
    [res] = [m for m in result.messages if isinstance(m, al.ToolResultMessage)]
    assert res.text == "from a\n\nfrom b"
    agents = {e.path[0].agent for e in seen if isinstance(e, multi.DelegationStart)}
    assert agents == {"a", "b"}
    assert result.usage.total == 20 + 2 + 2


async def test_pipeline_definitions_round_trip_through_json() -> None:
    makers = {
        "up": lambda: al.Agent(
            model=MODEL,
            name="up",
            stream_fn=FunctionStream(lambda c: reply_text(c.messages[-1].text.upper())),
        ),
        "bang": lambda: al.Agent(
            model=MODEL,
            name="bang",
            stream_fn=FunctionStream(lambda c: reply_text(c.messages[-1].text + "!")),
        ),
    }
    pipeline = multi.Sequential(
        [
            multi.Named("up", makers["up"]),
            multi.Parallel([multi.Named("bang", makers["bang"]), multi.Named("up", makers["up"])]),
            multi.Loop(multi.Named("bang", makers["bang"]), until_contains="!!", max_iterations=3),
        ]
    )
    spec = pipeline.spec()
    data = msgspec.json.encode(spec)
    again = multi.build_pipeline(msgspec.json.decode(data, type=multi.PipelineSpec), makers)
    assert again.spec() == spec
    first, second = await pipeline.run("go"), await again.run("go")
    assert first.output == second.output == "GO!\n\nGO!!"
    fastest = multi.Parallel([multi.Named("up", makers["up"])] * 2, merge=multi.FastestN(2))
    round_trip = msgspec.json.decode(msgspec.json.encode(fastest.spec()), type=multi.PipelineSpec)
    assert round_trip == multi.ParallelSpec(
        steps=[multi.AgentRef(name="up")] * 2, merge="fastest", n=2
    )
    with pytest.raises(TypeError, match="serialise"):
        multi.Loop(makers["up"], until=lambda r: True).spec()
