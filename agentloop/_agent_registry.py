"""A registry of named agents, run in a task group the caller owns, with mailboxes.

``async with AgentRegistry() as agents:`` opens the task group; ``agents.spawn(name, prompt)``
starts a registered agent's run in it and returns a handle to await, steer or abort; leaving the
block waits for every run (``abort_all()`` ends them sooner). ``send_to(name, text)`` drops a
message in an agent's mailbox: a follow-up it reads when it would otherwise stop, or when it
next runs. ``messaging_tool(sender)`` gives agents a tool to message each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

import anyio

from ._events import AgentToolResult
from ._types import UserMessage

if TYPE_CHECKING:
    from collections.abc import Generator
    from types import TracebackType

    from anyio.abc import TaskGroup

    from ._abc import OnUpdate
    from ._agent import Agent, AgentInput
    from ._types import AgentResult

__all__ = ["AgentHandle", "AgentRegistry"]


class AgentHandle:
    """A running (or finished) agent of a registry: await it for its result.

    Attributes:
        name: the agent's name in the registry.
        agent: the agent.
    """

    def __init__(self, name: str, agent: Agent[Any]) -> None:
        self.name = name
        self.agent = agent
        self._done = anyio.Event()
        self._result: AgentResult[Any] | None = None
        self._error: BaseException | None = None

    @property
    def done(self) -> bool:
        """Whether the run has ended."""
        return self._done.is_set()

    async def wait(self) -> AgentResult[Any]:
        """The run's result, once it ended.

        Raises:
            AgentError: the run could not start (``AlreadyRunning``, say) or raised.
        """
        await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def __await__(self) -> Generator[Any, None, AgentResult[Any]]:
        return self.wait().__await__()

    def steer(self, message: str) -> None:
        """Steer the running agent (see ``Agent.steer``)."""
        self.agent.steer(message)

    def follow_up(self, message: str) -> None:
        """Queue a follow-up (see ``Agent.follow_up``)."""
        self.agent.follow_up(message)

    def abort(self) -> None:
        """Abort the run (it ends with stop reason ``aborted``)."""
        self.agent.abort()

    async def _run(self, prompt: AgentInput | None) -> None:
        try:
            if prompt is None:
                self._result = await self.agent.continue_run(raise_on_error=False)
            else:
                self._result = await self.agent.prompt(prompt, raise_on_error=False)
        except Exception as exc:
            self._error = exc
        finally:
            self._done.set()


class AgentRegistry:
    """Named agents, spawned inside a task group the caller owns (``async with``).

    Args:
        agents: agents to register at once (by their ``name``).
    """

    def __init__(self, agents: tuple[Agent[Any], ...] | list[Agent[Any]] = ()) -> None:
        self._agents: dict[str, Agent[Any]] = {}
        self._handles: list[AgentHandle] = []
        self._tg: TaskGroup | None = None
        for agent in agents:
            self.register(agent)

    def register(self, agent: Agent[Any], *, name: str | None = None) -> None:
        """Add ``agent`` under ``name`` (its own name by default).

        Raises:
            ValueError: the name is taken.
        """
        key = name or agent.name
        if key in self._agents:
            raise ValueError(f"an agent named {key!r} is registered already")
        self._agents[key] = agent

    def __getitem__(self, name: str) -> Agent[Any]:
        return self._agents[name]

    @property
    def names(self) -> list[str]:
        """The names of the registered agents, in the order they were added."""
        return list(self._agents)

    async def __aenter__(self) -> Self:
        if self._tg is not None:
            raise RuntimeError("an AgentRegistry can be entered only once at a time")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg, self._tg = self._tg, None
        assert tg is not None
        if exc_type is not None:
            tg.cancel_scope.cancel()
        try:
            return await tg.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            from ._errors import single_exception

            raise single_exception(group) from None

    def spawn(self, name: str, prompt: AgentInput | None = None) -> AgentHandle:
        """Start the agent called ``name`` on ``prompt`` (or continue it, to read its mailbox).

        Raises:
            RuntimeError: the registry is not entered.
            KeyError: no agent has that name.
        """
        if self._tg is None:
            raise RuntimeError("spawn() needs the registry entered: async with registry: ...")
        handle = AgentHandle(name, self._agents[name])
        self._handles.append(handle)
        self._tg.start_soon(handle._run, prompt)
        return handle

    def send_to(self, name: str, text: str, *, sender: str | None = None) -> None:
        """Leave a message in the mailbox of the agent called ``name``.

        It arrives as a follow-up: when the agent's current run would end, or in its next run.

        Raises:
            KeyError: no agent has that name.
        """
        body = f"[message from {sender}] {text}" if sender else text
        self._agents[name].follow_up(UserMessage.from_text(body))

    def abort_all(self) -> None:
        """Abort every run this registry spawned."""
        for handle in self._handles:
            if not handle.done:
                handle.abort()

    def messaging_tool(self, sender: str) -> _SendMessage:
        """A tool for the agent called ``sender`` to message the others."""
        return _SendMessage(self, sender)


class _SendMessage:
    requires_approval = False
    read_only = False
    name = "send_message"
    label = "Send a message"

    def __init__(self, registry: AgentRegistry, sender: str) -> None:
        self.registry = registry
        self.sender = sender
        self.description = "Send a message to another agent; it reads it when it is free."
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "to": {"type": "string", "format": "not-path", "description": "The agent's name."},
                "text": {"type": "string", "format": "not-path", "description": "The message."},
            },
            "required": ["to", "text"],
            "additionalProperties": False,
        }

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        to = str(arguments["to"])
        if to not in self.registry.names:
            known = ", ".join(n for n in self.registry.names if n != self.sender)
            return AgentToolResult.error(f"no agent called {to!r}; there are: {known}")
        self.registry.send_to(to, str(arguments["text"]), sender=self.sender)
        return AgentToolResult.text(f"Message left for {to}.")
