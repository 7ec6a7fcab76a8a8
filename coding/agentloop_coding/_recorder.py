"""Recording a new session from its first real exchange on, not from its start.

A front end makes its session before the user says anything (the terminal UI, an editor over
ACP), and a first prompt may fail before the model answers (a wrong API key, a model that does
not exist). Creating the stored session at once would leave an empty or failed session behind
for every such start, cluttering the resume picker. ``FirstExchangeRecorder`` holds the
messages until the first answer that is not an error, then creates the session and records
everything, the held messages first, so the stored history is the agent's own.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from agentloop import AssistantMessage, SessionNotFound, StopReason
from agentloop.sessions import SessionRecorder

if TYPE_CHECKING:
    from agentloop import AgentMessage
    from agentloop.abc import SessionStore

__all__ = ["FirstExchangeRecorder", "answered", "new_session_id"]


def answered(message: AgentMessage) -> bool:
    """Whether ``message`` is an answer of the model that is not an error."""
    return (
        type(message) is AssistantMessage
        and not message.error_message
        and message.stop_reason in (StopReason.STOP, StopReason.LENGTH, StopReason.TOOL_USE)
    )


class FirstExchangeRecorder(SessionRecorder):
    """Records a new session only from its first real exchange on (see the module docs).

    Until an answer that is not an error is committed, messages are held here, not queued:
    the store is not touched, and nothing counts as unstored. With that answer the held
    messages are queued in order, and the next flush creates the session before it appends.
    """

    def __init__(
        self, store: SessionStore, session_id: str, *, model: str, metadata: dict[str, Any]
    ) -> None:
        super().__init__(store, session_id)
        self.created = False
        self._held: list[AgentMessage] | None = []
        self._fields = (model, metadata)
        self._creating = False

    def record(self, message: AgentMessage) -> None:
        held = self._held
        if held is None:
            super().record(message)
            return
        held.append(message)
        if answered(message):
            self._held = None
            for kept in held:
                super().record(kept)

    async def flush(self) -> None:
        if not self.created and self._held is None:
            if self._creating:
                return  # another flush is creating it; the messages stay queued for it
            self._creating = True
            try:
                model, metadata = self._fields
                await self.store.create(session_id=self.session_id, model=model, metadata=metadata)
            finally:
                self._creating = False
            self.created = True
        await super().flush()


async def new_session_id(store: SessionStore, session_id: str | None) -> str:
    """The id a new session will be stored under: ``session_id`` (checked now, since the
    session is only created later) or a fresh one.

    Raises:
        ValueError: ``session_id`` is malformed or taken.
    """
    if session_id is None:
        return uuid.uuid4().hex
    try:
        await store.info(session_id)  # a malformed id raises ValueError here
    except SessionNotFound:
        return session_id
    raise ValueError(f"session id {session_id!r} is taken")
