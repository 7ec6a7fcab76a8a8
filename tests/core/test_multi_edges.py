"""Edges of ``agentloop.multi`` the first tests left out: a team's input filter, steering a
registry's agent, ``FastestN`` run for real, a ``Loop`` at its limit, cost (not only usage)
rolling up the tree, and a tool timeout cancelling the sub-agent its tool runs."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import agentloop as al
from agentloop import multi
from agentloop.testing import FunctionStream, ScriptedStream, reply_text

from ._helpers import MODEL, agent, calls, paired, results_of, text

pytestmark = pytest.mark.anyio

U = al.Usage
ABORTED_CALL = "tool call aborted: the run was cancelled"


def requests(of: al.Agent[Any]) -> list[list[al.AgentMessage]]:
    """The messages of every request ``of``'s scripted model received."""
    return [list(call.context.messages) for call in of.stream_fn.calls]  # type: ignore[attr-defined]


class Hanging:
    """A ``hang`` tool for each named agent: it never ends on its own, and records its start
    and its cancellation (seen inside the tool, with its ``finally`` run)."""

    def __init__(self) -> None:
        self.started: dict[str, anyio.Event] = {}
        self.cancelled: list[str] = []

    def tool(self, owner: str) -> Any:
        started = self.started[owner] = anyio.Event()

        @al.tool
        async def hang() -> str:
            """Never ends on its own."""
            started.set()
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(owner)
                raise
            return "never"

        return hang


# ---------------------------------------------------------------- teams


def triage_agent() -> al.Agent[Any]:
    """Looks order 42 up, then hands over to billing."""

    @al.tool
    async def lookup(order: str) -> str:
        """Look an order up."""
        return f"order {order}: charged twice"

    return agent(
        "triage",
        [calls(("lookup", {"order": "42"})), calls(("transfer_to_billing", {"reason": "refund"}))],
        tools=[lookup],
    )


async def test_a_team_input_filter_decides_what_each_next_agent_sees() -> None:
    triage = triage_agent()
    billing = agent("billing", [calls(("transfer_to_audit", {"reason": "check it"}))])
    audit = agent("audit", [text("Refund approved.")])
    given: list[list[al.AgentMessage]] = []

    def user_messages_only(messages: list[al.AgentMessage]) -> list[al.AgentMessage]:
        given.append(list(messages))
        return [m for m in messages if isinstance(m, al.UserMessage)]

    team = multi.Team([triage, billing, audit], input_filter=user_messages_only)
    result = await team.run("I was charged twice.")
    assert result.chain == ["triage", "billing", "audit"]
    assert result.output == "Refund approved."
    # The filter is given the whole conversation at each hand-off, tool calls included ...
    assert len(given) == 2
    assert [type(m).__name__ for m in given[0]] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
        "ToolResultMessage",
    ]
    assert results_of(given[0])[0].text == "order 42: charged twice"
    # ... and the receiving agent's model is sent what it returned, then who handed over.
    [to_billing] = requests(billing)
    assert [type(m).__name__ for m in to_billing] == ["UserMessage", "UserMessage"]
    assert to_billing[0].text == "I was charged twice."  # type: ignore[union-attr]
    assert "handed to you by triage: refund" in to_billing[1].text  # type: ignore[union-attr]
    [to_audit] = requests(audit)
    assert [type(m).__name__ for m in to_audit] == ["UserMessage"] * 3
    assert "handed to you by billing: check it" in to_audit[-1].text  # type: ignore[union-attr]
    assert paired(to_billing) and paired(to_audit)


async def test_without_an_input_filter_the_next_agent_sees_everything() -> None:
    triage = triage_agent()
    billing = agent("billing", [text("Refund issued.")])
    await multi.Team([triage, billing]).run("I was charged twice.")
    [to_billing] = requests(billing)
    assert len(to_billing) == 6  # the prompt, two calls with their results, the hand-over
    assert results_of(to_billing)[0].text == "order 42: charged twice"


# ---------------------------------------------------------------- steering a registry's agent


