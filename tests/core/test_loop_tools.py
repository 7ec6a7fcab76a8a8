"""Tool batches: concurrency, strategies, steering, validation, failures, approval."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import Recorder, config, paired, results_of

if TYPE_CHECKING:
    from collections.abc import Sequence

pytestmark = pytest.mark.anyio

STEERING = "tool call cancelled: user requested steering interrupt"
CHANGE_OF_PLAN = f"{STEERING}: 'change of plan'"


def prompt() -> list[al.AgentMessage]:
    return [al.UserMessage.from_text("go")]


async def test_a_batch_runs_all_at_once() -> None:
    n = 5
    arrived = 0
    everyone = anyio.Event()

    @al.tool
    async def meet(i: int) -> str:
        """Wait until every call of the batch is running."""
        nonlocal arrived
        arrived += 1
        if arrived == n:
            everyone.set()
        with anyio.fail_after(30):  # a hang bound, not a timing assertion
            await everyone.wait()
        return f"met {i}"

    script = [reply_tool_calls(*[("meet", {"i": i}) for i in range(n)]), reply_text("ok")]
    result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), config(script, tools=[meet]))
    assert [r.text for r in results_of(result.messages)] == [f"met {i}" for i in range(n)]
    assert not any(r.is_error for r in results_of(result.messages))


async def test_each_call_is_a_task_of_its_own_in_one_task_group_per_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A run opens one task group for its calls, at its first batch, and keeps it for the later
    # ones (a task group per batch cost about ten microseconds a turn); a run that calls no
    # tool opens none. Every call is still a task of its own, a child of the run's task.
    opened: list[int] = []
    real = anyio.create_task_group

    def counting() -> Any:
        opened.append(1)
        return real()

    monkeypatch.setattr(anyio, "create_task_group", counting)
    run_task = 0
    call_tasks: list[int] = []

    @al.tool
    async def where() -> str:
        """Note the task running this call."""
        call_tasks.append(anyio.get_current_task().id)
        return "ok"

    def note_run_task(event: al.AgentEvent) -> None:
        nonlocal run_task
        if isinstance(event, al.AgentStart):
            run_task = anyio.get_current_task().id

    batch = reply_tool_calls(("where", {}), ("where", {}))
    script = [batch, batch, batch, reply_text("done")]
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[where]), on_event=note_run_task
    )
    assert result.stop_reason is al.StopReason.STOP
    assert len(opened) == 1
    assert len(call_tasks) == 6
    # Ids of tasks alive at once differ (trio's are reused once a task is gone): the two
    # calls of each batch, and the run's own task, which outlives them all.
    assert all(call_tasks[i] != call_tasks[i + 1] for i in range(0, 6, 2))
    assert run_task not in call_tasks

    opened.clear()
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config([reply_text("no tools")], tools=[where])
    )
    assert result.output == "no tools"
    assert opened == []


async def test_sequential_strategy_runs_in_call_order() -> None:
    order: list[str] = []
    active = 0

    @al.tool
    async def step(name: str) -> str:
        """One step."""
        nonlocal active
        active += 1
        assert active == 1
        order.append(f"start {name}")
        await anyio.lowlevel.checkpoint()
        order.append(f"end {name}")
        active -= 1
        return name

    script = [reply_tool_calls(*[("step", {"name": c}) for c in "abc"]), reply_text("ok")]
    await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[step], tool_execution="sequential")
    )
    assert order == ["start a", "end a", "start b", "end b", "start c", "end c"]


async def test_partition_strategy_runs_groups_in_order() -> None:
    seen: list[set[str]] = []
    current: set[str] = set()

    @al.tool
    async def work(name: str) -> str:
        """Work."""
        current.add(name)
        seen.append(set(current))
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        current.discard(name)
        return name

    def partition(calls: Sequence[al.ToolCall]) -> list[list[int]]:
        # Reads first, together; then the write alone.
        reads = [i for i, c in enumerate(calls) if c.arguments["name"].startswith("r")]
        writes = [i for i, c in enumerate(calls) if not c.arguments["name"].startswith("r")]
        return [reads, writes]

    script = [
        reply_tool_calls(
            ("work", {"name": "w1"}), ("work", {"name": "r1"}), ("work", {"name": "r2"})
        ),
        reply_text("ok"),
    ]
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[work], tool_execution=partition)
    )
    assert {"r1", "r2"} in seen
    assert all("w1" not in s or s == {"w1"} for s in seen)
    assert seen[-1] == {"w1"}
    # Results still follow the call order.
    assert [r.text for r in results_of(result.messages)] == ["w1", "r1", "r2"]


async def test_capacity_limiter_caps_concurrency() -> None:
    active = peak = 0

    @al.tool
    async def busy() -> str:
        """Busy."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        active -= 1
        return "ok"

    script = [reply_tool_calls(*[("busy", {}) for _ in range(6)]), reply_text("ok")]
    await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[busy], max_concurrent_tools=2)
    )
    assert peak == 2


