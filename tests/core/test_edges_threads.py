"""Tools in worker threads: cancellable, concurrent by default, progress from any thread.

Regression tests for the core-edges issue, items 1-3. Every bound here is a hang bound: a thread
blocked on an event that only the test's teardown sets, so a call that waited for its thread
would take the full 10 s and fail the ``< 5`` checks.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest

import agentloop as al
from agentloop.testing import reply_text, reply_tool_calls

from ._helpers import MODEL, Recorder, config, paired, results_of

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.anyio

HANG = 10.0  # what a blocked thread would cost if the loop waited for it


def prompt() -> list[al.AgentMessage]:
    return [al.UserMessage.from_text("go")]


class Gate:
    """A thread-side gate: a tool thread blocks on ``release`` until the test opens it."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()

    def block(self) -> str:
        self.entered.set()
        try:
            self.release.wait(HANG)
            return "finished late"
        finally:
            self.finished.set()

    async def wait_entered(self) -> None:
        await anyio.to_thread.run_sync(self.entered.wait, HANG)

    async def wait_finished(self) -> None:
        await anyio.to_thread.run_sync(self.finished.wait, HANG)


@pytest.fixture
def gate() -> Iterator[Gate]:
    g = Gate()
    yield g
    g.release.set()  # never leave a worker thread blocked past the test


def blocking_tool(gate: Gate) -> al.AgentTool:
    @al.tool
    def stuck() -> str:
        """Block until the test lets go."""
        return gate.block()

    return stuck


# ---------------------------------------------------------------- item 1: a thread can be stopped


async def test_tool_timeout_ends_a_threaded_call_without_waiting_for_the_thread(
    gate: Gate, caplog: pytest.LogCaptureFixture
) -> None:
    script = [reply_tool_calls(("stuck", {})), reply_text("done")]
    cfg = config(script, tools=[blocking_tool(gate)], tool_timeout=0.2)
    with caplog.at_level(logging.DEBUG, logger="agentloop"):
        start = anyio.current_time()
        result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), cfg)
        elapsed = anyio.current_time() - start
        assert elapsed < 5, elapsed
        [res] = results_of(result.messages)
        assert res.is_error
        assert res.text == "tool call timed out after 0.2 seconds"
        assert result.text == "done"
        # The abandoned thread's eventual result is discarded and said so in the log.
        gate.release.set()
        await gate.wait_finished()
        await anyio.to_thread.run_sync(lambda: None)  # the worker has returned by now
    assert any("discarded" in r.getMessage() for r in caplog.records)


async def test_abort_ends_a_threaded_call_at_once(gate: Gate) -> None:
    agent = al.Agent(
        model=MODEL,
        stream_fn=config([reply_tool_calls(("stuck", {})), reply_text("x")]).stream_fn,
        tools=[blocking_tool(gate)],
    )
    result: al.AgentResult | None = None

    async def run() -> None:
        nonlocal result
        result = await agent.prompt("go", raise_on_error=False)

    start = anyio.current_time()
    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await gate.wait_entered()
        agent.abort()
    assert anyio.current_time() - start < 5
    assert result is not None
    assert result.stop_reason is al.StopReason.ABORTED
    assert paired(agent.messages)


async def test_steering_interrupts_a_threaded_call(gate: Gate) -> None:
    @al.tool
    async def quick() -> str:
        """Finish at once, once the other call is running."""
        await gate.wait_entered()
        return "quick"

    agent = al.Agent(
        model=MODEL,
        stream_fn=config(
            [reply_tool_calls(("stuck", {}), ("quick", {})), reply_text("steered")]
        ).stream_fn,
        tools=[blocking_tool(gate), quick],
    )
    agent.steer("change of plan")  # polled after ``quick`` completes
    start = anyio.current_time()
    result = await agent.prompt("go")
    assert anyio.current_time() - start < 5
    stuck_result, quick_result = results_of(result.messages)
    assert stuck_result.text == "tool call cancelled: user requested steering interrupt"
    assert quick_result.text == "quick"
    assert result.text == "steered"


async def test_a_threaded_tool_can_notice_cancellation_through_its_context() -> None:
    noticed = threading.Event()

    @al.tool
    def patient(ctx: al.ToolContext) -> str:
        """Wait for cancellation, then stop early."""
        if ctx.wait_cancelled(HANG):
            noticed.set()
            return "stopped"
        return "never cancelled"

    cfg = config([reply_tool_calls(("patient", {})), reply_text("ok")], tools=[patient])
    cfg.tool_timeout = 0.1
    result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), cfg)
    assert results_of(result.messages)[0].text == "tool call timed out after 0.1 seconds"
    assert await anyio.to_thread.run_sync(noticed.wait, HANG)


async def test_a_threaded_tool_can_use_anyio_check_cancelled() -> None:
    stopped = threading.Event()
    cancelled_class: list[type[BaseException]] = []

    @al.tool
    def polling() -> str:
        """Poll for cancellation the anyio way."""
        try:
            while not stopped.wait(0.01):
                anyio.from_thread.check_cancelled()
        except BaseException as exc:
            cancelled_class.append(type(exc))
            stopped.set()
            raise
        return "never"

    cfg = config([reply_tool_calls(("polling", {})), reply_text("ok")], tools=[polling])
    cfg.tool_timeout = 0.1
    result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), cfg)
    assert results_of(result.messages)[0].is_error
    assert await anyio.to_thread.run_sync(stopped.wait, HANG)
    assert cancelled_class and issubclass(cancelled_class[0], BaseException)


