"""The everyday calls fail loudly: a run that fails raises its typed error (carrying the
result), unless the caller asks for failures as data; event streams keep failures as events."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_error, reply_text, reply_tool_calls

from ._helpers import MODEL, NO_RETRY_DELAY

pytestmark = pytest.mark.anyio


class Person(msgspec.Struct):
    name: str


def _failing(**kwargs: Any) -> al.Agent[Any]:
    stream = ScriptedStream([reply_error(al.ErrorKind.AUTH, "invalid x-api-key")])
    return al.Agent(model=MODEL, stream_fn=stream, retry_strategy=NO_RETRY_DELAY, **kwargs)


async def test_a_failed_prompt_raises_its_typed_error_with_the_result() -> None:
    agent = _failing()
    with pytest.raises(al.StreamError, match="invalid x-api-key") as caught:
        await agent.prompt("hi")
    assert caught.value.kind is al.ErrorKind.AUTH
    result = caught.value.result
    assert isinstance(result, al.AgentResult)
    assert result.stop_reason is al.StopReason.ERROR
    assert [type(m).__name__ for m in result.messages] == ["UserMessage", "AssistantMessage"]


async def test_plain_and_typed_runs_fail_the_same_way() -> None:
    with pytest.raises(al.StreamError, match="invalid x-api-key"):
        await _failing().prompt("hi")
    with pytest.raises(al.StreamError, match="invalid x-api-key"):
        await _failing().prompt("hi", output_type=Person)


async def test_failures_as_data_when_asked_per_call_or_per_agent() -> None:
    result = await _failing().prompt("hi", raise_on_error=False)
    assert result.stop_reason is al.StopReason.ERROR
    assert not result.ok
    with pytest.raises(al.StreamError) as caught:
        _ = result.output  # a failed run has no output
    assert caught.value.result is result

    quiet = _failing(raise_on_error=False)
    result = await quiet.prompt("hi")
    assert result.error_kind is al.ErrorKind.AUTH
    with pytest.raises(al.StreamError):
        await quiet.prompt("again", raise_on_error=True)


async def test_continue_run_raises_too_and_recovers() -> None:
    stream = ScriptedStream([reply_error(al.ErrorKind.OTHER, "boom"), reply_text("fine")])
    agent = al.Agent(model=MODEL, stream_fn=stream, retry_strategy=NO_RETRY_DELAY)
    with pytest.raises(al.StreamError, match="boom"):
        await agent.prompt("hi")
    result = await agent.continue_run()
    assert result.ok
    assert result.output == "fine"


async def test_an_abort_raises_aborted_from_prompt() -> None:
    agent = al.Agent(
        model=MODEL, stream_fn=ScriptedStream([reply_tool_calls(("wait", {}))]), tools=[]
    )

    def abort_on_start(event: al.AgentEvent) -> None:
        if isinstance(event, al.MessageStart):
            agent.abort()

    agent.subscribe(abort_on_start)
    with pytest.raises(al.Aborted) as caught:
        await agent.prompt("go")
    assert caught.value.result.stop_reason is al.StopReason.ABORTED


async def test_a_typed_run_without_output_is_data_when_asked() -> None:
    stream = ScriptedStream([reply_text("no"), reply_text("no")])
    agent = al.Agent(model=MODEL, stream_fn=stream, output_retries=1)
    result = await agent.prompt("who?", output_type=Person, raise_on_error=False)
    assert result.stop_reason is al.StopReason.STOP
    assert not result.ok
    assert result.output_error
    with pytest.raises(al.StructuredOutputFailed):
        _ = result.output
    with pytest.raises(al.StructuredOutputFailed):
        result.raise_for_error()


async def test_the_event_stream_keeps_failures_as_events() -> None:
    agent = _failing()
    async with agent.stream("hi") as events:
        seen = [event async for event in events]
    assert isinstance(seen[-1], al.AgentEnd)
    assert events.result.stop_reason is al.StopReason.ERROR  # no exception


def test_prompt_sync_raises_on_both_backends() -> None:
    for backend in ("asyncio", "trio"):
        with pytest.raises(al.StreamError, match="invalid x-api-key"):
            _failing().prompt_sync("hi", backend=backend)
        result = _failing().prompt_sync("hi", backend=backend, raise_on_error=False)
        assert result.stop_reason is al.StopReason.ERROR


async def test_a_tool_that_raises_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @al.tool
    async def explode() -> str:
        """Fail."""
        raise ValueError("the disk is on fire")

    stream = ScriptedStream([reply_tool_calls(("explode", {})), reply_text("sorry")])
    agent = al.Agent(model=MODEL, stream_fn=stream, tools=[explode])
    with caplog.at_level(logging.WARNING, logger="agentloop.tools"):
        result = await agent.prompt("go")
    assert result.output == "sorry"  # the model read the error result and went on
    [record] = [r for r in caplog.records if r.name == "agentloop.tools"]
    assert record.levelno == logging.WARNING
    assert "explode" in record.getMessage()
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], ValueError)


async def test_override_swaps_the_model_for_a_block_and_restores_it() -> None:
    original = ScriptedStream([reply_text("real")])
    agent = al.Agent(model=MODEL, stream_fn=original, deps="prod")
    scripted = ScriptedStream([reply_text("fake")])
    with agent.override(stream_fn=scripted, deps="test") as same:
        assert same is agent
        assert agent.deps == "test"
        assert (await agent.prompt("hi")).output == "fake"
    assert agent.stream_fn is original
    assert agent.model is MODEL
    assert agent.deps == "prod"
    assert (await agent.prompt("hi")).output == "real"


def test_override_restores_after_an_exception_and_refuses_a_running_agent() -> None:
    original = ScriptedStream([reply_text("real")])
    agent = al.Agent(model=MODEL, stream_fn=original)
    with pytest.raises(RuntimeError), agent.override(stream_fn=ScriptedStream([])):
        raise RuntimeError("boom")
    assert agent.stream_fn is original
