"""What a run does when application code fails: tools, hooks and guard policies.

Regression tests for the core-edges issue, items 4-6: a non-``Exception`` still lets the run
end with complete events before it propagates as itself; a failing hook reaches the result under
its own error class with the same text on both backends; a guard that crashes denies.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import MODEL, Recorder, config, paired, results_of

pytestmark = pytest.mark.anyio


def prompt() -> list[al.AgentMessage]:
    return [al.UserMessage.from_text("go")]


def two_tools(exc: BaseException) -> list[al.AgentTool]:
    @al.tool
    async def explode() -> str:
        """Raise something that is not an ``Exception``."""
        raise exc

    @al.tool
    async def wait_forever() -> str:
        """Run until cancelled."""
        await anyio.sleep_forever()
        return "never"

    return [explode, wait_forever]


def assert_complete(events: list[al.AgentEvent]) -> None:
    """Every started call ended, every turn ended, and the run's last event is ``AgentEnd``."""
    started = [e.call_id for e in events if isinstance(e, al.ToolExecutionStart)]
    ended = [e.call_id for e in events if isinstance(e, al.ToolExecutionEnd)]
    assert sorted(started) == sorted(ended)
    turns = [e for e in events if isinstance(e, al.TurnStart | al.TurnEnd)]
    assert [type(e).__name__ for e in turns] == ["TurnStart", "TurnEnd"] * (len(turns) // 2)
    assert isinstance(events[-1], al.AgentEnd)
    assert sum(isinstance(e, al.AgentEnd) for e in events) == 1
    assert paired(events[-1].messages)


# ---------------------------------------------------------------- item 4: BaseException


@pytest.mark.parametrize("exc_type", [SystemExit, KeyboardInterrupt])
async def test_a_base_exception_in_a_tool_ends_the_run_then_propagates_as_itself(
    exc_type: type[BaseException],
) -> None:
    raised = exc_type(3)
    script = [reply_tool_calls(("explode", {}), ("wait_forever", {})), reply_text("never")]
    rec = Recorder()
    with pytest.raises(exc_type) as info:
        await al.loop.run_loop(
            prompt(), al.loop.AgentContext(), config(script, tools=two_tools(raised)), on_event=rec
        )
    assert info.value is raised
    assert_complete(rec.events)
    ends = rec.of(al.ToolExecutionEnd)
    assert {e.name for e in ends} == {"explode", "wait_forever"}
    assert all(e.is_error for e in ends)


async def test_a_base_exception_in_a_tool_propagates_from_an_agent_stream() -> None:
    raised = SystemExit(2)
    script = [reply_tool_calls(("explode", {}), ("wait_forever", {})), reply_text("never")]
    agent = al.Agent(model=MODEL, stream_fn=ScriptedStream(script), tools=two_tools(raised))
    seen: list[al.AgentEvent] = []

    async def consume() -> None:
        async with agent.stream("go") as events:
            async for event in events:
                seen.append(event)

    with pytest.raises(SystemExit) as info:
        await consume()
    assert info.value is raised
    assert_complete(seen)
    assert paired(agent.messages)
    assert not agent.is_running


async def test_a_base_exception_in_a_hook_ends_the_run_then_propagates() -> None:
    raised = KeyboardInterrupt()

    def transform(messages: list[al.AgentMessage], ctx: al.loop.TransformContext) -> Any:
        raise raised

    agent = al.Agent(
        model=MODEL, stream_fn=ScriptedStream([reply_text("x")]), transform_context=transform
    )
    rec = Recorder()
    agent.subscribe(rec)
    with pytest.raises(KeyboardInterrupt) as info:
        await agent.prompt("go")
    assert info.value is raised
    assert_complete(rec.events)
    assert not agent.is_running


async def test_a_base_exception_in_the_steering_hook_during_a_batch_propagates() -> None:
    raised = SystemExit(5)

    async def steering() -> list[al.AgentMessage]:
        raise raised

    @al.tool
    async def fine() -> str:
        """Succeed."""
        return "ok"

    script = [reply_tool_calls(("fine", {})), reply_text("never")]
    rec = Recorder()
    with pytest.raises(SystemExit) as info:
        await al.loop.run_loop(
            prompt(),
            al.loop.AgentContext(),
            config(script, tools=[fine], get_steering_messages=steering),
            on_event=rec,
        )
    assert info.value is raised
    assert_complete(rec.events)


# ---------------------------------------------------------------- item 5: hook failures


async def _steering_fails(messages: Any = None) -> list[al.AgentMessage]:
    raise ValueError("queue is broken")


@al.tool
async def ok_tool() -> str:
    """Succeed."""
    return "ok"


async def test_a_failing_steering_hook_inside_a_batch_names_the_hook() -> None:
    script = [reply_tool_calls(("ok_tool", {})), reply_text("never")]
    rec = Recorder()
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(script, tools=[ok_tool], get_steering_messages=_steering_fails),
        on_event=rec,
    )
    assert result.stop_reason is al.StopReason.ERROR
    assert result.error == "get_steering_messages raised ValueError: queue is broken"
    assert result.error_kind is al.ErrorKind.HOOK
    with pytest.raises(al.HookFailed, match="get_steering_messages raised ValueError"):
        result.raise_for_error()
    assert_complete(rec.events)
    assert "ExceptionGroup" not in (result.error or "")


