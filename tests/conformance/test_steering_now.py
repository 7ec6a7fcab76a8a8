"""Steering interrupts now: at any moment, with async, threaded and subprocess tools.

Steering given at a random moment of a run (while the model answers, or after any number of
calls started) ends every call running at that moment within a bound, gives every call exactly
one result, and loses no steering message: each is in the history exactly once. The steering
may come from the event loop's thread or from another thread. Checked on both backends, with
real worker threads and real child processes (none is left behind).
"""

from __future__ import annotations

import dataclasses
import os
import threading
from typing import Any

import anyio
import anyio.to_thread
from hypothesis import given, note, settings, strategies as st

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from .profiles import CONFORMANCE, PROFILE

BACKENDS = ("asyncio", "trio")
KINDS = ("async", "thread", "process", "quick")
# Generous: a cancelled call ends in milliseconds; this only catches a call left running (each
# one would otherwise run for a minute).
BOUND = 10.0
LONG = 60.0
MODEL = al.ModelSpec(provider="test", model_id="scripted")


@dataclasses.dataclass(frozen=True)
class Case:
    kinds: tuple[str, ...]
    after_starts: int  # steer once this many calls started (-1: while the model answers)
    messages: int
    mode: str
    from_thread: bool


@st.composite
def cases(draw: st.DrawFn) -> Case:
    kinds = tuple(draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4)))
    return Case(
        kinds=kinds,
        after_starts=draw(st.just(-1) | st.integers(1, len(kinds))),
        messages=draw(st.integers(1, 3)),
        mode=draw(st.sampled_from(["one_at_a_time", "all"])),
        from_thread=draw(st.booleans()),
    )


class Tools:
    """The tools of one run, keeping what they started (threads, processes)."""

    def __init__(self) -> None:
        self.returned: list[threading.Event] = []  # one per threaded call, set as it returns
        self.pids: list[int] = []

        @al.tool(name="async")
        async def wait_async() -> str:
            """Wait a long time."""
            await anyio.sleep(LONG)
            return "slept"

        @al.tool(name="thread")
        def wait_thread(ctx: al.ToolContext) -> str:
            """Wait a long time in a worker thread, cooperatively."""
            returned = threading.Event()
            self.returned.append(returned)
            try:
                return "cancelled" if ctx.wait_cancelled(LONG) else "slept"
            finally:
                returned.set()

        @al.tool(name="process")
        async def wait_process() -> str:
            """Wait a long time in a child process."""
            with anyio.CancelScope(shield=True):  # a cancellation mid-spawn loses no process
                process = await anyio.open_process(["sleep", str(int(LONG))])
            self.pids.append(process.pid)
            try:
                await process.wait()
            finally:
                with anyio.CancelScope(shield=True):
                    if process.returncode is None:
                        process.kill()
                    await process.wait()
            return "slept"

        @al.tool(name="quick")
        async def quick() -> str:
            """Return at once."""
            return "quick"

        self.all = [wait_async, wait_thread, wait_process, quick]


async def _perform(case: Case) -> None:
    tools = Tools()
    texts = [f"steer {i}" for i in range(case.messages)]
    replies = [reply_tool_calls(*[(kind, {}) for kind in case.kinds])]
    replies += [reply_text(f"answer {i}") for i in range(case.messages + 1)]
    agent = al.Agent(
        model=MODEL,
        stream_fn=ScriptedStream(replies),
        tools=tools.all,
        steering_mode=case.mode,  # type: ignore[arg-type]
        raise_on_error=False,
    )
    started = 0
    running: set[str] = set()
    ended_at: dict[str, float] = {}
    moment = anyio.Event()
    running_at_steer: set[str] = set()

    def watch(event: al.AgentEvent) -> None:
        nonlocal started
        if isinstance(event, al.MessageStart) and isinstance(event.message, al.AssistantMessage):
            if case.after_starts == -1 and not moment.is_set():
                moment.set()
        elif isinstance(event, al.ToolExecutionStart):
            started += 1
            running.add(event.call_id)
            if started == case.after_starts:
                moment.set()
        elif isinstance(event, al.ToolExecutionEnd):
            running.discard(event.call_id)
            ended_at[event.call_id] = anyio.current_time()

    agent.subscribe(watch)
    steered_at = 0.0
    result: al.AgentResult[Any] | None = None

    async def run() -> None:
        nonlocal result
        result = await agent.prompt("go")
        moment.set()  # the run ended first (every call was quick): nothing to steer

    with anyio.fail_after(BOUND * 3):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await moment.wait()
            if result is None:
                running_at_steer.update(running)
                steered_at = anyio.current_time()
                for text in texts:
                    if case.from_thread:
                        await anyio.to_thread.run_sync(agent.steer, text)
                    else:
                        agent.steer(text)
    assert result is not None
    messages = result.messages
    note(f"messages: {[type(m).__name__ for m in messages]}")

    # Every call running at the steering moment ended within the bound.
    for call_id in running_at_steer:
        assert ended_at[call_id] - steered_at < BOUND, call_id
    # Every call has exactly one result.
    calls = [c.id for m in messages if isinstance(m, al.AssistantMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if isinstance(m, al.ToolResultMessage)]
    assert sorted(calls) == sorted(results)
    assert len(set(results)) == len(results)
    # No steering message lost or doubled (those given after the run ended stay queued).
    history_texts = [m.text for m in messages if isinstance(m, al.UserMessage)]
    queued = [m.text for m in agent.queued_steering if isinstance(m, al.UserMessage)]
    if steered_at:
        for text in texts:
            assert history_texts.count(text) + queued.count(text) == 1, text
    # Nothing left behind: the threads' calls return (their worker threads go back to the
    # pool), child processes are gone.
    for returned in tools.returned:
        assert returned.wait(BOUND), "a threaded call went on after its call ended"
    for pid in tools.pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"process {pid} outlived its call")


# Real threads and processes: fewer examples than the in-memory properties.
STEERING = settings(CONFORMANCE, max_examples=2_000 if PROFILE == "thorough" else 60)


@STEERING
@given(case=cases())
def test_steering_at_any_moment_ends_running_calls_and_loses_nothing(case: Case) -> None:
    for backend in BACKENDS:
        note(f"backend: {backend}")
        anyio.run(_perform, case, backend=backend)
