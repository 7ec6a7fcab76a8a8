"""The instrumentation hook (``agentloop.abc.Instrumentation``): what it is told, where, when."""

from __future__ import annotations

import contextvars
import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio
import pytest

import agentloop as al
from agentloop.abc import Instrumentation, ModelCallInfo, RunInfo, RunNote, ToolCallInfo
from agentloop.multi import SubAgentTool
from agentloop.policy import Rejected, Skip
from agentloop.sessions import JsonlSessionStore, SessionRecorder
from agentloop.testing import ScriptedStream, reply_error, reply_text, reply_tool_calls

from ._helpers import MODEL, NO_RETRY_DELAY, config

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.anyio

# What the hooks set while they are entered; tools read it to see where they run.
where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="")


class Recording(Instrumentation):
    """Records every hook with the info it got, and sets ``where`` while each is entered."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str, str | None]] = []
        self.runs: list[RunInfo] = []
        self.models: list[ModelCallInfo] = []
        self.tools: list[ToolCallInfo] = []
        self.notes: list[RunNote] = []
        self.request_sizes: list[int] = []  # messages in each request, as it is sent

    @contextmanager
    def _entered(self, label: str) -> Iterator[None]:
        outer = where.get()
        token = where.set(f"{outer}/{label}" if outer else label)
        self.log.append(("enter", label, None))
        try:
            yield
        except BaseException as exc:
            self.log.append(("exit", label, type(exc).__name__))
            raise
        else:
            self.log.append(("exit", label, None))
        finally:
            where.reset(token)

    def run(self, run: RunInfo) -> Any:
        self.runs.append(run)
        return self._entered(f"run:{run.agent}")

    def model_call(self, call: ModelCallInfo) -> Any:
        self.models.append(call)
        self.request_sizes.append(len(call.request.messages))
        return self._entered(f"model:{call.attempt}")

    def tool_call(self, call: ToolCallInfo) -> Any:
        self.tools.append(call)
        return self._entered(f"tool:{call.call.id}")

    def note(self, note: RunNote) -> None:
        self.notes.append(note)


def agent(script: list[Any], **kwargs: Any) -> al.Agent[Any]:
    kwargs.setdefault("retry_strategy", NO_RETRY_DELAY)
    return al.Agent(model=MODEL, stream_fn=ScriptedStream(script), **kwargs)


async def test_each_hook_is_entered_around_its_part_in_order_with_its_outcome() -> None:
    seen: list[str] = []

    @al.tool
    async def look(term: str) -> str:
        """Look a term up."""
        seen.append(where.get())
        return f"{term}: found"

    rec = Recording()
    usage = al.Usage(input=12, output=3, total=15)
    bot = agent(
        [reply_tool_calls(("look", {"term": "cat"}), usage=usage), reply_text("done")],
        tools=[look],
        name="bot",
        instrumentation=rec,
    )
    result = await bot.prompt("go")
    assert result.output == "done"
    assert rec.log == [
        ("enter", "run:bot", None),
        ("enter", "model:1", None),
        ("exit", "model:1", None),
        ("enter", "tool:call_1", None),
        ("exit", "tool:call_1", None),
        ("enter", "model:1", None),
        ("exit", "model:1", None),
        ("exit", "run:bot", None),
    ]
    # The tool ran in its call's task, inside the run: it saw what both hooks set.
    assert seen == ["run:bot/tool:call_1"]
    (run,) = rec.runs
    assert run.agent == "bot" and run.model == MODEL and run.conversation_id is None
    assert run.result is result
    first, second = rec.models
    assert (first.turn, first.attempt, second.turn) == (0, 1, 1)
    assert first.run is run and first.model == MODEL
    assert first.message is not None and first.message.usage.input == 12
    assert [c.name for c in first.message.tool_calls] == ["look"]
    assert first.first_chunk is not None and first.retry_delay is None
    assert rec.request_sizes == [1, 3]  # the prompt; then its answer and the tool's result
    assert [t.name for t in second.request.tools] == ["look"]
    (tool,) = rec.tools
    assert (tool.turn, tool.call.id, tool.arguments, tool.tool) == (
        0,
        "call_1",
        {"term": "cat"},
        look,
    )
    assert tool.result is not None and al.extract_text(tool.result.content) == "cat: found"
    assert (tool.exception, tool.timed_out, tool.interrupted) == (None, False, False)
    assert rec.notes == []


async def test_a_threaded_tool_sees_its_call_hook_and_a_run_loop_config_works_alike() -> None:
    seen: list[str] = []

    @al.tool
    def blocking(n: int) -> int:
        """Runs in a worker thread."""
        seen.append(where.get())
        return n * 2

    rec = Recording()
    script = [reply_tool_calls(("blocking", {"n": 2}), ("blocking", {"n": 3})), reply_text("ok")]
    cfg = config(script, tools=[blocking], instrumentation=rec, conversation_id="conv-7")
    result = await al.loop.run_loop([al.UserMessage.from_text("go")], al.loop.AgentContext(), cfg)
    assert result.output == "ok"
    assert sorted(seen) == ["run:agent/tool:call_1", "run:agent/tool:call_2"]
    assert rec.runs[0].conversation_id == "conv-7"
    assert sorted(al.extract_text(t.result.content) for t in rec.tools if t.result) == ["4", "6"]


async def test_every_attempt_is_a_model_call_and_the_retried_ones_say_so() -> None:
    rec = Recording()
    bot = agent(
        [reply_error(al.ErrorKind.THROTTLED, "slow down", retry_after=0.01), reply_text("hi")],
        instrumentation=rec,
        retry_strategy=al.retry.ExponentialBackoff(jitter=False, max_attempts=3),
    )
    await bot.prompt("go")
    failed, answered = rec.models
    assert (failed.attempt, answered.attempt) == (1, 2)
    assert failed.message is not None and failed.message.stop_reason is al.StopReason.ERROR
    assert failed.message.error_kind is al.ErrorKind.THROTTLED
    assert failed.retry_delay == pytest.approx(0.01)
    assert answered.message is not None and answered.message.text == "hi"
    assert answered.retry_delay is None


async def test_the_key_never_reaches_the_instrumentation() -> None:
    rec = Recording()

    async def key(provider: str) -> str:
        return "sk-very-secret-key-1234"

    bot = agent(
        [reply_text("hi")],
        instrumentation=rec,
        get_api_key=key,
        stream_options=al.StreamOptions(api_key="sk-configured-key-5678", temperature=0.5),
    )
    await bot.prompt("go")
    (call,) = rec.models
    assert call.options.api_key is None
    assert call.options.temperature == 0.5
    assert bot.stream_fn.calls[0].options.api_key == "sk-very-secret-key-1234"  # type: ignore[attr-defined]


async def test_abort_exits_the_tool_hook_with_the_cancellation_and_the_run_hook_aborted() -> None:
    started = anyio.Event()

    @al.tool
    async def wait() -> str:
        """Waits for ever."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    rec = Recording()
    bot = agent(
        [reply_tool_calls(("wait", {})), reply_text("unused")], tools=[wait], instrumentation=rec
    )
    results: list[al.AgentResult[Any]] = []

    async def run() -> None:
        results.append(await bot.prompt("go", raise_on_error=False))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        bot.abort()
    cancelled = anyio.get_cancelled_exc_class().__name__
    assert ("exit", "tool:call_1", cancelled) in rec.log
    (tool,) = rec.tools
    assert tool.result is None and not tool.interrupted
    (run_info,) = rec.runs
    assert run_info.result is results[0]
    assert run_info.result.stop_reason is al.StopReason.ABORTED
    assert rec.log[-1] == ("exit", "run:agent", None)


