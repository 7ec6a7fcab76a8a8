"""Small helpers shared by the provider tests."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, cast

from agentloop.stream import Accumulator, AssistantMessageEvent

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from agentloop import AssistantMessage, ModelSpec, StreamOptions
    from agentloop.stream import LlmContext, StreamFn

__all__ = ["collect", "opened"]


def opened(
    fn: StreamFn, model: ModelSpec, context: LlmContext, options: StreamOptions
) -> contextlib.aclosing[AsyncGenerator[AssistantMessageEvent, None]]:
    """Start a call and wrap it the way the loop does: closed on exit, whatever happens."""
    stream = cast("AsyncGenerator[AssistantMessageEvent, None]", fn(model, context, options))
    return contextlib.aclosing(stream)


async def collect(
    fn: StreamFn, model: ModelSpec, context: LlmContext, options: StreamOptions
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    """Every event of one call, and the message they fold into."""
    accumulator = Accumulator(model)
    events: list[AssistantMessageEvent] = []
    async with opened(fn, model, context, options) as stream:
        async for event in stream:
            events.append(event)
            accumulator.push(event)
    return events, accumulator.finish()