async def test_steering_a_handle_interrupts_its_running_tools_and_is_read_next() -> None:
    hanging = Hanging()
    steered = anyio.Event()

    @al.tool
    async def quick() -> str:
        """Ends once the steering is queued: steering is polled after a tool completes."""
        await steered.wait()
        return "quick result"

    worker = agent(
        "worker",
        [calls(("quick", {}), ("hang", {})), text("Changed course.")],
        tools=[quick, hanging.tool("worker")],
        steering_interrupt="after_call",  # quick ends, then the hanging call is cancelled
    )
    async with multi.AgentRegistry([worker]) as registry:
        handle = registry.spawn("worker", "do both")
        await hanging.started["worker"].wait()
        assert worker.is_running and not handle.done
        handle.steer("Stop the slow one.")
        steered.set()
        result = await handle
    assert result.stop_reason is al.StopReason.STOP
    assert result.output == "Changed course."
    quick_result, hang_result = results_of(result.messages)
    assert quick_result.text == "quick result"  # a finished call is kept
    assert hang_result.text == (
        "tool call cancelled: user requested steering interrupt: 'Stop the slow one.'"
    )
    assert hanging.cancelled == ["worker"]
    # The steering message starts the next turn: it is the last thing the model is sent.
    last = requests(worker)[-1][-1]
    assert isinstance(last, al.UserMessage) and last.text == "Stop the slow one."
    assert worker.queued_steering == []
    assert paired(worker.messages) and not worker.is_running


async def test_steering_a_handle_between_tools_continues_the_run_with_it() -> None:
    answering = anyio.Event()
    go = anyio.Event()
    turns: list[str] = []

    async def model(context: Any) -> al.AssistantMessage:
        turns.append(context.messages[-1].text)
        if len(turns) == 1:
            answering.set()
            await go.wait()
            return text("First answer.")
        return text("Answer to the steering.")

    worker = al.Agent(model=MODEL, name="worker", stream_fn=FunctionStream(model))
    async with multi.AgentRegistry([worker]) as registry:
        handle = registry.spawn("worker", "start")
        await answering.wait()  # mid-turn, no tool running
        handle.steer("Also this.")
        go.set()
        result = await handle
    # The turn ends as it would; the steering, polled after it, makes one more turn.
    assert turns == ["start", "Also this."]
    assert result.output == "Answer to the steering."
    assert [m.text for m in result.messages if isinstance(m, al.UserMessage)] == [
        "start",
        "Also this.",
    ]


# ---------------------------------------------------------------- FastestN, run


async def test_fastest_n_keeps_the_first_n_in_arrival_order_and_cancels_the_rest() -> None:
    hanging = Hanging()
    first_answering = anyio.Event()

    async def answer_first(context: Any) -> al.AssistantMessage:
        await hanging.started["slow_a"].wait()  # both slow steps are inside their tool
        await hanging.started["slow_b"].wait()
        first_answering.set()
        return text("first", 1)

    async def answer_second(context: Any) -> al.AssistantMessage:
        await first_answering.wait()
        await first.wait_idle()  # the first run ended: its result is in before this one
        return text("second", 1)

    first = al.Agent(model=MODEL, name="first", stream_fn=FunctionStream(answer_first))
    second = al.Agent(model=MODEL, name="second", stream_fn=FunctionStream(answer_second))
    slow_a = agent("slow_a", [calls(("hang", {}), tokens=5)], tools=[hanging.tool("slow_a")])
    slow_b = agent("slow_b", [calls(("hang", {}), tokens=5)], tools=[hanging.tool("slow_b")])
    # In step order the second comes before the first: arrival order is what counts.
    pipeline = multi.Parallel([slow_a, second, first, slow_b], merge=multi.FastestN(2))
    result = await pipeline.run("race")
    assert result.output == "first\n\nsecond"
    assert [r.output for r in result.results] == ["first", "second"]
    assert result.stop_reason is al.StopReason.STOP
    # Each loser was cancelled inside its tool, and its run ended with every call paired.
    assert sorted(hanging.cancelled) == ["slow_a", "slow_b"]
    for slow in (slow_a, slow_b):
        assert not slow.is_running
        last = slow.messages[-1]
        assert isinstance(last, al.ToolResultMessage) and last.text == ABORTED_CALL
        assert paired(slow.messages)
    assert not first.is_running and not second.is_running
    assert result.usage.total == 2 + 2 + 10 + 10  # the cancelled runs' spending counts too