@pytest.mark.parametrize(
    ("hook", "kwargs"),
    [
        ("system_prompt", {"system_prompt": lambda: 1 / 0}),
        ("transform_context", {"transform_context": lambda m, c: 1 / 0}),
        ("convert_to_llm", {"convert_to_llm": lambda m: 1 / 0}),
        ("get_follow_up_messages", {"get_follow_up_messages": lambda: _async_fail()}),
        ("get_api_key", {"get_api_key": lambda provider: _async_fail()}),
    ],
)
async def test_every_failing_hook_is_named_in_the_result(hook: str, kwargs: Any) -> None:
    rec = Recorder()
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config([reply_text("fine")], **kwargs), on_event=rec
    )
    assert result.stop_reason is al.StopReason.ERROR
    assert result.error_kind is al.ErrorKind.HOOK
    assert result.error is not None
    assert result.error.startswith(f"{hook} raised ZeroDivisionError")
    assert_complete(rec.events)


async def _async_fail() -> Any:
    return 1 / 0


async def test_a_hook_failure_through_an_event_stream_is_unwrapped() -> None:
    script = [reply_tool_calls(("ok_tool", {})), reply_text("never")]
    cfg = config(script, tools=[ok_tool], get_steering_messages=_steering_fails)
    async with al.loop.agent_loop(prompt(), al.loop.AgentContext(), cfg) as events:
        async for _ in events:
            pass
    assert events.result.error == "get_steering_messages raised ValueError: queue is broken"


# ---------------------------------------------------------------- item 6: guards fail closed


class Crashing:
    name = "deny-list"

    def evaluate(self, ctx: Any) -> Any:
        raise RuntimeError("rules file unreadable")


class CrashingOpen(Crashing):
    name = "audit"
    fail_open = True


async def test_a_crashing_pre_dispatch_policy_rejects_the_call() -> None:
    ran: list[str] = []

    @al.tool
    async def rm(path: str) -> str:
        """Remove a file."""
        ran.append(path)
        return "removed"

    script = [reply_tool_calls(("rm", {"path": "/etc/passwd"})), reply_text("ok")]
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(script, tools=[rm], pre_dispatch_policies=[Crashing()]),
    )
    assert ran == []
    [res] = results_of(result.messages)
    assert res.is_error
    assert res.text == (
        "tool call rejected: policy 'deny-list' failed: RuntimeError: rules file unreadable"
    )
    assert result.text == "ok"  # the run goes on; the model reads the rejection


