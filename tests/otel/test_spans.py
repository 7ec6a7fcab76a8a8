"""The spans of runs, checked against the GenAI semantic conventions, on both backends."""

from __future__ import annotations

import functools
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

import agentloop as al
from agentloop.multi import SubAgentTool
from agentloop.testing import reply_error, reply_text, reply_tool_calls

from ._helpers import MODEL, Telemetry, call_id, event_names, parent_id, span_id

pytestmark = pytest.mark.anyio

USAGE = al.Usage(input=100, output=20, cache_read=30, cache_write=5, total=155)


@al.tool
async def look(term: str) -> str:
    """Look a term up."""
    return f"{term}: a small cat"


async def test_a_run_with_tools_nests_chat_and_tool_spans_under_the_agent(
    telemetry: Telemetry,
) -> None:
    bot = telemetry.agent(
        [
            reply_tool_calls(("look", {"term": "kitten"}), ("look", {"term": "cub"}), usage=USAGE),
            reply_text("A kitten is a small cat.", usage=al.Usage(input=160, output=8, total=168)),
        ],
        tools=[look],
        name="helper",
    )
    result = await bot.prompt("What is a kitten?")
    assert result.output == "A kitten is a small cat."

    assert sorted(s.name for s in telemetry.spans) == [
        "chat gpt-test",
        "chat gpt-test",
        "execute_tool look",
        "execute_tool look",
        "invoke_agent helper",
    ]
    agent = telemetry.one("invoke_agent helper")
    first, second = sorted(telemetry.named("chat gpt-test"), key=lambda s: s.start_time or 0)
    tools = sorted(telemetry.named("execute_tool look"), key=call_id)

    # Kinds and structure: one trace, the agent span its root, everything else its children.
    assert agent.kind is SpanKind.INTERNAL and agent.parent is None
    assert {s.kind for s in (first, second)} == {SpanKind.CLIENT}
    assert {t.kind for t in tools} == {SpanKind.INTERNAL}
    assert {parent_id(s) for s in (first, second, *tools)} == {span_id(agent)}
    assert len({s.context.trace_id for s in telemetry.spans if s.context}) == 1
    # Each tool span links to the chat span whose answer asked for the call.
    for tool in tools:
        assert [link.context.span_id for link in tool.links] == [span_id(first)]
    assert first.end_time is not None and tools[0].start_time is not None
    assert first.end_time <= tools[0].start_time

    assert dict(agent.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "openai",
        "gen_ai.agent.name": "helper",
        "gen_ai.request.model": "gpt-test",
        # The run's usage: both answers (input counts the cached tokens too).
        "gen_ai.usage.input_tokens": 135 + 160,
        "gen_ai.usage.output_tokens": 28,
        "gen_ai.usage.cache_read.input_tokens": 30,
        "gen_ai.usage.cache_creation.input_tokens": 5,
        "agentloop.stop_reason": "stop",
    }
    attributes = dict(first.attributes or {})
    ttfc = attributes.pop("gen_ai.response.time_to_first_chunk")
    assert isinstance(ttfc, float) and ttfc >= 0
    assert attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.response.model": "gpt-test",
        "gen_ai.response.finish_reasons": ("tool_call",),
        "gen_ai.usage.input_tokens": 135,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.usage.cache_read.input_tokens": 30,
        "gen_ai.usage.cache_creation.input_tokens": 5,
        "agentloop.attempt": 1,
    }
    assert dict(second.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    assert [dict(t.attributes or {}) for t in tools] == [
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "look",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": "Look a term up.",
        }
        for call_id in ("call_1", "call_2")
    ]
    assert {s.status.status_code for s in telemetry.spans} == {StatusCode.UNSET}


