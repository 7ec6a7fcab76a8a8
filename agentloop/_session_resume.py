"""Loading a stored session for an agent to continue: its history repaired first.

A tool call left without a result (the process died mid-batch) gets a synthetic error result,
so the history handed to a model is always well paired.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ._types import AgentMessage, AssistantMessage, Text, ToolCall, ToolResultMessage, UserMessage

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._abc import SessionStore

__all__ = ["INTERRUPTED", "load_session", "repair_history"]

logger = logging.getLogger("agentloop.sessions")


INTERRUPTED = "tool call interrupted: the session ended before the tool returned a result"


def repair_history(messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    """Pair every tool call with a result; drop results that answer no call.

    A call with no result gets a synthetic error result, placed before the next user or
    assistant message (or at the end). The repair is deterministic (a synthetic result carries
    its call's timestamp), so repairing the same stored history twice gives equal results.
    """
    out: list[AgentMessage] = []
    pending: dict[str, ToolCall] = {}
    stamp = 0

    def close() -> None:
        for call in pending.values():
            out.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[Text(text=INTERRUPTED)],
                    is_error=True,
                    timestamp=stamp,
                )
            )
        pending.clear()

    for message in messages:
        cls = type(message)
        if cls is ToolResultMessage:
            assert isinstance(message, ToolResultMessage)
            if pending.pop(message.tool_call_id, None) is None:
                logger.warning("dropping a result for unknown tool call %r", message.tool_call_id)
                continue
        elif cls is AssistantMessage:
            assert isinstance(message, AssistantMessage)
            close()
            pending = {c.id: c for c in message.content if isinstance(c, ToolCall)}
            stamp = message.timestamp
        elif cls is UserMessage:
            close()
        out.append(message)
    close()
    return out


async def load_session(store: SessionStore, session_id: str) -> list[AgentMessage]:
    """Load a session for an agent to continue from, its history repaired (``repair_history``).

    Raises:
        SessionNotFound: no such session.
    """
    return repair_history(await store.load(session_id))
