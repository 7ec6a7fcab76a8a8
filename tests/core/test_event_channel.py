"""The event stream's channel: the loop appends a streamed answer's updates straight into its
buffer, and the buffer stays bounded whether the consumer is behind or gone."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

import agentloop as al
from agentloop._channel import EventChannel
from agentloop._entry import EventStream
from agentloop.testing import events_for, reply_text, reply_tool_calls

from ._helpers import config

pytestmark = pytest.mark.anyio

TEXT = "".join(f"{i:04d}" for i in range(300))  # 300 deltas of four characters


def _long_stream(capacity: int) -> EventStream[str]:
    """An event stream of one answer of 300 deltas, with room for ``capacity`` events."""
    answer = events_for(reply_text(TEXT), chunk_size=4)
    prompt = [al.UserMessage.from_text("go")]
    return EventStream(prompt, al.loop.AgentContext(), config([answer]), capacity=capacity)


async def test_a_consumer_behind_the_stream_never_has_more_than_the_capacity_waiting() -> None:
    stream = _long_stream(capacity=8)
    deltas: list[str] = []
    most = 0
    async with stream as events:
        async for event in events:
            most = max(most, len(stream._buffer) + 1)  # the one just taken was waiting too
            if isinstance(event, al.MessageUpdate) and isinstance(event.event, al.stream.TextDelta):
                deltas.append(event.event.delta)
            await anyio.lowlevel.checkpoint()  # a consumer slower than the loop
    assert "".join(deltas) == TEXT
    assert stream.result.text == TEXT
    # The check after each update bounds the buffer; the few events the loop sends between
    # checks (a message's start and end) may go past it by one each.
    assert 8 <= most <= 10


async def test_updates_appended_after_the_consumer_left_are_dropped_at_the_next_check() -> None:
    channel = EventChannel(capacity=4)
    channel.close_receiver()
    update = al.MessageUpdate(event=al.stream.TextDelta(index=0, delta="x"))
    for _ in range(3):
        for _ in range(channel.capacity):
            channel.buffer.append(update)  # what the loop does, with no check per update
        assert len(channel.buffer) == channel.capacity
        with anyio.fail_after(5):
            await channel.wait_writable()  # never waits for a consumer that has gone
        assert not channel.buffer
    channel.send(update)  # and an ordinary send after it is dropped at once
    assert not channel.buffer


async def test_leaving_the_stream_early_keeps_the_buffer_bounded() -> None:
    stream = _long_stream(capacity=8)
    async with stream as events:
        async for event in events:
            if isinstance(event, al.MessageUpdate):
                break
    assert len(stream._buffer) <= 8


def _tool_run(release: anyio.Event | None = None) -> al.loop.AgentLoopConfig:
    @al.tool
    async def step() -> str:
        """Wait for the release (or one checkpoint), then return."""
        if release is not None:
            await release.wait()
        await anyio.lowlevel.checkpoint()
        return "stepped"

    script = [reply_tool_calls(("step", {}), ("step", {})), reply_text("done " * 20)]
    return config(script, tools=[step])


async def _reference() -> list[str]:
    seen: list[al.AgentEvent] = []
    await al.loop.run_loop(
        [al.UserMessage.from_text("go")], al.loop.AgentContext(), _tool_run(), on_event=seen.append
    )
    return [type(e).__name__ for e in seen]


async def test_a_loop_cancelled_mid_stream_and_a_new_one_lose_and_repeat_nothing() -> None:
    reference = await _reference()
    got: list[str] = []
    prompt = [al.UserMessage.from_text("go")]
    release = anyio.Event()
    async with al.loop.agent_loop(prompt, al.loop.AgentContext(), _tool_run(release)) as events:
        with anyio.CancelScope() as scope:
            async for event in events:
                got.append(type(event).__name__)
                if isinstance(event, al.ToolExecutionStart):
                    scope.cancel()  # lands when the loop next waits for an event
        assert scope.cancelled_caught
        assert "ToolExecutionStart" in got and len(got) < len(reference)
        release.set()
        async for event in events:  # a new loop goes on from the first event not taken
            got.append(type(event).__name__)
    assert got == reference


async def test_a_loop_left_with_break_and_the_next_one_go_on_where_it_stopped() -> None:
    reference = await _reference()
    got: list[str] = []
    prompt = [al.UserMessage.from_text("go")]
    async with al.loop.agent_loop(prompt, al.loop.AgentContext(), _tool_run()) as events:
        for stop in ("TurnStart", "ToolExecutionEnd", "TurnEnd"):
            async for event in events:
                got.append(type(event).__name__)
                if got[-1] == stop:
                    break
        async for event in events:
            got.append(type(event).__name__)
        with pytest.raises(StopAsyncIteration):
            await events.__anext__()  # nothing left, by the other way to take an event
    assert got == reference