async def test_the_metrics_of_a_run(telemetry: Telemetry) -> None:
    bot = telemetry.agent(
        [
            reply_tool_calls(("look", {"term": "kitten"}), usage=USAGE),
            reply_text("done", usage=al.Usage(input=160, output=8, total=168)),
        ],
        tools=[look],
    )
    await bot.prompt("go")
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.response.model": "gpt-test",
    }
    tokens = {
        a["gen_ai.token.type"]: (n, total)
        for a, n, total in telemetry.points("gen_ai.client.token.usage")
    }
    assert tokens == {"input": (2, 135 + 160), "output": (2, 28)}
    assert {
        a["gen_ai.token.type"] for a, _, _ in telemetry.points("gen_ai.client.token.usage")
    } == {"input", "output"}
    durations = telemetry.points("gen_ai.client.operation.duration")
    assert sorted((a["gen_ai.operation.name"], n) for a, n, _ in durations) == [
        ("chat", 2),
        ("invoke_agent", 1),
    ]
    assert [a for a, _, _ in durations if a["gen_ai.operation.name"] == "chat"] == [chat]
    ((attributes, count, seconds),) = telemetry.points(
        "gen_ai.client.operation.time_to_first_chunk"
    )
    assert (attributes, count) == (chat, 2) and seconds >= 0
    ((attributes, count, seconds),) = telemetry.points("agentloop.tool.duration")
    assert attributes == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "look"}
    assert count == 1 and seconds >= 0


async def test_every_attempt_is_a_chat_span_and_the_retried_one_says_why(
    telemetry: Telemetry,
) -> None:
    bot = telemetry.agent(
        [
            reply_error(al.ErrorKind.THROTTLED, "slow down", retry_after=0.01),
            reply_text("hi", usage=al.Usage(input=3, output=1, total=4)),
        ],
        retry_strategy=al.retry.ExponentialBackoff(jitter=False, max_attempts=3),
    )
    result = await bot.prompt("go")
    assert result.output == "hi"
    agent = telemetry.one("invoke_agent agent")
    failed, answered = sorted(telemetry.named("chat gpt-test"), key=lambda s: s.start_time or 0)
    assert {parent_id(failed), parent_id(answered)} == {span_id(agent)}
    assert failed.attributes is not None and answered.attributes is not None
    assert (failed.attributes["agentloop.attempt"], answered.attributes["agentloop.attempt"]) == (
        1,
        2,
    )
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description is not None and "slow down" in failed.status.description
    assert failed.attributes["error.type"] == "throttled"
    assert failed.attributes["gen_ai.response.finish_reasons"] == ("error",)
    (retry,) = failed.events
    assert retry.name == "agentloop.retry"
    assert dict(retry.attributes or {}) == {"agentloop.retry.delay": pytest.approx(0.01)}
    assert (
        answered.status.status_code is StatusCode.UNSET and "error.type" not in answered.attributes
    )
    assert agent.status.status_code is StatusCode.UNSET
    assert sorted(
        (a["gen_ai.operation.name"], a.get("error.type", ""), n)
        for a, n, _ in telemetry.points("gen_ai.client.operation.duration")
    ) == [("chat", "", 1), ("chat", "throttled", 1), ("invoke_agent", "", 1)]


async def test_a_failed_run_and_a_failed_tool_have_error_statuses(telemetry: Telemetry) -> None:
    @al.tool
    async def broken() -> str:
        """Raises."""
        raise ValueError("the tool broke")

    bot = telemetry.agent(
        [reply_tool_calls(("broken", {})), reply_error(al.ErrorKind.AUTH, "bad credentials")],
        tools=[broken],
    )
    result = await bot.prompt("go", raise_on_error=False)
    assert result.stop_reason is al.StopReason.ERROR
    tool = telemetry.one("execute_tool broken")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes is not None and tool.attributes["error.type"] == "ValueError"
    # Without content capture the description names the failure, not what it said.
    assert tool.status.description == "ValueError"
    agent = telemetry.one("invoke_agent agent")
    assert agent.status.status_code is StatusCode.ERROR
    assert agent.attributes is not None and agent.attributes["error.type"] == "auth"
    assert agent.attributes["agentloop.stop_reason"] == "error"
    ((attributes, count, _),) = telemetry.points("agentloop.tool.duration")
    assert attributes["error.type"] == "ValueError" and count == 1


