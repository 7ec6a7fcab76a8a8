"""``agent_loop`` as a consumer sees it: leaving the ``async with`` early cancels the run
cleanly, whenever it happens; what was read is a valid prefix of the lifecycle grammar."""

from __future__ import annotations

import anyio
from hypothesis import given, note, strategies as st

import agentloop as al

from .fakes import MODEL, Queue, ScriptPlayer, Tracker, ZeroDelayRetry, make_tools
from .grammar import Lifecycle
from .profiles import CONFORMANCE
from .strategies import Scenario, scenarios

BACKENDS = ("asyncio", "trio")


async def _read_then_leave(scenario: Scenario, stop_after: int) -> tuple[Tracker, int, int]:
    tasks_before = len(anyio.get_running_tasks())
    tracker = Tracker()
    config = al.loop.AgentLoopConfig(
        model=MODEL,
        stream_fn=ScriptPlayer(scenario.script, tracker),
        tools=make_tools(tracker),
        retry_strategy=ZeroDelayRetry(),
        get_steering_messages=Queue(scenario.steering_mode),
        get_follow_up_messages=Queue(scenario.follow_up_mode),
        tool_execution=scenario.tool_execution,
    )
    grammar = Lifecycle()
    prompts = [al.UserMessage.from_text(p) for p in scenario.prompts]
    read = 0
    async with al.loop.agent_loop(prompts, al.loop.AgentContext(), config) as events:
        async for event in events:
            grammar.feed(event)
            read += 1
            if read > stop_after:
                break
    return tracker, tasks_before, len(anyio.get_running_tasks())


@CONFORMANCE
@given(
    scenario=scenarios(batches=True, aborts=False, policies=False), stop_after=st.integers(0, 40)
)
def test_leaving_the_stream_early_cancels_the_run_cleanly(
    scenario: Scenario, stop_after: int
) -> None:
    for backend in BACKENDS:
        note(f"backend: {backend}")
        tracker, before, after = anyio.run(_read_then_leave, scenario, stop_after, backend=backend)
        assert not tracker.live, f"still running: {sorted(tracker.live.values())}"
        assert tracker.started == tracker.finished
        assert after == before