async def test_fastest_n_as_a_tool_ends_each_loser_with_an_aborted_delegation() -> None:
    hanging = Hanging()

    async def answer_once_both_hang(context: Any) -> al.AssistantMessage:
        await hanging.started["slow_a"].wait()
        await hanging.started["slow_b"].wait()
        return text("fast", 1)

    fast = al.Agent(model=MODEL, name="fast", stream_fn=FunctionStream(answer_once_both_hang))
    slow_a = agent("slow_a", [calls(("hang", {}), tokens=5)], tools=[hanging.tool("slow_a")])
    slow_b = agent("slow_b", [calls(("hang", {}), tokens=5)], tools=[hanging.tool("slow_b")])
    race = multi.Parallel([slow_a, fast, slow_b], merge=multi.FastestN(1))
    boss = agent(
        "boss",
        [calls(("race", {"task": "go"})), text("The fast one won.")],
        tools=[race.as_tool(name="race", description="Races three agents.")],
    )
    seen: list[al.AgentEvent] = []
    boss.subscribe(seen.append)
    result = await boss.prompt("start")
    assert result.output == "The fast one won."
    [race_result] = results_of(result.messages)
    assert race_result.text == "fast" and not race_result.is_error
    ends = {e.path[0].agent: e for e in seen if isinstance(e, multi.DelegationEnd)}
    assert set(ends) == {"fast", "slow_a", "slow_b"}
    assert ends["fast"].stop_reason is al.StopReason.STOP
    for name in ("slow_a", "slow_b"):
        assert ends[name].stop_reason is al.StopReason.ABORTED
        assert ends[name].usage.total == 10  # what it spent before it was cancelled
        assert paired(ends[name].messages)
    assert sorted(hanging.cancelled) == ["slow_a", "slow_b"]
    # Every delegation that started also ended, each inside the race's tool execution.
    starts = [e for e in seen if isinstance(e, multi.DelegationStart)]
    assert len(starts) == 3
    order = [type(e).__name__ for e in seen]
    last_end = len(order) - 1 - order[::-1].index("DelegationEnd")
    assert last_end < order.index("ToolExecutionEnd")
    assert result.usage.total == 20 + 20 + 2 + 10 + 10


# ---------------------------------------------------------------- Loop at its limit


async def test_a_loop_stops_at_max_iterations_with_the_last_output() -> None:
    runs: list[str] = []

    def exclaim() -> al.Agent[Any]:
        def answer(context: Any) -> al.AssistantMessage:
            runs.append(context.messages[-1].text)
            return text(context.messages[-1].text + "!", 1)

        return al.Agent(model=MODEL, name="exclaim", stream_fn=FunctionStream(answer))

    checked: list[str] = []

    def never(part: multi.PipelineResult) -> bool:
        checked.append(part.output)
        return False

    loop = multi.Loop(exclaim, until=never, until_contains="?", max_iterations=3)
    result = await loop.run("x")
    assert runs == ["x", "x!", "x!!"]  # each iteration is fed the previous one's output
    assert checked == ["x!", "x!!", "x!!!"]  # the condition saw every iteration
    assert result.output == "x!!!"
    assert result.stop_reason is al.StopReason.STOP  # reaching the limit is no failure
    assert len(result.results) == 3
    assert result.usage.total == 3 * 2
    # In a sequence, the next step goes on from the loop's last output.
    upper = al.Agent(
        model=MODEL,
        name="upper",
        stream_fn=FunctionStream(lambda c: reply_text(c.messages[-1].text.upper())),
    )
    runs.clear()
    chained = await multi.Sequential([multi.Loop(exclaim, max_iterations=2), upper]).run("y")
    assert runs == ["y", "y!"]
    assert chained.output == "Y!!"


async def test_a_loop_of_one_iteration_runs_once() -> None:
    made: list[int] = []

    def once() -> al.Agent[Any]:
        made.append(1)
        return agent("once", [text("only")])

    result = await multi.Loop(once, until_contains="never", max_iterations=1).run("go")
    assert made == [1]
    assert result.output == "only"
    with pytest.raises(ValueError, match="max_iterations"):
        multi.Loop(once, max_iterations=0)


# ---------------------------------------------------------------- cost rolls up


def priced(
    name: str, per_million_in: float, per_million_out: float, script: list[Any], **kw: Any
) -> al.Agent[Any]:
    spec = al.ModelSpec(
        provider="test",
        model_id=name,
        pricing=al.Pricing(input=per_million_in, output=per_million_out),
    )
    return al.Agent(model=spec, stream_fn=ScriptedStream(script), name=name, **kw)


def big(answer: al.AssistantMessage) -> al.AssistantMessage:
    """``answer`` using 1,000 input and 1,000 output tokens (and reporting no cost)."""
    return al.AssistantMessage(content=answer.content, usage=U(input=1000, output=1000, total=2000))


