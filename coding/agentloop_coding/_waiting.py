"""Saying that the model has not begun to answer yet, while it has not.

A provider waits up to its ``first_byte_timeout`` (two minutes by default) for a silent
server; a person watching a terminal should not wonder for two minutes whether anything is
happening. ``WaitingNotice`` follows a run's events and, every ``every`` seconds between the
start of a model call (a turn, or a retry) and the first piece of its answer, calls ``say``
with a line such as "no answer from http://127.0.0.1:8080/v1 for 30 s, still waiting…".

It lives here, with the applications that show it (``agentloop run``, the TUI), and not in the
providers: a notice there would cost a task per model call, for everyone.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import anyio

from agentloop import (
    AgentEnd,
    AssistantMessage,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    StreamRetry,
    TurnEnd,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop import AgentEvent

__all__ = ["DEFAULT_EVERY", "WaitingNotice"]

DEFAULT_EVERY = 30.0
_OVER = (TurnEnd, AgentEnd)


def _every_from_environment() -> float:
    raw = os.environ.get("AGENTLOOP_WAIT_NOTICE")
    try:
        every = float(raw) if raw else DEFAULT_EVERY
    except ValueError:
        return DEFAULT_EVERY
    return every if every > 0 else DEFAULT_EVERY


class WaitingNotice:
    """Calls ``say(line)`` every ``every`` seconds while a model call has no answer yet.

    Feed it every event of the run (``feed``) and run ``run()`` in a task beside the run
    (cancel it when the run ends).

    Args:
        where: what is waited for, as the line names it (a base URL, a model string).
        say: shows a line (it is called on the event loop's thread).
        every: seconds between lines (default: ``AGENTLOOP_WAIT_NOTICE``, else 30).
    """

    def __init__(self, where: str, say: Callable[[str], Any], every: float | None = None) -> None:
        self.where = where
        self.say = say
        self.every = every if every is not None else _every_from_environment()
        self.since: float | None = None  # when the current model call started, if waiting
        self._changed = anyio.Event()

    def feed(self, event: AgentEvent) -> None:
        """Follow the run: a model call (or its retry) starts a wait; the first piece of its
        answer, or the end of the turn, ends it."""
        kind = type(event)
        if kind is StreamRetry or (
            kind is MessageStart and type(event.message) is AssistantMessage  # type: ignore[union-attr]
        ):
            self.since = anyio.current_time()  # (an answer's start is sent with its request)
        elif self.since is None:
            return
        elif (
            kind is MessageUpdate
            or kind in _OVER
            or (
                kind is MessageEnd and type(event.message) is AssistantMessage  # type: ignore[union-attr]
            )
        ):
            self.since = None
        else:
            return
        self._changed.set()

    async def run(self) -> None:
        """Say the lines, until cancelled."""
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            while (since := self.since) is not None:
                waited = anyio.current_time() - since
                with anyio.move_on_after(self.every - waited % self.every):
                    await self._changed.wait()
                if self._changed.is_set():
                    self._changed = anyio.Event()
                    continue
                waited = anyio.current_time() - since
                self.say(f"no answer from {self.where} for {round(waited)} s, still waiting…")
