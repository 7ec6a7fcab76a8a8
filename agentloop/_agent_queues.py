"""An agent's steering and follow-up queues.

Steering messages interrupt the running tool batch (at once by default: ``steer`` tells the
running batch, which cancels its calls; or, with ``steering_interrupt="after_call"``, when a
running call ends); follow-ups continue a run that would otherwise end. Both are safe to fill from any
task and any thread; the run takes them one at a time or all at once (``QueueMode``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

from ._types import AgentMessage, UserMessage

if TYPE_CHECKING:
    import threading

__all__ = ["AgentQueues", "QueueMode", "QueuePoll"]

QueueMode: TypeAlias = Literal["one_at_a_time", "all"]
"""How a run takes queued messages: ``"one_at_a_time"`` (one per turn) or ``"all"`` at once."""


class AgentQueues:
    """The queue half of ``Agent`` (a mixin: ``Agent`` sets these attributes up)."""

    if not TYPE_CHECKING:  # no dict of its own (``Agent`` holds the slots); mypy would
        __slots__ = ()  # check this mixin's assignments against an empty list

    _lock: threading.Lock
    # Made at the first message queued (most agents never queue one): until then ``None``, not
    # an empty list for the collector to walk with every agent.
    _steering: list[AgentMessage] | None
    _follow_up: list[AgentMessage] | None
    steering_mode: QueueMode
    follow_up_mode: QueueMode

    if TYPE_CHECKING:

        def _steering_arrived(self) -> None:
            """Tell the running batch, if any (``AgentRunner`` implements it)."""

    @staticmethod
    def _as_message(message: str | AgentMessage) -> AgentMessage:
        return UserMessage.from_text(message) if isinstance(message, str) else message

    def steer(self, message: str | AgentMessage) -> None:
        """Queue a steering message: it interrupts the running tool batch and starts the next
        turn.

        With ``steering_interrupt="now"`` (the default) the calls still running are cancelled
        at once (their results say steering interrupted them, and with what); with
        ``"after_call"``, when one of them ends. Safe from any task, and from any thread.
        """
        message = self._as_message(message)
        with self._lock:
            if self._steering is None:
                self._steering = []
            self._steering.append(message)
        self._steering_arrived()

    def follow_up(self, message: str | AgentMessage) -> None:
        """Queue a message for when the agent would otherwise stop. Safe from any thread."""
        message = self._as_message(message)
        with self._lock:
            if self._follow_up is None:
                self._follow_up = []
            self._follow_up.append(message)

    def clear_steering(self) -> None:
        """Drop the queued steering messages."""
        with self._lock:
            if self._steering:
                self._steering.clear()

    def clear_follow_up(self) -> None:
        """Drop the queued follow-ups."""
        with self._lock:
            if self._follow_up:
                self._follow_up.clear()

    def clear_queues(self) -> None:
        """Drop every queued message, steering and follow-up."""
        with self._lock:
            if self._steering:
                self._steering.clear()
            if self._follow_up:
                self._follow_up.clear()

    def has_queued_messages(self) -> bool:
        """Whether a steering message or a follow-up waits."""
        return bool(self._steering or self._follow_up)

    @property
    def queued_steering(self) -> list[AgentMessage]:
        """A copy of the steering messages waiting, oldest first."""
        return list(self._steering or ())

    @property
    def queued_follow_up(self) -> list[AgentMessage]:
        """A copy of the follow-ups waiting, oldest first."""
        return list(self._follow_up or ())

    def _take(self, *, steering: bool) -> list[AgentMessage]:
        """What a poll of the steering (or follow-up) queue takes, as its mode says."""
        with self._lock:
            queue = self._steering if steering else self._follow_up
            mode = self.steering_mode if steering else self.follow_up_mode
            if not queue:
                return []
            if mode == "all":
                taken = list(queue)
                queue.clear()
                return taken
            return [queue.pop(0)]


class QueuePoll:
    """One of an agent's queues as a run's polling hook (``get_steering_messages`` or
    ``get_follow_up_messages``).

    The loop checks for cancellation just before it polls, so a run being cancelled never takes
    a message it will not send. ``has_messages`` lets it skip both, check and poll, while the
    queue is empty: the common case, after every tool call and every turn.
    """

    __slots__ = ("_agent", "_steering")

    def __init__(self, agent: AgentQueues, *, steering: bool) -> None:
        self._agent = agent
        self._steering = steering

    def has_messages(self) -> bool:
        agent = self._agent
        return bool(agent._steering if self._steering else agent._follow_up)

    async def __call__(self) -> list[AgentMessage]:
        return self.take_nowait()

    def take_nowait(self) -> list[AgentMessage]:
        """What a poll takes, without waiting (the queue's mode says how many)."""
        agent = self._agent
        return agent._take(steering=self._steering)