async def test_steering_interrupting_a_batch_is_noted_and_the_calls_say_interrupted() -> None:
    steering: list[al.AgentMessage] = []
    release = anyio.Event()

    @al.tool
    async def job(name: str) -> str:
        """A job."""
        if name == "quick":
            await release.wait()
            steering.append(al.UserMessage.from_text("change of plan"))
            return "quick done"
        await anyio.sleep_forever()
        return "never"

    def on_event(event: al.AgentEvent) -> None:
        if isinstance(event, al.ToolExecutionStart) and event.arguments == {"name": "slow"}:
            release.set()

    async def poll() -> list[al.AgentMessage]:
        taken = list(steering)
        steering.clear()
        return taken

    rec = Recording()
    script = [
        reply_tool_calls(("job", {"name": "quick"}), ("job", {"name": "slow"})),
        reply_text("ok"),
    ]
    cfg = config(script, tools=[job], instrumentation=rec, get_steering_messages=poll)
    await al.loop.run_loop(
        [al.UserMessage.from_text("go")], al.loop.AgentContext(), cfg, on_event=on_event
    )
    quick, slow = sorted(rec.tools, key=lambda t: t.call.id)
    assert not quick.interrupted and quick.result is not None
    assert slow.interrupted and slow.result is None
    (note,) = rec.notes
    assert (note.kind, note.cancelled, note.run) == ("steering", 1, rec.runs[0])


