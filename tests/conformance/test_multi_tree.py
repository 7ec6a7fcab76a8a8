"""Trees of agents keep every promise of a single run, whatever is interrupted, and where.

Random trees (depth up to 3: sub-agents calling sub-agents, several calls per batch, leaf tools
that yield to the event loop, sometimes a team with a hand-off at the top) are run on both
backends and aborted or steered after a random number of the top run's events. Then:

- the top run emitted exactly one ``AgentStart`` and one ``AgentEnd``, last, and every tool
  call it started ended;
- every agent of the tree has a well-paired history and is idle, every ``DelegationStart`` has
  its ``DelegationEnd``;
- no task is left: the event loop has as many tasks as before the run;
- the top result's usage is the sum of the usage of every answer of every agent in the tree.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
from hypothesis import given, note, settings, strategies as st

import agentloop as al
from agentloop import multi
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ..core._helpers import paired
from .profiles import CONFORMANCE

MODEL = al.ModelSpec(provider="tree", model_id="scripted")
BACKENDS = ("asyncio", "trio")


@dataclasses.dataclass(frozen=True)
class Node:
    name: str
    turns: tuple[tuple[tuple[str, ...], int], ...]  # per turn: the calls, the answer's tokens
    children: tuple[Node, ...]
    final_tokens: int


@st.composite
def nodes(draw: st.DrawFn, depth: int, prefix: str) -> Node:
    children: tuple[Node, ...] = ()
    if depth < 3:
        count = draw(st.integers(0, 2))
        children = tuple(draw(nodes(depth + 1, f"{prefix}{i}")) for i in range(count))
    tools = [c.name for c in children] + ["leaf"]
    turns = tuple(
        (
            tuple(draw(st.lists(st.sampled_from(tools), min_size=1, max_size=3))),
            draw(st.integers(1, 9)),
        )
        for _ in range(draw(st.integers(0, 2)))
    )
    return Node(name=prefix, turns=turns, children=children, final_tokens=draw(st.integers(1, 9)))


@dataclasses.dataclass(frozen=True)
class Tree:
    root: Node
    team: bool
    interrupt_after: int
    action: str  # "abort", "steer" or "none"


trees = st.builds(
    Tree,
    root=nodes(0, "a"),
    team=st.booleans(),
    interrupt_after=st.integers(0, 120),
    action=st.sampled_from(["abort", "steer", "none"]),
)


def usage(tokens: int) -> al.Usage:
    return al.Usage(input=tokens, output=tokens, total=2 * tokens)


def build(node: Node, agents: list[al.Agent[Any]]) -> al.Agent[Any]:
    @al.tool
    async def leaf() -> str:
        """A leaf that yields to the event loop a few times."""
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        return "leaf done"

    children = [build(child, agents) for child in node.children]
    script: list[Any] = []
    for calls, tokens in node.turns:
        items = [(name, {} if name == "leaf" else {"task": f"job for {name}"}) for name in calls]
        script.append(reply_tool_calls(*items, usage=usage(tokens)))
    script.append(reply_text(f"{node.name} done", usage=usage(node.final_tokens)))
    script.extend(reply_text(f"{node.name} again", usage=usage(1)) for _ in range(6))
    tools: list[al.AgentTool] = [
        leaf,
        *(multi.SubAgentTool(c, name=c.name, description=c.name) for c in children),
    ]
    agent = al.Agent(model=MODEL, name=node.name, stream_fn=ScriptedStream(script), tools=tools)
    agents.append(agent)
    return agent


async def perform(tree: Tree) -> None:
    agents: list[al.Agent[Any]] = []
    root = build(tree.root, agents)
    helper = None
    if tree.team:
        helper = al.Agent(
            model=MODEL,
            name="helper",
            stream_fn=ScriptedStream([reply_text("helped", usage=usage(2))]),
        )
        agents.append(helper)
        handoff = reply_tool_calls(
            ("transfer_to_helper", {"reason": "over to you"}), usage=usage(1)
        )
        root.stream_fn.script.insert(0, handoff)  # type: ignore[attr-defined]
    events: list[al.AgentEvent] = []

    def watch(event: al.AgentEvent) -> None:
        events.append(event)
        if len(events) == tree.interrupt_after:
            if tree.action == "abort":
                root.abort()
            elif tree.action == "steer":
                root.steer("change of plan")

    before = len(anyio.get_running_tasks())
    if tree.team and helper is not None:
        team = multi.Team([root, helper])
        with anyio.fail_after(30):
            result = await team.run("go", on_event=watch, raise_on_error=False)
        total = result.usage
        top_events = events  # both members' events, in order
        ends = [e for e in top_events if isinstance(e, al.AgentEnd)]
        assert len(ends) == len(result.chain)
    else:
        root.subscribe(watch)
        with anyio.fail_after(30):
            outcome = await root.prompt("go", raise_on_error=False)
        total = outcome.usage
        assert isinstance(events[0], al.AgentStart)
        assert isinstance(events[-1], al.AgentEnd)
        assert sum(isinstance(e, al.AgentStart | al.AgentEnd) for e in events) == 2
    started = [e.call_id for e in events if isinstance(e, al.ToolExecutionStart)]
    ended = [e.call_id for e in events if isinstance(e, al.ToolExecutionEnd)]
    assert sorted(started) == sorted(ended)
    delegations = [tuple(e.path) for e in events if isinstance(e, multi.DelegationStart)]
    finished = [tuple(e.path) for e in events if isinstance(e, multi.DelegationEnd)]
    assert sorted(map(repr, delegations)) == sorted(map(repr, finished))
    for agent in agents:
        assert not agent.is_running, agent.name
        assert paired(agent.messages), agent.name
    assert len(anyio.get_running_tasks()) == before
    leaves = al.Usage()
    counted: set[int] = set()  # a team's members share the messages they hand over
    for agent in agents:
        for message in agent.messages:
            if isinstance(message, al.AssistantMessage) and id(message) not in counted:
                counted.add(id(message))
                leaves = leaves + message.usage
    assert total.total == leaves.total, (total, leaves)


@settings(CONFORMANCE, max_examples=min(CONFORMANCE.max_examples, 150))
@given(tree=trees)
def test_trees_of_agents_end_complete_and_clean(tree: Tree) -> None:
    for backend in BACKENDS:
        note(f"backend: {backend}")
        anyio.run(perform, tree, backend=backend)
