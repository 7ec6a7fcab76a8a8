"""Small builders shared by the loop tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import agentloop as al
from agentloop.testing import ScriptedStream, ScriptItem, reply_text, reply_tool_calls

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


def agent(name: str, script: list[Any], **kwargs: Any) -> al.Agent[Any]:
    """A named agent whose model answers from ``script``."""
    return al.Agent(model=MODEL, stream_fn=ScriptedStream(script), name=name, **kwargs)


def _usage(tokens: int) -> al.Usage:
    return al.Usage(input=tokens, output=tokens, total=2 * tokens)


def text(answer: str, tokens: int = 10) -> al.AssistantMessage:
    """A text answer that spent ``tokens`` in and ``tokens`` out."""
    return reply_text(answer, usage=_usage(tokens))


def calls(*items: tuple[str, dict[str, Any]], tokens: int = 10) -> al.AssistantMessage:
    """An answer calling tools that spent ``tokens`` in and ``tokens`` out."""
    return reply_tool_calls(*items, usage=_usage(tokens))


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