async def test_policy_and_approval_verdicts_are_noted() -> None:
    class NoDelete:
        name = "no-delete"

        def evaluate(self, ctx: Any) -> Any:
            return Skip(reason="deleting is not allowed") if ctx.call.name == "delete" else None

    @al.tool
    async def delete(path: str) -> str:
        """Deletes."""
        return "deleted"

    @al.tool
    async def read(path: str) -> str:
        """Reads."""
        return "read"

    async def approval(call: al.ToolCall, tool: Any) -> Any:
        return Rejected(reason="not today")

    rec = Recording()
    bot = agent(
        [reply_tool_calls(("delete", {"path": "a"}), ("read", {"path": "b"})), reply_text("ok")],
        tools=[delete, read],
        instrumentation=rec,
        pre_dispatch_policies=[NoDelete()],
        approval=approval,
    )
    await bot.prompt("go")
    assert [(n.kind, n.slot, n.source, n.verdict, n.reason, n.call_id) for n in rec.notes] == [
        ("verdict", "pre_dispatch", "no-delete", "skip", "deleting is not allowed", "call_1"),
        ("verdict", "approval", "approval", "reject", "not today", "call_2"),
    ]
    assert rec.tools == []  # neither call ran


async def test_a_tool_that_raises_or_times_out_is_told_apart() -> None:
    class Slow(al.Tool):
        name = "slow"
        description = "Too slow."
        parameters: dict[str, Any] = {"type": "object"}  # noqa: RUF012
        timeout = 0.01

        async def execute(self, call_id: str, arguments: Any, on_update: Any) -> al.AgentToolResult:
            await anyio.sleep_forever()
            raise AssertionError

    @al.tool
    async def broken() -> str:
        """Raises."""
        raise ValueError("boom")

    rec = Recording()
    script = [reply_tool_calls(("slow", {}), ("broken", {})), reply_text("ok")]
    await agent(script, tools=[Slow(), broken], instrumentation=rec).prompt("go")
    slow, broken_call = sorted(rec.tools, key=lambda t: t.call.id)
    assert slow.timed_out and slow.exception is None
    assert slow.result is not None and slow.result.is_error
    assert isinstance(broken_call.exception, ValueError) and not broken_call.timed_out
    assert broken_call.result is not None and broken_call.result.is_error


async def test_a_sub_agent_inherits_the_instrumentation_and_nests_in_the_tool_call() -> None:
    seen: list[str] = []

    @al.tool
    async def search(q: str) -> str:
        """Searches."""
        seen.append(where.get())
        return "tides at six"

    rec = Recording()
    researcher = agent(
        [reply_tool_calls(("search", {"q": "tides"})), reply_text("six")],
        tools=[search],
        name="researcher",
    )
    tool = SubAgentTool(researcher, name="research", description="Researches.")
    planner = agent(
        [reply_tool_calls(("research", {"task": "tides?"})), reply_text("at six")],
        tools=[tool],
        name="planner",
        instrumentation=rec,
    )
    await planner.prompt("go")
    assert [r.agent for r in rec.runs] == ["planner", "researcher"]
    assert seen == ["run:planner/tool:call_1/run:researcher/tool:call_1"]
    # The sub-agent's run is entered and exited inside the tool call that started it.
    assert [(kind, label) for kind, label, _ in rec.log] == [
        ("enter", "run:planner"),
        ("enter", "model:1"),
        ("exit", "model:1"),
        ("enter", "tool:call_1"),
        ("enter", "run:researcher"),
        ("enter", "model:1"),
        ("exit", "model:1"),
        ("enter", "tool:call_1"),  # the researcher's own search
        ("exit", "tool:call_1"),
        ("enter", "model:1"),
        ("exit", "model:1"),
        ("exit", "run:researcher"),
        ("exit", "tool:call_1"),
        ("enter", "model:1"),
        ("exit", "model:1"),
        ("exit", "run:planner"),
    ]
    assert researcher.instrumentation is None


