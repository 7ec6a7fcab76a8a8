"""Agent: every prompt and continue form, one run at a time, usage and cost."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import pytest

from agentloop import (
    Agent,
    AgentEnd,
    AgentEvent,
    AgentMessage,
    AgentResult,
    AgentStart,
    AgentToolResult,
    AlreadyRunning,
    AssistantMessage,
    Cost,
    Image,
    InvalidContinue,
    MessageUpdate,
    ModelSpec,
    NoMessages,
    Pricing,
    StopReason,
    StreamOptions,
    Text,
    Tool,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentloop.stream import AssistantMessageEvent, Done, LlmContext, TextDelta, TextEnd, TextStart
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agentloop.abc import OnUpdate

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="fake", model_id="fake-1")
IMAGE = Image(media_type="image/png", data="aGVsbG8=")


class GateTool(Tool):
    """A tool that runs until the test opens its gate."""

    def __init__(self, name: str = "gate") -> None:
        self.name = name
        self.label = name
        self.description = f"the {name} tool"
        self.parameters = {"type": "object", "properties": {}}
        self.started = anyio.Event()
        self.gate = anyio.Event()
        self.calls = 0

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        self.calls += 1
        self.started.set()
        await self.gate.wait()
        return AgentToolResult.text(f"{self.name} done")


def content_of(message: AgentMessage) -> list[Any]:
    assert isinstance(message, UserMessage | AssistantMessage | ToolResultMessage)
    return list(message.content)


def last_user_text(context: LlmContext) -> str:
    for message in reversed(context.messages):
        if isinstance(message, UserMessage):
            return "".join(b.text for b in message.content if isinstance(b, Text))
    raise AssertionError("no user message in the request")


# --------------------------------------------------------------------------- input forms


def input_forms() -> list[Any]:
    return [
        pytest.param("hello", None, [[Text(text="hello")]], id="string"),
        pytest.param("look", [IMAGE], [[Text(text="look"), IMAGE]], id="string-with-images"),
        pytest.param(
            [UserMessage.from_text("one"), UserMessage.from_text("two")],
            None,
            [[Text(text="one")], [Text(text="two")]],
            id="messages",
        ),
    ]


def check_prompted(
    agent: Agent, stream: ScriptedStream, result: AgentResult, expected: list[list[Any]]
) -> None:
    assert result.stop_reason is StopReason.STOP
    assert result.text == "hi there"
    # The model received exactly the prompt messages, in order.
    sent = stream.calls[0].context.messages
    assert [m.content for m in sent] == expected
    assert all(isinstance(m, UserMessage) for m in sent)
    # The history holds the prompts and the answer; the result holds what the run added.
    history = agent.messages
    assert [content_of(m) for m in history[:-1]] == expected
    assert isinstance(history[-1], AssistantMessage)
    assert history[-1].text == "hi there"
    assert result.messages == history
    assert not agent.is_running


@pytest.mark.parametrize(("text", "images", "expected"), input_forms())
async def test_stream_form(text: Any, images: Any, expected: list[list[Any]]) -> None:
    stream = ScriptedStream([reply_text("hi there")])
    agent = Agent(model=MODEL, stream_fn=stream)
    seen: list[AgentEvent] = []
    async with agent.stream(text, images=images) as events:
        assert agent.is_running
        async for event in events:
            seen.append(event)
    assert isinstance(seen[0], AgentStart)
    assert isinstance(seen[-1], AgentEnd)
    deltas = [e.event for e in seen if isinstance(e, MessageUpdate)]
    assert "".join(d.delta for d in deltas if isinstance(d, TextDelta)) == "hi there"
    check_prompted(agent, stream, events.result, expected)


@pytest.mark.parametrize(("text", "images", "expected"), input_forms())
async def test_awaitable_form(text: Any, images: Any, expected: list[list[Any]]) -> None:
    stream = ScriptedStream([reply_text("hi there")])
    agent = Agent(model=MODEL, stream_fn=stream)
    result = await agent.prompt(text, images=images)
    check_prompted(agent, stream, result, expected)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize(("text", "images", "expected"), input_forms())
def test_blocking_form(backend: str, text: Any, images: Any, expected: list[list[Any]]) -> None:
    stream = ScriptedStream([reply_text("hi there")])
    agent = Agent(model=MODEL, stream_fn=stream)
    result = agent.prompt_sync(text, images=images, backend=backend)
    check_prompted(agent, stream, result, expected)


async def test_images_need_a_text_prompt() -> None:
    agent = Agent(model=MODEL, stream_fn=ScriptedStream([]))
    with pytest.raises(TypeError, match="images"):
        await agent.prompt([UserMessage.from_text("x")], images=[IMAGE])


async def test_single_message_prompt() -> None:
    stream = ScriptedStream([reply_text("hi there")])
    agent = Agent(model=MODEL, stream_fn=stream)
    result = await agent.prompt(UserMessage.from_text("solo"))
    assert result.text == "hi there"
    assert last_user_text(stream.calls[0].context) == "solo"


async def test_consecutive_prompts_share_the_history() -> None:
    stream = ScriptedStream([reply_text("first"), reply_text("second")])
    agent = Agent(model=MODEL, stream_fn=stream, system_prompt="be brief")
    await agent.prompt("a")
    result = await agent.prompt("b")
    assert result.text == "second"
    # The second run added only its own messages; the model saw the whole conversation.
    assert [type(m) for m in result.messages] == [UserMessage, AssistantMessage]
    request = stream.calls[1].context
    assert request.system_prompt == "be brief"
    assert [type(m) for m in request.messages] == [
        UserMessage,
        AssistantMessage,
        UserMessage,
    ]
    assert len(agent.messages) == 4


# --------------------------------------------------------------------------- prompt_sync misuse


async def test_prompt_sync_inside_a_running_loop_is_a_clear_error() -> None:
    agent = Agent(model=MODEL, stream_fn=ScriptedStream([reply_text("never")]))
    with pytest.raises(RuntimeError, match=r"running event loop.*await agent\.prompt"):
        agent.prompt_sync("hi")
    with pytest.raises(RuntimeError, match=r"running event loop.*await agent\.continue_"):
        agent.continue_run_sync()
    with pytest.raises(RuntimeError, match=r"running event loop.*await agent\.structured"):
        agent.structured_sync("hi", {"type": "object"})
    # Nothing ran and nothing is left claimed.
    assert agent.messages == []
    assert not agent.is_running


# --------------------------------------------------------------------------- continue


def history_ending_with_user() -> list[Any]:
    return [
        UserMessage.from_text("earlier"),
        AssistantMessage(content=[Text(text="ok")]),
        UserMessage.from_text("pending question"),
    ]


def check_continued(agent: Agent, stream: ScriptedStream, result: AgentResult) -> None:
    assert result.text == "answer"
    assert last_user_text(stream.calls[0].context) == "pending question"
    # Nothing was re-sent as a new prompt: the run added only the answer.
    assert [type(m) for m in result.messages] == [AssistantMessage]
    assert len(agent.messages) == 4


async def test_continue_stream_form() -> None:
    stream = ScriptedStream([reply_text("answer")])
    agent = Agent(model=MODEL, stream_fn=stream, messages=history_ending_with_user())
    async with agent.continue_stream() as events:
        kinds = [type(e) async for e in events]
    assert kinds[0] is AgentStart
    assert kinds[-1] is AgentEnd
    check_continued(agent, stream, events.result)


async def test_continue_awaitable_form() -> None:
    stream = ScriptedStream([reply_text("answer")])
    agent = Agent(model=MODEL, stream_fn=stream, messages=history_ending_with_user())
    check_continued(agent, stream, await agent.continue_run())


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_continue_blocking_form(backend: str) -> None:
    stream = ScriptedStream([reply_text("answer")])
    agent = Agent(model=MODEL, stream_fn=stream, messages=history_ending_with_user())
    check_continued(agent, stream, agent.continue_run_sync(backend=backend))


async def test_continue_after_a_tool_result() -> None:
    stream = ScriptedStream([reply_text("answer")])
    history: list[Any] = [
        UserMessage.from_text("use the tool"),
        reply_tool_calls(("gate", {})),
        ToolResultMessage(tool_call_id="call_1", tool_name="gate", content=[Text(text="42")]),
    ]
    agent = Agent(model=MODEL, stream_fn=stream, messages=history)
    result = await agent.continue_run()
    assert result.text == "answer"
    assert isinstance(stream.calls[0].context.messages[-1], ToolResultMessage)


async def test_continue_with_empty_history_raises_no_messages() -> None:
    stream = ScriptedStream([reply_text("never")])
    agent = Agent(model=MODEL, stream_fn=stream)
    with pytest.raises(NoMessages):
        await agent.continue_run()
    with pytest.raises(NoMessages):
        agent.continue_stream()
    assert stream.calls == []
    assert not agent.is_running


def test_continue_sync_with_empty_history_raises_no_messages() -> None:
    agent = Agent(model=MODEL, stream_fn=ScriptedStream([]))
    with pytest.raises(NoMessages):
        agent.continue_run_sync()


async def test_continue_after_the_assistant_raises_invalid_continue() -> None:
    stream = ScriptedStream([reply_text("never")])
    history: list[Any] = [UserMessage.from_text("q"), AssistantMessage(content=[Text(text="a")])]
    agent = Agent(model=MODEL, stream_fn=stream, messages=history)
    with pytest.raises(InvalidContinue):
        await agent.continue_run()
    with pytest.raises(InvalidContinue):
        agent.continue_stream()
    assert stream.calls == []
    assert agent.messages == history


@pytest.mark.parametrize("queue", ["steer", "follow_up"])
async def test_continue_after_the_assistant_sends_queued_messages(queue: str) -> None:
    stream = ScriptedStream([reply_text("answer 1"), reply_text("answer 2")])
    history: list[Any] = [UserMessage.from_text("q"), AssistantMessage(content=[Text(text="a")])]
    agent = Agent(model=MODEL, stream_fn=stream, messages=history)
    getattr(agent, queue)("queued one")
    getattr(agent, queue)("queued two")
    result = await agent.continue_run()
    # One at a time (the default): the first queued message starts the run, the second is
    # delivered after it (as steering after the turn, or as a follow-up at the end).
    assert [last_user_text(c.context) for c in stream.calls] == ["queued one", "queued two"]
    assert result.text == "answer 2"
    assert not agent.has_queued_messages()


async def test_continue_stream_sends_queued_messages() -> None:
    stream = ScriptedStream([reply_text("answer")])
    history: list[Any] = [UserMessage.from_text("q"), AssistantMessage(content=[Text(text="a")])]
    agent = Agent(model=MODEL, stream_fn=stream, messages=history)
    agent.follow_up("more please")
    async with agent.continue_stream() as events:
        async for _ in events:
            pass
    assert events.result.text == "answer"
    assert last_user_text(stream.calls[0].context) == "more please"


# --------------------------------------------------------------------------- one run at a time


async def test_already_running_under_a_real_race() -> None:
    gate = GateTool()
    stream = ScriptedStream([reply_tool_calls(("gate", {})), reply_text("done")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[gate])
    go = anyio.Event()
    outcomes: dict[str, object] = {}

    async def contender(name: str) -> None:
        await go.wait()
        try:
            outcomes[name] = await agent.prompt(f"from {name}")
        except AlreadyRunning as exc:
            outcomes[name] = exc

    async with anyio.create_task_group() as tg:
        for name in ("a", "b", "c"):
            tg.start_soon(contender, name)
        await anyio.wait_all_tasks_blocked()
        go.set()  # all three are released at once
        await gate.started.wait()
        # Every loser failed without waiting; only the winner's run is in flight.
        await anyio.wait_all_tasks_blocked()
        assert sum(isinstance(v, AlreadyRunning) for v in outcomes.values()) == 2
        gate.gate.set()
    winners = [name for name, v in outcomes.items() if isinstance(v, AgentResult)]
    assert len(winners) == 1
    assert len(stream.calls) == 2
    assert gate.calls == 1
    assert last_user_text(stream.calls[0].context) == f"from {winners[0]}"
    # Only the winner's prompt is in the history.
    prompts = [m for m in agent.messages if isinstance(m, UserMessage)]
    assert len(prompts) == 1
    assert not agent.is_running


async def test_already_running_stream_form_race() -> None:
    gate = GateTool()
    stream = ScriptedStream([reply_tool_calls(("gate", {})), reply_text("done")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[gate])
    go = anyio.Event()
    outcomes: dict[str, object] = {}

    async def contender(name: str) -> None:
        await go.wait()
        try:
            async with agent.stream(f"from {name}") as events:
                async for _ in events:
                    pass
            outcomes[name] = events.result
        except AlreadyRunning as exc:
            outcomes[name] = exc

    async with anyio.create_task_group() as tg:
        tg.start_soon(contender, "a")
        tg.start_soon(contender, "b")
        await anyio.wait_all_tasks_blocked()
        go.set()
        await gate.started.wait()
        await anyio.wait_all_tasks_blocked()
        assert sum(isinstance(v, AlreadyRunning) for v in outcomes.values()) == 1
        # A third caller, awaitable or continue, is refused too while the stream runs.
        with pytest.raises(AlreadyRunning):
            await agent.prompt("late")
        with pytest.raises(AlreadyRunning):
            await agent.continue_run()
        gate.gate.set()
    assert sum(isinstance(v, AgentResult) for v in outcomes.values()) == 1
    assert len([m for m in agent.messages if isinstance(m, UserMessage)]) == 1
    assert not agent.is_running


async def test_continue_stream_while_running_keeps_queued_messages() -> None:
    # While a tool runs, the history ends with the assistant's tool call; a queued steering
    # message makes a continue look valid. The refused continue must not consume it.
    gate = GateTool()
    stream = ScriptedStream([reply_tool_calls(("gate", {})), reply_text("done"), reply_text("x")])
    # "after_call": the message stays queued while the call runs (else the batch takes it).
    agent = Agent(model=MODEL, stream_fn=stream, tools=[gate], steering_interrupt="after_call")
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "go")
        await gate.started.wait()
        agent.steer("keep me")
        with pytest.raises(AlreadyRunning):
            async with agent.continue_stream():
                pass  # pragma: no cover
        with pytest.raises(AlreadyRunning):
            await agent.continue_run()
        assert [content_of(m) for m in agent.queued_steering] == [[Text(text="keep me")]]
        gate.gate.set()
    assert "keep me" in [last_user_text(c.context) for c in stream.calls]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
async def test_prompt_sync_from_another_thread_while_running_is_refused(backend: str) -> None:
    # The claim is atomic across threads too: a blocking prompt on a second event loop, in a
    # worker thread, is refused while this loop's run is active.
    gate = GateTool()
    stream = ScriptedStream([reply_tool_calls(("gate", {})), reply_text("done")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[gate])
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "one")
        await gate.started.wait()
        with pytest.raises(AlreadyRunning):
            await anyio.to_thread.run_sync(lambda: agent.prompt_sync("two", backend=backend))
        gate.gate.set()
    assert len(stream.calls) == 2
    assert len([m for m in agent.messages if isinstance(m, UserMessage)]) == 1


async def test_agent_is_reusable_after_a_refused_prompt() -> None:
    gate = GateTool()
    stream = ScriptedStream(
        [reply_tool_calls(("gate", {})), reply_text("first"), reply_text("second")]
    )
    agent = Agent(model=MODEL, stream_fn=stream, tools=[gate])
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "one")
        await gate.started.wait()
        with pytest.raises(AlreadyRunning):
            await agent.prompt("two")
        gate.gate.set()
    result = await agent.prompt("three")
    assert result.text == "second"


# --------------------------------------------------------------------------- usage and cost


async def test_usage_and_cost_are_summed_over_turns_and_runs() -> None:
    u1 = Usage(input=100, output=10, total=110)
    u2 = Usage(input=150, output=20, cache_read=50, total=220, extra={"reasoning": 5})
    u3 = Usage(input=30, output=3, total=33, extra={"reasoning": 1})
    stream = ScriptedStream(
        [
            reply_tool_calls(("gate", {}), usage=u1),
            reply_text("done", usage=u2),
            reply_text("again", usage=u3),
        ]
    )
    gate = GateTool()
    gate.gate = anyio.Event()
    gate.gate.set()
    agent = Agent(model=MODEL, stream_fn=stream, tools=[gate])
    result = await agent.prompt("go")
    assert result.usage == u1 + u2
    assert result.usage.extra == {"reasoning": 5}
    assert result.cost == Cost()  # no pricing and no cost from the provider
    second = await agent.prompt("more")
    assert second.usage == u3
    assert agent.usage == u1 + u2 + u3
    assert agent.usage.input == 280


async def test_pricing_prices_usage_when_the_provider_reports_no_cost() -> None:
    model = ModelSpec(
        provider="fake",
        model_id="priced",
        pricing=Pricing(input=3.0, output=15.0, cache_read=0.3),
    )
    u1 = Usage(input=1_000_000, output=100_000, total=1_100_000)
    u2 = Usage(input=2_000_000, output=0, cache_read=1_000_000, total=3_000_000)
    stream = ScriptedStream([reply_tool_calls(("gate", {}), usage=u1), reply_text("ok", usage=u2)])
    gate = GateTool()
    gate.gate.set()
    agent = Agent(model=model, stream_fn=stream, tools=[gate])
    result = await agent.prompt("go")
    assert result.cost.input == pytest.approx(3.0 + 6.0)
    assert result.cost.output == pytest.approx(1.5)
    assert result.cost.cache_read == pytest.approx(0.3)
    assert result.cost.total == pytest.approx(10.8)
    answers = [m for m in agent.messages if isinstance(m, AssistantMessage)]
    assert [a.cost.total for a in answers] == pytest.approx([4.5, 6.3])
    assert agent.cost.total == pytest.approx(10.8)


async def test_a_cost_reported_by_the_provider_wins_over_pricing() -> None:
    model = ModelSpec(provider="fake", model_id="priced", pricing=Pricing(input=1000.0))
    reported = Cost(input=0.25, total=0.25)

    async def provider(
        model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        yield TextStart(index=0)
        yield TextDelta(index=0, delta="ok")
        yield TextEnd(index=0)
        yield Done(stop_reason=StopReason.STOP, usage=Usage(input=10, total=10), cost=reported)

    agent = Agent(model=model, stream_fn=provider)
    result = await agent.prompt("go")
    assert result.cost == reported
    assert agent.cost == reported