async def test_steering_shows_on_the_agent_and_on_the_calls_it_cancelled(
    telemetry: Telemetry,
) -> None:
    release = anyio.Event()

    @al.tool
    async def job(name: str) -> str:
        """A job."""
        if name == "quick":
            await release.wait()
            bot.steer("change of plan")
            return "quick done"
        await anyio.sleep_forever()
        return "never"

    bot = telemetry.agent(
        [reply_tool_calls(("job", {"name": "quick"}), ("job", {"name": "slow"})), reply_text("ok")],
        tools=[job],
    )

    def on_event(event: al.AgentEvent) -> None:
        if isinstance(event, al.ToolExecutionStart) and event.arguments == {"name": "slow"}:
            release.set()

    bot.subscribe(on_event)
    await bot.prompt("go")
    agent = telemetry.one("invoke_agent agent")
    assert event_names(agent) == ["agentloop.steering_interrupt"]
    assert agent.events[0].attributes == {"agentloop.cancelled_calls": 1}
    quick, slow = sorted(telemetry.named("execute_tool job"), key=call_id)
    assert event_names(quick) == [] and event_names(slow) == ["agentloop.steering_interrupt"]
    # An interrupted call is not a failure of its tool, and its duration is not measured.
    assert slow.status.status_code is StatusCode.UNSET
    assert [n for _, n, _ in telemetry.points("agentloop.tool.duration")] == [1]
    assert len(telemetry.named("chat gpt-test")) == 2


async def test_an_abort_ends_every_span_with_an_abort_event(telemetry: Telemetry) -> None:
    started = anyio.Event()

    @al.tool
    async def wait() -> str:
        """Waits for ever."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    bot = telemetry.agent([reply_tool_calls(("wait", {})), reply_text("unused")], tools=[wait])
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(bot.prompt, "go", raise_on_error=False))
        await started.wait()
        bot.abort()
    agent = telemetry.one("invoke_agent agent")
    tool = telemetry.one("execute_tool wait")
    assert event_names(tool) == ["agentloop.abort"]
    assert event_names(agent) == ["agentloop.abort"]
    assert agent.attributes is not None and agent.attributes["agentloop.stop_reason"] == "aborted"
    assert {s.status.status_code for s in telemetry.spans} == {StatusCode.UNSET}
    assert parent_id(tool) == span_id(agent)
    assert telemetry.points("agentloop.tool.duration") == []


async def test_an_abort_while_the_model_streams_ends_the_chat_span(telemetry: Telemetry) -> None:
    streaming = anyio.Event()

    async def stalls(model: Any, context: Any, options: Any) -> Any:
        yield al.stream.StreamStart()
        streaming.set()
        await anyio.sleep_forever()

    bot = al.Agent(model=MODEL, stream_fn=stalls, instrumentation=telemetry.instrumentation())
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(bot.prompt, "go", raise_on_error=False))
        await streaming.wait()
        bot.abort()
    chat = telemetry.one("chat gpt-test")
    assert event_names(chat) == ["agentloop.abort"]
    assert chat.attributes is not None
    assert "gen_ai.response.finish_reasons" not in chat.attributes  # no answer came
    assert chat.status.status_code is StatusCode.UNSET
    assert parent_id(chat) == span_id(telemetry.one("invoke_agent agent"))


async def test_a_sub_agent_nests_under_the_tool_call_that_started_it(telemetry: Telemetry) -> None:
    researcher = al.Agent(
        model=MODEL,
        stream_fn=telemetry.agent([]).stream_fn,
        name="researcher",
        tools=[look],
    )
    researcher.stream_fn.script.extend(  # type: ignore[attr-defined]
        [reply_tool_calls(("look", {"term": "tides"})), reply_text("at six")]
    )
    planner = telemetry.agent(
        [reply_tool_calls(("research", {"task": "When are the tides?"})), reply_text("At six.")],
        tools=[SubAgentTool(researcher, name="research", description="Researches.")],
        name="planner",
    )
    assert (await planner.prompt("Tides?")).output == "At six."
    top = telemetry.one("invoke_agent planner")
    delegation = telemetry.one("execute_tool research")
    sub = telemetry.one("invoke_agent researcher")
    inner = telemetry.one("execute_tool look")
    assert parent_id(delegation) == span_id(top)
    assert parent_id(sub) == span_id(delegation)
    assert parent_id(inner) == span_id(sub)
    sub_chats = [s for s in telemetry.named("chat gpt-test") if parent_id(s) == span_id(sub)]
    assert len(sub_chats) == 2
    assert [link.context.span_id for link in inner.links] == [
        span_id(min(sub_chats, key=lambda s: s.start_time or 0))
    ]
    assert len({s.context.trace_id for s in telemetry.spans if s.context}) == 1
    assert sub.attributes is not None and sub.attributes["gen_ai.agent.name"] == "researcher"


async def test_tools_see_their_span_as_the_current_one_in_tasks_and_threads(
    telemetry: Telemetry,
) -> None:
    seen: dict[str, tuple[int, str]] = {}

    def current() -> tuple[int, str]:
        span = trace.get_current_span()
        return span.get_span_context().span_id, getattr(span, "name", "")

    @al.tool
    def in_thread() -> str:
        """Runs in a worker thread."""
        seen["thread"] = current()
        return "t"

    @al.tool
    async def in_task() -> str:
        """Runs in the call's task."""
        seen["task"] = current()
        return "a"

    bot = telemetry.agent(
        [reply_tool_calls(("in_thread", {}), ("in_task", {})), reply_text("ok")],
        tools=[in_thread, in_task],
    )
    await bot.prompt("go")
    assert seen["thread"] == (
        span_id(telemetry.one("execute_tool in_thread")),
        "execute_tool in_thread",
    )
    assert seen["task"] == (span_id(telemetry.one("execute_tool in_task")), "execute_tool in_task")
    # Outside the run, nothing of it is current.
    assert not trace.get_current_span().get_span_context().is_valid