async def test_an_agent_with_a_session_reports_it_as_the_conversation(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    info = await store.create(session_id="conv-1")
    rec = Recording()
    bot = agent([reply_text("hi")], instrumentation=rec, session=SessionRecorder(store, info.id))
    await bot.prompt("go")
    assert rec.runs[0].conversation_id == "conv-1"


async def test_declining_a_run_leaves_its_calls_alone() -> None:
    class Declines(Recording):
        def run(self, run: RunInfo) -> Any:
            self.runs.append(run)
            return None

    @al.tool
    async def noop() -> str:
        """Nothing."""
        return ""

    rec = Declines()
    await agent(
        [reply_tool_calls(("noop", {})), reply_text("ok")], tools=[noop], instrumentation=rec
    ).prompt("go")
    assert len(rec.runs) == 1
    assert (rec.models, rec.tools, rec.log) == ([], [], [])


class Broken(Instrumentation):
    """Raises from every hook, on entering or on exiting; tries to swallow what it sees."""

    def __init__(self, on_exit: bool) -> None:
        self.on_exit = on_exit

    @contextmanager
    def _hook(self) -> Iterator[None]:
        if not self.on_exit:
            raise RuntimeError("instrumentation broke on entering")
        try:
            yield
        finally:
            raise RuntimeError("instrumentation broke on exiting")

    def run(self, run: RunInfo) -> Any:
        return self._hook()

    def model_call(self, call: ModelCallInfo) -> Any:
        return self._hook()

    def tool_call(self, call: ToolCallInfo) -> Any:
        return self._hook()

    def note(self, note: RunNote) -> None:
        raise RuntimeError("instrumentation broke on a note")


@pytest.mark.parametrize("on_exit", [False, True], ids=["on-enter", "on-exit"])
async def test_a_failing_instrumentation_never_fails_the_run(
    on_exit: bool, caplog: pytest.LogCaptureFixture
) -> None:
    @al.tool
    async def noop() -> str:
        """Nothing."""
        return "fine"

    class Stops:
        def evaluate(self, ctx: Any) -> Any:
            return Skip(reason="no")

    bot = agent(
        [reply_tool_calls(("noop", {})), reply_text("ok")],
        tools=[noop],
        instrumentation=Broken(on_exit),
        pre_dispatch_policies=[Stops()] if on_exit else [],
    )
    with caplog.at_level(logging.ERROR, logger="agentloop"):
        result = await bot.prompt("go")
    assert result.output == "ok"
    assert result.stop_reason is al.StopReason.STOP
    assert any("instrumentation" in r.getMessage() for r in caplog.records)


async def test_an_instrumentation_cannot_swallow_an_abort() -> None:
    started = anyio.Event()

    class Swallows(Instrumentation):
        def tool_call(self, call: ToolCallInfo) -> Any:
            return SuppressesEverything()

    @al.tool
    async def wait() -> str:
        """Waits."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    bot = agent(
        [reply_tool_calls(("wait", {})), reply_text("no")], tools=[wait], instrumentation=Swallows()
    )
    results: list[al.AgentResult[Any]] = []

    async def run() -> None:
        results.append(await bot.prompt("go", raise_on_error=False))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        bot.abort()
    assert results[0].stop_reason is al.StopReason.ABORTED


class SuppressesEverything:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


async def test_a_subclass_writing_only_the_tool_hook_gets_it_called() -> None:
    seen: list[str] = []

    class ToolsOnly(Instrumentation):
        @contextmanager
        def tool_call(self, call: ToolCallInfo) -> Iterator[None]:
            yield
            seen.append(call.call.name)

    @al.tool
    async def noop() -> str:
        """Nothing."""
        return ""

    script = [reply_tool_calls(("noop", {})), reply_text("ok")]
    await agent(script, tools=[noop], instrumentation=ToolsOnly()).prompt("go")
    assert seen == ["noop"]
