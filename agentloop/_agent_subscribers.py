"""An agent's subscribers: callbacks that see every event of its runs, synchronously."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from ._events import AgentEvent
    from ._loop import _Run

__all__ = ["AgentSubscribers", "Subscriber"]

log = logging.getLogger("agentloop.agent")

Subscriber: TypeAlias = Callable[["AgentEvent"], object]


class AgentSubscribers:
    """The subscriber half of ``Agent`` (a mixin: ``Agent`` sets these attributes up)."""

    if not TYPE_CHECKING:  # no dict of its own (``Agent`` holds the slots); mypy would
        __slots__ = ()  # check this mixin's assignments against an empty list

    _subscribers: dict[int, Subscriber]
    _subscriber_list: tuple[tuple[int, Subscriber], ...]
    _subscriber_callbacks: tuple[Subscriber, ...]  # the same, without handles (per token)
    _next_handle: int
    _run: _Run | None

    def subscribe(self, callback: Subscriber) -> int:
        """Call ``callback(event)`` for every event, synchronously; returns a handle.

        Callbacks run on the event loop's thread, in the order the events happen. A callback
        that raises is removed and reported; the run goes on.
        """
        handle = self._next_handle
        self._next_handle += 1
        self._subscribers[handle] = callback
        self._subscriber_list = tuple(self._subscribers.items())
        self._subscriber_callbacks = tuple(self._subscribers.values())
        self._route_updates()  # a subscriber joining mid-run sees the events from then on
        return handle

    def unsubscribe(self, handle: int) -> bool:
        """Remove a subscriber; within a callback it takes effect after the current event."""
        found = self._subscribers.pop(handle, None) is not None
        self._subscriber_list = tuple(self._subscribers.items())
        self._subscriber_callbacks = tuple(self._subscribers.values())
        self._route_updates()
        return found

    def _route_updates(self) -> None:
        """Point the running run's ``MessageUpdate`` events, once per streamed token, at the
        subscribers: none, the one itself (no call in between; the loop catches what it raises
        and calls ``_update_failed``), or ``_on_update`` for several.

        A run with an event stream (``Agent.stream``) keeps its own route: the stream takes
        every event, and the subscribers see them on the way.
        """
        run = self._run
        if run is None:
            return
        callbacks = self._subscriber_callbacks
        if run.channel is not None:
            run.observed = True
        elif len(callbacks) == 1:
            run.emit_update = callbacks[0]
            run.update_failed = self._update_failed
            run.observed = True
        else:
            # None (the usual run: updates are then made only for an observer, and the run's
            # ``emit`` hands them to ``_on_update`` too) or several.
            run.emit_update = self._on_update if callbacks else run.emit
            run.update_failed = None
            run.observed = bool(callbacks)

    def _update_failed(self) -> None:
        """The one subscriber, called directly with an update, raised: it is unsubscribed."""
        run = self._run
        callback = run.emit_update if run is not None else None
        log.exception("subscriber %r raised; it is unsubscribed", callback)
        for handle, subscribed in self._subscriber_list:
            if subscribed is callback:
                self.unsubscribe(handle)
                break

    def _on_update(self, event: AgentEvent) -> None:
        """A ``MessageUpdate``, once per streamed token: straight to the subscribers."""
        for callback in self._subscriber_callbacks:
            try:
                callback(event)
            except Exception:
                log.exception("subscriber %r raised; it is unsubscribed", callback)
                for handle, subscribed in self._subscriber_list:
                    if subscribed is callback:
                        self.unsubscribe(handle)
                        break

    def _notify(self, event: AgentEvent) -> None:
        for handle, callback in self._subscriber_list:
            try:
                callback(event)
            except Exception:
                log.exception("subscriber %r raised; it is unsubscribed", callback)
                self.unsubscribe(handle)