# ---------------------------------------------------------------- item 2: sync tools in threads


async def test_a_plain_def_tool_runs_in_a_worker_thread_by_default() -> None:
    barrier = threading.Barrier(3, timeout=HANG)
    loop_thread = threading.get_ident()
    threads: list[int] = []

    @al.tool
    def meet(i: int) -> str:
        """Wait until all three calls run at once (only possible in threads)."""
        threads.append(threading.get_ident())
        barrier.wait()
        return f"met {i}"

    script = [reply_tool_calls(*[("meet", {"i": i}) for i in range(3)]), reply_text("ok")]
    start = anyio.current_time()
    result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), config(script, tools=[meet]))
    assert anyio.current_time() - start < 5
    assert [r.text for r in results_of(result.messages)] == ["met 0", "met 1", "met 2"]
    assert loop_thread not in threads


async def test_inline_opt_in_runs_a_sync_tool_on_the_event_loop() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    @al.tool(inline=True)
    def trivial(x: int) -> int:
        """Cheap enough to run on the loop."""
        seen.append(threading.get_ident())
        return x + 1

    script = [reply_tool_calls(("trivial", {"x": 1})), reply_text("ok")]
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[trivial])
    )
    assert results_of(result.messages)[0].text == "2"
    assert seen == [loop_thread]


async def test_tool_timeout_applies_to_a_plain_def_tool(gate: Gate) -> None:
    script = [reply_tool_calls(("stuck", {})), reply_text("ok")]
    cfg = config(script, tools=[blocking_tool(gate)], tool_timeout=0.1)
    start = anyio.current_time()
    result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), cfg)
    assert anyio.current_time() - start < 5
    assert results_of(result.messages)[0].text == "tool call timed out after 0.1 seconds"


# ---------------------------------------------------------------- item 3: progress from a thread


async def test_progress_from_a_worker_thread_arrives_while_the_tool_runs() -> None:
    seen_update = threading.Event()
    consumer_threads: set[int] = set()
    subscriber_threads: set[int] = set()

    @al.tool
    def reporting(ctx: al.ToolContext) -> str:
        """Report progress from the worker thread, then wait until it was seen."""
        ctx.on_update("half way")
        if not seen_update.wait(HANG):
            return "update never arrived"
        return "done"

    agent = al.Agent(
        model=MODEL,
        stream_fn=config([reply_tool_calls(("reporting", {})), reply_text("ok")]).stream_fn,
        tools=[reporting],
    )
    agent.subscribe(lambda event: subscriber_threads.add(threading.get_ident()))
    updates: list[al.ToolExecutionUpdate] = []
    async with agent.stream("go") as events:
        async for event in events:
            consumer_threads.add(threading.get_ident())
            if isinstance(event, al.ToolExecutionUpdate):
                updates.append(event)
                seen_update.set()
    result = events.result
    assert [u.update.content for u in updates] == [[al.Text(text="half way")]]
    assert results_of(result.messages)[0].text == "done"
    assert consumer_threads == subscriber_threads == {threading.get_ident()}


async def test_progress_from_a_foreign_thread_reaches_run_loop_callbacks() -> None:
    """A tool that starts its own ``threading.Thread`` may report from it too."""
    callback_threads: set[int] = set()
    recorder = Recorder(lambda event: callback_threads.add(threading.get_ident()))

    @al.tool
    async def spawner(ctx: al.ToolContext) -> str:
        """Report from a thread this tool starts itself."""
        done = threading.Event()

        def work() -> None:
            ctx.on_update("from a foreign thread")
            done.set()

        thread = threading.Thread(target=work)
        thread.start()
        await anyio.to_thread.run_sync(done.wait, HANG)
        await anyio.to_thread.run_sync(thread.join)
        return "ok"

    script = [reply_tool_calls(("spawner", {})), reply_text("ok")]
    await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[spawner]), on_event=recorder
    )
    updates = recorder.of(al.ToolExecutionUpdate)
    assert [u.update.content[0].text for u in updates] == ["from a foreign thread"]
    assert callback_threads == {threading.get_ident()}


async def test_updates_after_the_call_ended_are_dropped(gate: Gate) -> None:
    late = threading.Event()
    contexts: list[al.ToolContext] = []

    @al.tool
    def lingering(ctx: al.ToolContext) -> str:
        """Outlive the call and report afterwards."""
        contexts.append(ctx)
        gate.block()
        ctx.on_update("too late")
        late.set()
        return "late"

    recorder = Recorder()
    script = [reply_tool_calls(("lingering", {})), reply_text("ok")]
    cfg = config(script, tools=[lingering], tool_timeout=0.1)
    await al.loop.run_loop(prompt(), al.loop.AgentContext(), cfg, on_event=recorder)
    gate.release.set()
    assert await anyio.to_thread.run_sync(late.wait, HANG)
    assert recorder.of(al.ToolExecutionUpdate) == []
    assert contexts[0].cancelled