async def test_a_run_nests_under_the_applications_current_span(telemetry: Telemetry) -> None:
    tracer = telemetry.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("handle request") as outer:
        await telemetry.agent([reply_text("hi")]).prompt("go")
    agent = telemetry.one("invoke_agent agent")
    assert parent_id(agent) == outer.get_span_context().span_id


async def test_a_session_id_is_the_conversation_id(telemetry: Telemetry, tmp_path: Any) -> None:
    from agentloop.sessions import JsonlSessionStore, SessionRecorder

    store = JsonlSessionStore(tmp_path)
    info = await store.create(session_id="conversation-42")
    await telemetry.agent([reply_text("hi")], session=SessionRecorder(store, info.id)).prompt("go")
    for name in ("invoke_agent agent", "chat gpt-test"):
        span = telemetry.one(name)
        assert span.attributes is not None
        assert span.attributes["gen_ai.conversation.id"] == "conversation-42"


async def test_the_streamed_form_and_leaving_it_early(telemetry: Telemetry) -> None:
    bot = telemetry.agent(
        [reply_tool_calls(("look", {"term": "kitten"})), reply_text("A small cat.")], tools=[look]
    )
    async with bot.stream("What is a kitten?") as events:
        async for event in events:
            # The consumer's own context is not the run's: the run's spans live in its task.
            assert not trace.get_current_span().get_span_context().is_valid
            assert event is not None
    agent = telemetry.one("invoke_agent agent")
    assert {parent_id(s) for s in telemetry.spans if s is not agent} == {span_id(agent)}
    assert len(telemetry.spans) == 4

    @al.tool
    async def wait() -> str:
        """Wait until cancelled (the run cannot finish before the consumer leaves)."""
        await anyio.sleep_forever()
        return "never"

    telemetry.exporter.clear()
    bot.reset()
    bot.set_tools([wait])
    bot.stream_fn.script.extend([reply_tool_calls(("wait", {})), reply_text("y")])  # type: ignore[attr-defined]
    async with bot.stream("again") as events:
        async for event in events:
            if isinstance(event, al.ToolExecutionStart):
                break  # leaving early cancels the run
    agent = telemetry.one("invoke_agent agent")
    assert event_names(agent) == ["agentloop.abort"]
    assert agent.attributes is not None and agent.attributes["agentloop.stop_reason"] == "aborted"
    assert all(s.end_time is not None for s in telemetry.spans)