async def test_a_parents_cost_includes_its_sub_agents_costs() -> None:
    # Per answer: the top costs 0.001 + 0.002, the middle 0.01 + 0.02, the leaf 0.1 + 0.2.
    leaf = priced("leaf", 100.0, 200.0, [big(text("leaf done"))])
    middle = priced(
        "middle",
        10.0,
        20.0,
        [big(calls(("leaf", {"task": "dig"}))), big(text("middle done"))],
        tools=[leaf.as_tool(description="The leaf.")],
    )
    top = priced(
        "top",
        1.0,
        2.0,
        [big(calls(("middle", {"task": "go"}))), big(text("top done"))],
        tools=[middle.as_tool(description="The middle.")],
    )
    seen: list[al.AgentEvent] = []
    top.subscribe(seen.append)
    result = await top.prompt("start")
    assert result.output == "top done"
    assert leaf.cost.total == pytest.approx(0.3)
    assert middle.cost.total == pytest.approx(2 * 0.03 + 0.3)  # its own answers and the leaf's
    assert result.cost.total == pytest.approx(2 * 0.003 + 2 * 0.03 + 0.3)
    assert result.cost.input == pytest.approx(2 * 0.001 + 2 * 0.01 + 0.1)
    assert result.cost.output == pytest.approx(2 * 0.002 + 2 * 0.02 + 0.2)
    assert top.cost.total == pytest.approx(result.cost.total)
    assert result.usage.input == 5 * 1000  # usage rolls up as well
    ends = {tuple(h.agent for h in e.path): e for e in seen if isinstance(e, multi.DelegationEnd)}
    assert ends[("middle", "leaf")].cost.total == pytest.approx(0.3)
    assert ends[("middle",)].cost.total == pytest.approx(2 * 0.03 + 0.3)


async def test_team_and_pipeline_costs_sum_their_agents() -> None:
    triage = priced("triage", 1.0, 2.0, [big(calls(("transfer_to_billing", {"reason": "$"})))])
    billing = priced("billing", 10.0, 20.0, [big(text("Refunded."))])
    team = await multi.Team([triage, billing]).run("refund me")
    assert team.cost.total == pytest.approx(0.003 + 0.03)
    pipeline = multi.Parallel(
        [
            lambda: priced("a", 1.0, 2.0, [big(text("from a"))]),
            lambda: priced("b", 10.0, 20.0, [big(text("from b"))]),
        ]
    )
    alone = await pipeline.run("q")
    assert alone.output == "from a\n\nfrom b"
    assert alone.cost.total == pytest.approx(0.003 + 0.03)
    boss = priced(
        "boss",
        100.0,
        200.0,
        [big(calls(("ask", {"task": "q"}))), big(text("merged"))],
        tools=[pipeline.as_tool(name="ask", description="Asks a and b.")],
    )
    result = await boss.prompt("go")
    assert result.output == "merged"
    assert results_of(result.messages)[0].text == "from a\n\nfrom b"
    assert result.cost.total == pytest.approx(2 * 0.3 + 0.003 + 0.03)


# ---------------------------------------------------------------- a tool timeout


@pytest.mark.parametrize("where", ["agent", "tool"])
async def test_a_tool_timeout_cancels_the_sub_agent_its_tool_runs(where: str) -> None:
    hanging = Hanging()
    child = agent("child", [calls(("hang", {}), tokens=3)], tools=[hanging.tool("child")])
    if where == "agent":  # the calling agent's tool_timeout
        tool: Any = child.as_tool(description="The child.")
        options: dict[str, Any] = {"tool_timeout": 0.2}
    else:  # the sub-agent tool's own timeout
        tool = multi.SubAgentTool(child, name="child", description="The child.", timeout=0.2)
        options = {}
    parent = agent(
        "parent",
        [calls(("child", {"task": "wait"})), text("Gave up on the child.")],
        tools=[tool],
        **options,
    )
    seen: list[al.AgentEvent] = []
    parent.subscribe(seen.append)
    result = await parent.prompt("go")
    # The call ended as an error the model reads, and the parent went on.
    [timed_out] = results_of(result.messages)
    assert timed_out.is_error and timed_out.text == "tool call timed out after 0.2 seconds"
    assert result.output == "Gave up on the child."
    assert result.stop_reason is al.StopReason.STOP
    # The child was cancelled inside its own tool; its run ended aborted, its calls paired.
    assert hanging.cancelled == ["child"]
    assert not child.is_running
    assert paired(child.messages)
    last = child.messages[-1]
    assert isinstance(last, al.ToolResultMessage) and last.text == ABORTED_CALL
    [end] = [e for e in seen if isinstance(e, multi.DelegationEnd)]
    assert end.stop_reason is al.StopReason.ABORTED
    assert end.usage.total == 6
    inner = [e.event for e in seen if isinstance(e, multi.SubAgentEvent)]
    assert isinstance(inner[-1], al.AgentEnd)
    assert result.usage.total == 20 + 20 + 6  # the child's partial spending is kept
    # The child can run again: nothing of the cancelled run is left holding it.
    child.stream_fn = ScriptedStream([text("ready")])
    assert (await child.prompt("again")).output == "ready"