async def test_a_fail_open_pre_dispatch_policy_passes_when_it_crashes() -> None:
    ran: list[str] = []

    @al.tool
    async def rm(path: str) -> str:
        """Remove a file."""
        ran.append(path)
        return "removed"

    script = [reply_tool_calls(("rm", {"path": "x"})), reply_text("ok")]
    await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(script, tools=[rm], pre_dispatch_policies=[CrashingOpen()]),
    )
    assert ran == ["x"]


@pytest.mark.parametrize("slot", ["pre_turn", "post_turn", "post_loop"])
async def test_a_crashing_turn_policy_ends_the_run_with_an_error_naming_it(slot: str) -> None:
    script = [reply_tool_calls(("ok_tool", {})), reply_text("fine")]
    rec = Recorder()
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(script, tools=[ok_tool], **{f"{slot}_policies": [Crashing()]}),
        on_event=rec,
    )
    label = slot.replace("_", "-")
    assert result.stop_reason is al.StopReason.ERROR
    assert result.error_kind is al.ErrorKind.HOOK
    assert result.error == (
        f"{label} policy 'deny-list' raised RuntimeError: rules file unreadable"
    )
    assert_complete(rec.events)


@pytest.mark.parametrize("slot", ["pre_turn", "post_turn", "post_loop"])
async def test_a_fail_open_turn_policy_counts_as_continue(slot: str) -> None:
    script = [reply_tool_calls(("ok_tool", {})), reply_text("fine")]
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(script, tools=[ok_tool], **{f"{slot}_policies": [CrashingOpen()]}),
    )
    assert result.stop_reason is al.StopReason.STOP
    assert result.text == "fine"


# ---------------------------------------------------------------- inside the run's task group


@pytest.mark.parametrize(
    "raised", [ValueError("broken"), KeyboardInterrupt()], ids=["Exception", "KeyboardInterrupt"]
)
async def test_a_failure_after_the_first_batch_reaches_the_caller_as_itself(
    raised: BaseException,
) -> None:
    # The turns after a run's first batch of calls run inside the task group of its calls:
    # what a hook raises there still ends the run with complete events and comes out as
    # itself (a named hook failure in the result, or the KeyboardInterrupt), never in a group.
    requests = 0

    def transform(messages: list[al.AgentMessage], ctx: al.loop.TransformContext) -> Any:
        nonlocal requests
        requests += 1
        if requests == 2:
            raise raised
        return messages

    script = [reply_tool_calls(("ok_tool", {})), reply_text("never")]
    cfg = config(script, tools=[ok_tool], transform_context=transform)
    rec = Recorder()
    if isinstance(raised, Exception):
        result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), cfg, on_event=rec)
        assert result.error == "transform_context raised ValueError: broken"
        assert result.error_kind is al.ErrorKind.HOOK
    else:
        with pytest.raises(KeyboardInterrupt) as info:
            await al.loop.run_loop(prompt(), al.loop.AgentContext(), cfg, on_event=rec)
        assert info.value is raised
    assert requests == 2
    assert [e.name for e in rec.of(al.ToolExecutionEnd)] == ["ok_tool"]
    assert_complete(rec.events)


async def test_a_loop_failure_while_a_call_still_runs_cancels_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The last line of defence: should the loop itself fail while a task of the run's task
    # group still runs, that task is cancelled and the run ends as an error (no hang, nothing
    # left running). A batch always waits for its calls, so a fault is injected to get there.
    from agentloop import _dispatch

    lingering = anyio.Event()
    cancelled = anyio.Event()

    async def linger() -> None:
        try:
            lingering.set()
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    async def failing_execute(self: Any, ready: Any) -> None:
        self.run.tasks.start_soon(linger)
        await lingering.wait()
        raise RuntimeError("a bug")

    monkeypatch.setattr(_dispatch.Batch, "execute", failing_execute)
    script = [reply_tool_calls(("ok_tool", {})), reply_text("never")]
    with anyio.fail_after(10):
        result = await al.loop.run_loop(
            prompt(), al.loop.AgentContext(), config(script, tools=[ok_tool])
        )
    assert result.error == "agent loop failed: RuntimeError: a bug"
    assert result.stop_reason is al.StopReason.ERROR
    assert cancelled.is_set()
