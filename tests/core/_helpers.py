"""Small builders shared by the loop tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import agentloop as al
from agentloop.testing import ScriptedStream, ScriptItem

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

MODEL = al.ModelSpec(provider="test", model_id="scripted")
NO_RETRY_DELAY = al.retry.ExponentialBackoff(base_delay=0.0, jitter=False, max_attempts=3)


def config(
    script: Sequence[ScriptItem] | al.stream.StreamFn, *, tools: Sequence[Any] = (), **kwargs: Any
) -> al.loop.AgentLoopConfig:
    stream = script if callable(script) else ScriptedStream(script)
    kwargs.setdefault("retry_strategy", NO_RETRY_DELAY)
    return al.loop.AgentLoopConfig(model=MODEL, stream_fn=stream, tools=tools, **kwargs)


def names(events: Sequence[al.AgentEvent]) -> list[str]:
    """Event type names, with consecutive MessageUpdates collapsed into one."""
    out: list[str] = []
    for event in events:
        name = type(event).__name__
        if name == "MessageUpdate" and out and out[-1] == "MessageUpdate":
            continue
        out.append(name)
    return out


def paired(messages: Sequence[al.AgentMessage]) -> bool:
    """Every tool call has exactly one result, right after its message, in call order."""
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if isinstance(message, al.ToolResultMessage):
            return False
        if isinstance(message, al.AssistantMessage) and message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            got = [
                m.tool_call_id
                for m in messages[i : i + len(ids)]
                if isinstance(m, al.ToolResultMessage)
            ]
            if got != ids:
                return False
            i += len(ids)
    return True


def results_of(messages: Sequence[al.AgentMessage]) -> list[al.ToolResultMessage]:
    return [m for m in messages if isinstance(m, al.ToolResultMessage)]


class Recorder:
    """Collects events; optionally calls ``hook(event)`` after recording each one."""

    def __init__(self, hook: Callable[[al.AgentEvent], None] | None = None) -> None:
        self.events: list[al.AgentEvent] = []
        self.hook = hook

    def __call__(self, event: al.AgentEvent) -> None:
        self.events.append(event)
        if self.hook is not None:
            self.hook(event)

    def of(self, cls: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]