async def test_steering_cancels_the_rest_of_the_batch() -> None:
    release_first = anyio.Event()
    cancelled: list[str] = []
    steering: list[al.AgentMessage] = []

    @al.tool
    async def job(name: str) -> str:
        """A job."""
        if name == "first":
            await release_first.wait()
            steering.append(al.UserMessage.from_text("change of plan"))
            return "first done"
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(name)
            raise
        return "unreachable"

    async def poll_steering() -> list[al.AgentMessage]:
        taken = list(steering)
        steering.clear()
        return taken

    def release(event: al.AgentEvent) -> None:
        if isinstance(event, al.ToolExecutionStart) and event.arguments == {"name": "third"}:
            release_first.set()

    stream = ScriptedStream(
        [
            reply_tool_calls(
                ("job", {"name": "first"}), ("job", {"name": "second"}), ("job", {"name": "third"})
            ),
            reply_text("adjusted"),
        ]
    )
    rec = Recorder(release)
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(stream, tools=[job], get_steering_messages=poll_steering),
        on_event=rec,
    )
    results = results_of(result.messages)
    assert [r.text for r in results] == ["first done", CHANGE_OF_PLAN, CHANGE_OF_PLAN]
    assert [r.is_error for r in results] == [False, True, True]
    assert sorted(cancelled) == ["second", "third"]
    turn_ends = rec.of(al.TurnEnd)
    assert turn_ends[0].reason is al.TurnEndReason.STEERING_INTERRUPT
    # The steering message starts the next turn, after the results.
    second_request = stream.calls[1].context.messages
    assert isinstance(second_request[-1], al.UserMessage)
    assert second_request[-1].content[0].text == "change of plan"  # type: ignore[union-attr]
    assert result.text == "adjusted"
    assert paired(result.messages)
    ends = rec.of(al.ToolExecutionEnd)
    assert [e.result.content[0].text for e in ends if e.is_error] == [
        CHANGE_OF_PLAN,
        CHANGE_OF_PLAN,
    ]


async def test_steering_before_a_later_group_starts_it_never_runs() -> None:
    ran: list[int] = []
    queue: list[al.AgentMessage] = [al.UserMessage.from_text("stop that")]

    @al.tool
    async def step(i: int) -> str:
        """Step."""
        ran.append(i)
        return str(i)

    async def poll() -> list[al.AgentMessage]:
        taken = list(queue)
        queue.clear()
        return taken

    script = [reply_tool_calls(*[("step", {"i": i}) for i in range(3)]), reply_text("ok")]
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(
            script,
            tools=[step],
            tool_execution="sequential",
            get_steering_messages=poll,
            steering_interrupt="after_call",  # polled when step 0 ends
        ),
    )
    assert ran == [0]
    stopped = f"{STEERING}: 'stop that'"
    assert [r.text for r in results_of(result.messages)] == ["0", stopped, stopped]


