"""An ``Agent`` driven by a hypothesis state machine keeps its own invariants.

The agent runs on an event loop in a blocking portal (one per backend); the machine's rules
call into it from the test thread: prompt, steer, follow_up, abort, pause, subscribe (a
well-behaved or a failing subscriber), unsubscribe, reset, checkpoint/restore, and ``advance``,
which lets
a blocked model call or tool go on. The fake model and the ``wait`` tool block on a ``Gate``,
so a run only moves when the machine says so and every rule ends in a settled state: the run
is blocked at the gate or over (``settle`` counts checkpoints, it never sleeps).

Invariants, checked after every rule:

* never two runs at once (a second prompt raises ``AlreadyRunning``; AgentStart/AgentEnd
  alternate);
* queue contents conserved: every steering and follow-up message is queued or in the history,
  never both, never twice, and once the agent is idle, in exactly one of them;
* the history is always well paired (while a batch runs, its results may still be missing);
* the history is exactly the messages committed by the runs' events;
* an abort ends the run at once; a pause returns once the run has stopped, with the state it
  stopped in; nothing keeps running when the agent is idle.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    precondition,
    rule,
)

import agentloop as al

from .checks import paired
from .fakes import MODEL, Tracker, ZeroDelayRetry
from .profiles import CONFORMANCE
from .runner import texts

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import AsyncIterator

SETTLE_STEPS = 20
SETTLE_LIMIT = 5000


class Gate:
    """Where the fake model and the ``wait`` tool block until the machine releases them."""

    def __init__(self) -> None:
        self.waiters: deque[anyio.Event] = deque()

    async def wait(self) -> None:
        event = anyio.Event()
        self.waiters.append(event)
        try:
            await event.wait()
        finally:
            if event in self.waiters:
                self.waiters.remove(event)

    def release_one(self) -> bool:
        if not self.waiters:
            return False
        self.waiters.popleft().set()
        return True


class GatedModel:
    """A ``StreamFn`` that waits at the gate, then streams the next planned reply."""

    def __init__(self, gate: Gate, tracker: Tracker) -> None:
        self.gate = gate
        self.tracker = tracker
        self.replies: deque[al.AssistantMessage] = deque()
        self.calls = 0

    def __call__(
        self, model: al.ModelSpec, context: al.stream.LlmContext, options: al.StreamOptions
    ) -> AsyncIterator[al.stream.AssistantMessageEvent]:
        self.calls += 1
        reply = (
            self.replies.popleft()
            if self.replies
            else al.AssistantMessage(content=[al.Text(text="done")])
        )
        return self._play(reply, self.calls)

    async def _play(
        self, reply: al.AssistantMessage, n: int
    ) -> AsyncIterator[al.stream.AssistantMessageEvent]:
        from agentloop.testing import events_for

        token = self.tracker.enter("stream")
        try:
            await self.gate.wait()
            for event in events_for(reply, chunk_size=3):
                await anyio.lowlevel.checkpoint()
                if isinstance(event, al.stream.ToolCallStart):
                    event = al.stream.ToolCallStart(
                        index=event.index, id=f"m{n}_{event.id}", name=event.name
                    )
                yield event
        finally:
            self.tracker.exit(token)


class GatedTool(al.Tool):
    """``wait`` blocks at the gate; ``ok`` finishes at once with one update."""

    parameters = {"type": "object", "properties": {}}  # noqa: RUF012

    def __init__(self, name: str, gate: Gate, tracker: Tracker) -> None:
        self.name = name
        self.label = name
        self.description = name
        self.gate = gate
        self.tracker = tracker

    async def execute(
        self, call_id: str, arguments: Any, on_update: al.abc.OnUpdate
    ) -> al.AgentToolResult:
        token = self.tracker.enter(f"tool {call_id}")
        try:
            on_update("working")
            if self.name == "wait":
                await self.gate.wait()
            return al.AgentToolResult.text(f"{call_id} done")
        finally:
            self.tracker.exit(token)


REPLIES = st.lists(
    st.one_of(
        st.builds(
            lambda t: al.AssistantMessage(content=[al.Text(text=t)]), st.sampled_from(["a", "b"])
        ),
        st.lists(st.sampled_from(["ok", "wait"]), min_size=1, max_size=3).map(
            lambda names: al.AssistantMessage(
                content=[
                    al.ToolCall(id=f"c{i}", name=name, arguments={}) for i, name in enumerate(names)
                ],
                stop_reason=al.StopReason.TOOL_USE,
            )
        ),
        st.just(
            al.AssistantMessage(
                stop_reason=al.StopReason.ERROR,
                error_kind=al.ErrorKind.AUTH,
                error_message="denied",
            )
        ),
    ),
    max_size=3,
)


class AgentMachine(RuleBasedStateMachine):
    backend = "asyncio"
    subscriptions = Bundle("subscriptions")

    def __init__(self) -> None:
        super().__init__()
        self._portal_cm = anyio.from_thread.start_blocking_portal(self.backend)
        self.portal = self._portal_cm.__enter__()
        self.tracker = Tracker()
        self.gate = Gate()
        self.model = GatedModel(self.gate, self.tracker)
        self.tools = [GatedTool(n, self.gate, self.tracker) for n in ("ok", "wait")]
        self.agent = self._new_agent()
        self.future: concurrent.futures.Future[al.AgentResult] | None = None
        self.pausing: concurrent.futures.Future[al.Checkpoint] | None = None
        self.counter = 0
        self.steered: list[str] = []
        self.followed: list[str] = []
        self.committed: list[al.AgentMessage] = []
        self.active_runs = 0
        self.raised: set[int] = set()
        self.generation = 0
        self.initial: list[al.AgentMessage] = []
        self._subscribe_recorder()

    def _new_agent(self, checkpoint: al.Checkpoint | None = None) -> al.Agent:
        options: dict[str, Any] = {"retry_strategy": ZeroDelayRetry(), "raise_on_error": False}
        if checkpoint is not None:
            return al.Agent.from_checkpoint(
                checkpoint, tools=self.tools, stream_fn=self.model, **options
            )
        return al.Agent(model=MODEL, stream_fn=self.model, tools=self.tools, **options)

    def _subscribe_recorder(self) -> None:
        def record(event: al.AgentEvent) -> None:
            if isinstance(event, al.AgentStart):
                self.active_runs += 1
                assert self.active_runs == 1, "two runs at once"
            elif isinstance(event, al.AgentEnd):
                self.active_runs -= 1
            elif isinstance(event, al.MessageEnd):
                self.committed.append(event.message)

        self.portal.call(self.agent.subscribe, record)

    # ---------------------------------------------------------------- helpers

    def _unique(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"

    @property
    def running(self) -> bool:
        return self.future is not None and not self.future.done()

    async def _settle(self) -> None:
        """Checkpoint until the run is over or all its work waits at the gate, stably."""
        stable = 0
        for _ in range(SETTLE_LIMIT):
            await anyio.lowlevel.checkpoint()
            live = len(self.tracker.live)
            idle = not self.agent.is_running and live == 0
            blocked = self.agent.is_running and live > 0 and len(self.gate.waiters) == live
            stable = stable + 1 if idle or blocked else 0
            if stable >= SETTLE_STEPS:
                return
        raise AssertionError("the agent did not settle")

    def settle(self) -> None:
        self.portal.call(self._settle)
        if self.future is not None and self.future.done():
            result = self.future.result()  # failures are data (raise_on_error=False)
            assert isinstance(result, al.AgentResult)
        if self.pausing is not None and self.pausing.done():
            # A pause returns once the run has stopped, with the state it stopped in.
            checkpoint = self.pausing.result()
            self.pausing = None
            assert not self.running
            assert al.encode(checkpoint) == al.encode(self.portal.call(self.agent.checkpoint))

    # ---------------------------------------------------------------- rules

    @rule(replies=REPLIES)
    def prompt(self, replies: list[al.AssistantMessage]) -> None:
        text = self._unique("prompt")
        if self.running:
            with pytest.raises(al.AlreadyRunning):
                self.portal.call(self.agent.prompt, text)
            return
        self.model.replies.extend(replies)
        self.future = self.portal.start_task_soon(self.agent.prompt, text)
        self.settle()

    @rule()
    def steer(self) -> None:
        text = self._unique("steer")
        self.steered.append(text)
        self.portal.call(self.agent.steer, text)
        self.settle()

    @rule()
    def follow_up(self) -> None:
        text = self._unique("follow")
        self.followed.append(text)
        self.portal.call(self.agent.follow_up, text)
        self.settle()

    @rule()
    def advance(self) -> None:
        self.portal.call(self.gate.release_one)
        self.settle()

    @rule()
    def abort(self) -> None:
        self.portal.call(self.agent.abort)
        self.settle()
        assert not self.running, "the run outlived its abort"

    @rule()
    def pause(self) -> None:
        if not self.running:
            checkpoint = self.portal.call(self.agent.pause)
            assert al.encode(checkpoint) == al.encode(self.portal.call(self.agent.checkpoint))
            return
        if self.pausing is None:
            self.pausing = self.portal.start_task_soon(self.agent.pause)
        self.settle()

    @rule(target=subscriptions, raises_after=st.none() | st.integers(0, 5))
    def subscribe(self, raises_after: int | None) -> tuple[int, int]:
        seen = [0]
        handle_box: list[int] = []

        def callback(event: al.AgentEvent) -> None:
            seen[0] += 1
            if raises_after is not None and seen[0] > raises_after:
                self.raised.add(handle_box[0])
                raise RuntimeError("failing subscriber")

        handle = self.portal.call(self.agent.subscribe, callback)
        handle_box.append(handle)
        return (self.generation, handle)

    @rule(subscription=consumes(subscriptions))
    def unsubscribe(self, subscription: tuple[int, int]) -> None:
        generation, handle = subscription
        if generation != self.generation:
            return  # a subscription of an agent replaced by restore
        found = self.portal.call(self.agent.unsubscribe, handle)
        assert found == (handle not in self.raised)

    @rule()
    def reset(self) -> None:
        if self.running:
            with pytest.raises(al.AlreadyRunning):
                self.portal.call(self.agent.reset)
            return
        self.portal.call(self.agent.reset)
        # Reset returns to the agent's initial state: a restored agent's is its checkpoint's
        # history, with empty queues.
        self.steered.clear()
        self.followed.clear()
        self.committed = list(self.initial)

    @precondition(lambda self: not self.running)
    @rule()
    def checkpoint_and_restore(self) -> None:
        checkpoint = self.portal.call(self.agent.checkpoint)
        decoded: al.Checkpoint = al.decode(al.encode(checkpoint), al.Checkpoint)
        restored = self.portal.call(self._new_agent, decoded)
        assert al.encode(restored.checkpoint()) == al.encode(checkpoint)
        self.agent = restored
        # Subscriptions belong to the old agent; handles from the bundle now find nothing.
        self.raised.clear()
        self.generation += 1
        self.committed = list(restored.messages)
        self.initial = list(restored.messages)
        self._subscribe_recorder()

    # ---------------------------------------------------------------- invariants

    def _snapshot(self) -> tuple[list[al.AgentMessage], list[str], list[str], bool]:
        agent = self.agent
        return (
            agent.messages,
            texts(agent.queued_steering),
            texts(agent.queued_follow_up),
            agent.is_running,
        )

    @invariant()
    def keeps_its_invariants(self) -> None:
        messages, steering, follow_up, is_running = self.portal.call(self._snapshot)
        assert is_running == self.running
        assert self.active_runs == (1 if is_running else 0)
        assert messages == self.committed
        history = texts(messages)
        for sent, queued in ((self.steered, steering), (self.followed, follow_up)):
            for text in sent:
                count = history.count(text) + queued.count(text)
                assert count <= 1, f"{text!r} is {count} times in history and queue"
                if not is_running:
                    assert count == 1, f"{text!r} was lost"
        problem = paired(messages)
        if problem is not None and is_running:
            last = max(
                (i for i, m in enumerate(messages) if isinstance(m, al.AssistantMessage)),
                default=-1,
            )
            problem = paired(messages[:last]) if last >= 0 else problem
        assert problem is None, problem
        if not is_running:
            assert not self.tracker.live, f"still running: {list(self.tracker.live.values())}"

    def teardown(self) -> None:
        try:
            if self.running:
                self.portal.call(self.agent.abort)
                self.settle()
        finally:
            self._portal_cm.__exit__(None, None, None)


class AsyncioAgentMachine(AgentMachine):
    backend = "asyncio"


class TrioAgentMachine(AgentMachine):
    backend = "trio"


TestAgentOnAsyncio = AsyncioAgentMachine.TestCase
TestAgentOnAsyncio.settings = CONFORMANCE
TestAgentOnTrio = TrioAgentMachine.TestCase
TestAgentOnTrio.settings = CONFORMANCE
