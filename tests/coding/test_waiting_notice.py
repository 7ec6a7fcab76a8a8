"""``WaitingNotice``: lines while a model call has not begun to answer, none once it has."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

import agentloop as al
from agentloop.stream import Done, StreamStart, TextDelta, TextStart
from agentloop_coding import WaitingNotice

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio


async def test_it_speaks_while_waiting_and_stops_at_the_first_piece_of_the_answer() -> None:
    lines: list[str] = []
    answer = anyio.Event()

    def say(line: str) -> None:
        lines.append(line)
        if len(lines) == 2:
            answer.set()  # the server answers after the second line

    async def late(
        model: al.ModelSpec, context: al.stream.LlmContext, options: al.StreamOptions
    ) -> AsyncIterator[al.stream.AssistantMessageEvent]:
        await answer.wait()
        yield StreamStart()
        yield TextStart(index=0)
        yield TextDelta(index=0, delta="hi")
        yield Done(stop_reason=al.StopReason.STOP, usage=al.Usage())

    agent = al.Agent(model=al.ModelSpec(provider="x", model_id="y"), stream_fn=late)
    notice = WaitingNotice("http://127.0.0.1:8080/v1", say, every=0.1)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(notice.run)
            async with agent.stream("hi") as events:
                async for event in events:
                    notice.feed(event)
            assert notice.since is None
            tg.cancel_scope.cancel()
    assert lines == [
        "no answer from http://127.0.0.1:8080/v1 for 0 s, still waiting…",
        "no answer from http://127.0.0.1:8080/v1 for 0 s, still waiting…",
    ]
    assert events.result.output == "hi"