async def test_invalid_arguments_never_reach_execute() -> None:
    calls: list[Any] = []

    @al.tool
    async def typed(count: int) -> str:
        """Typed."""
        calls.append(count)
        return "ran"

    class Schema(al.Tool):
        name = "schema"
        description = "raw schema"
        parameters = {  # noqa: RUF012
            "type": "object",
            "properties": {"path": {"type": "string", "minLength": 1}},
            "required": ["path"],
        }

        async def execute(
            self, call_id: str, arguments: Any, on_update: al.abc.OnUpdate
        ) -> al.AgentToolResult:
            calls.append(arguments)
            return al.AgentToolResult.text("ran")

    script = [
        reply_tool_calls(
            ("typed", {"count": "three"}),
            ("typed", {}),
            ("typed", [1, 2]),
            ("schema", {"path": ""}),
            ("schema", "not an object"),
            ("typed", {"count": 3}),
        ),
        reply_text("ok"),
    ]
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[typed, Schema()])
    )
    results = results_of(result.messages)
    assert calls == [3]
    assert [r.is_error for r in results] == [True, True, True, True, True, False]
    assert all("invalid arguments" in r.text for r in results[:5])
    assert "JSON object" in results[2].text and "JSON object" in results[4].text
    assert "int" in results[0].text


async def test_a_protocol_tool_without_a_validator_is_checked_against_its_schema() -> None:
    # A tool that only follows the protocol (no ``validate_arguments``, not an ``al.Tool``):
    # the loop checks its arguments against ``parameters``, in every turn of the run.
    calls: list[Any] = []

    class Bare:
        name = "bare"
        label = "bare"
        description = "a bare protocol tool"
        parameters: dict[str, Any] = {  # noqa: RUF012
            "type": "object",
            "properties": {"path": {"type": "string", "minLength": 1}},
            "required": ["path"],
        }
        requires_approval = False
        read_only = True

        async def execute(
            self, call_id: str, arguments: Any, on_update: al.abc.OnUpdate
        ) -> al.AgentToolResult:
            calls.append(arguments)
            return al.AgentToolResult.text("ran")

    assert isinstance(Bare(), al.AgentTool) and not hasattr(Bare(), "validate_arguments")
    script = [
        reply_tool_calls(("bare", {"path": ""}), ("bare", {"path": "a"})),
        reply_tool_calls(("bare", {}), ("bare", {"path": "b"})),
        reply_text("ok"),
    ]
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[Bare()])
    )
    results = results_of(result.messages)
    assert calls == [{"path": "a"}, {"path": "b"}]
    assert [r.is_error for r in results] == [True, False, True, False]
    assert all(r.text.startswith("invalid arguments for tool 'bare'") for r in results[::2])


async def test_bad_calls_from_the_model_are_answered() -> None:
    calls = [
        al.ToolCall(id="", name="echo", arguments={"text": "no id"}),
        al.ToolCall(id="dup", name="echo", arguments={"text": "one"}),
        al.ToolCall(id="dup", name="echo", arguments={"text": "two"}),
        al.ToolCall(id="x", name="nope", arguments={}),
    ]

    @al.tool
    async def echo(text: str) -> str:
        """Echo."""
        return text

    stream = ScriptedStream([reply_tool_calls(*calls), reply_text("ok")])
    result = await al.loop.run_loop(prompt(), al.loop.AgentContext(), config(stream, tools=[echo]))
    assistant = result.messages[1]
    assert isinstance(assistant, al.AssistantMessage)
    ids = [c.id for c in assistant.tool_calls]
    assert len(set(ids)) == 4 and "" not in ids and ids[1] == "dup" and ids[3] == "x"
    results = results_of(result.messages)
    assert [r.tool_call_id for r in results] == ids
    assert [r.text for r in results[:3]] == ["no id", "one", "two"]
    assert "unknown tool 'nope'" in results[3].text and "echo" in results[3].text
    assert paired(result.messages)
    # The provider saw the corrected ids, each answered.
    sent = stream.calls[1].context.messages
    assert [m.tool_call_id for m in sent if isinstance(m, al.ToolResultMessage)] == ids


async def test_raising_tool_timeout_and_wrong_return_type() -> None:
    @al.tool
    async def boom() -> str:
        """Fails."""
        raise ValueError("kaput")

    @al.tool
    async def slow() -> str:
        """Too slow."""
        await anyio.sleep_forever()
        return ""

    class Wrong(al.Tool):
        name = "wrong"

        async def execute(
            self, call_id: str, arguments: Any, on_update: al.abc.OnUpdate
        ) -> al.AgentToolResult:
            return "a plain string"  # type: ignore[return-value]

    rec = Recorder()
    script = [reply_tool_calls(("boom", {}), ("slow", {}), ("wrong", {})), reply_text("ok")]
    result = await al.loop.run_loop(
        prompt(),
        al.loop.AgentContext(),
        config(script, tools=[boom, slow, Wrong()], tool_timeout=0.05),
        on_event=rec,
    )
    texts = [r.text for r in results_of(result.messages)]
    assert texts[0] == "tool 'boom' failed: ValueError: kaput"
    assert texts[1] == "tool call timed out after 0.05 seconds"
    assert "returned str" in texts[2]
    assert result.text == "ok"
    assert isinstance(rec.events[-1], al.AgentEnd)


async def test_tool_updates_become_events() -> None:
    @al.tool
    async def progress(ctx: al.ToolContext[Any]) -> str:
        """Reports progress."""
        ctx.on_update("half")
        ctx.on_update(al.AgentToolResult.text("almost"))
        return "done"

    rec = Recorder()
    script = [reply_tool_calls(("progress", {})), reply_text("ok")]
    await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[progress]), on_event=rec
    )
    updates = rec.of(al.ToolExecutionUpdate)
    assert [(u.call_id, u.name, u.update.content[0].text) for u in updates] == [
        ("call_1", "progress", "half"),
        ("call_1", "progress", "almost"),
    ]
    assert "ctx" not in progress.parameters["properties"]


async def test_slow_stream_consumer_never_blocks_a_tool_and_updates_coalesce() -> None:
    n_updates = 2000
    tool_done = anyio.Event()

    @al.tool
    async def chatty(ctx: al.ToolContext[Any]) -> str:
        """Many updates."""
        for i in range(n_updates):
            ctx.on_update(str(i))
        tool_done.set()
        return "done"

    script = [reply_tool_calls(("chatty", {})), reply_text("ok")]
    updates: list[str] = []
    async with al.loop.agent_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[chatty])
    ) as events:
        async for event in events:
            if isinstance(event, al.ToolExecutionStart):
                # The consumer stalls until the tool has finished: the tool never waited on it.
                with anyio.fail_after(30):
                    await tool_done.wait()
            if isinstance(event, al.ToolExecutionUpdate):
                updates.append(event.update.content[0].text)  # type: ignore[union-attr]
    assert updates[-1] == str(n_updates - 1)  # the newest update always arrives
    assert len(updates) < n_updates  # older ones coalesced away
    assert updates == sorted(updates, key=int)  # in order
    assert events.result.text == "ok"


async def test_approval_rejects_rewrites_and_survives_a_raising_callback() -> None:
    got: list[Any] = []

    @al.tool
    async def act(value: int) -> str:
        """Act."""
        got.append(value)
        return str(value)

    async def approve(call: al.ToolCall, tool: al.AgentTool | None) -> al.policy.ApprovalDecision:
        value = call.arguments["value"]
        if value == 1:
            return al.policy.APPROVED
        if value == 2:
            return al.policy.Rejected(reason="not today")
        if value == 3:
            return al.policy.ApprovedWith(arguments={"value": 30})
        raise RuntimeError("approval UI crashed")

    script = [reply_tool_calls(*[("act", {"value": v}) for v in (1, 2, 3, 4)]), reply_text("ok")]
    result = await al.loop.run_loop(
        prompt(), al.loop.AgentContext(), config(script, tools=[act], approval=approve)
    )
    texts = [r.text for r in results_of(result.messages)]
    assert sorted(got) == [1, 30]
    assert texts[0] == "1"
    assert texts[1] == "tool call rejected: not today"
    assert texts[2] == "30"
    assert texts[3].startswith("tool call rejected: approval failed: RuntimeError")
    assert result.text == "ok"
