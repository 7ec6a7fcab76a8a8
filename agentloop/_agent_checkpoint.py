"""Checkpoints: an agent's whole resumable state as one JSON-friendly struct, and pausing.

``agent.checkpoint()`` captures history, queues, model, usage and plan mode;
``Agent.from_checkpoint`` rebuilds an agent from one. ``await agent.pause()`` stops the running
run at the end of its current turn and returns a checkpoint; ``agent.pause_nowait()`` only asks.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import msgspec

from ._policy import CONTINUE, PolicyContext, PolicyVerdict, Stop
from ._types import AgentMessage, Cost, ModelSpec, Usage

if TYPE_CHECKING:
    from ._abc import AgentTool
    from ._loop import _Run

__all__ = ["AgentCheckpoints", "Checkpoint", "PauseAtTurnEnd"]


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What ``Agent.checkpoint()`` captures and ``Agent.from_checkpoint()`` rebuilds from.

    Tools are code, so only their names are kept; ``from_checkpoint`` takes the tools
    themselves. Encode with ``agentloop.encode`` and decode with
    ``agentloop.decode(data, Checkpoint)`` so custom messages round-trip too.
    """

    version: int = 1
    system_prompt: str = ""
    model: ModelSpec
    messages: list[AgentMessage] = msgspec.field(default_factory=list)
    steering: list[AgentMessage] = msgspec.field(default_factory=list)
    follow_up: list[AgentMessage] = msgspec.field(default_factory=list)
    tool_names: list[str] = msgspec.field(default_factory=list)
    usage: Usage = msgspec.field(default_factory=Usage)
    cost: Cost = msgspec.field(default_factory=Cost)
    plan_mode: bool = False


class PauseAtTurnEnd:
    """The agent's own post-turn policy: stop the run at the end of a turn once asked."""

    name = "pause"

    def __init__(self, agent: AgentCheckpoints) -> None:
        # Weak: the agent holds this policy, and a cycle would leave a dropped agent to the
        # cyclic GC instead of freeing it at once.
        self._agent = weakref.ref(agent)

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        agent = self._agent()
        return Stop(reason="paused") if agent is not None and agent._pause_requested else CONTINUE


class AgentCheckpoints:
    """The checkpoint half of ``Agent`` (a mixin: ``Agent`` sets these attributes up)."""

    if not TYPE_CHECKING:  # no dict of its own (``Agent`` holds the slots); mypy would
        __slots__ = ()  # check this mixin's assignments against an empty list

    system_prompt: Any
    model: ModelSpec
    plan_mode: bool
    usage: Usage
    cost: Cost
    _messages: list[AgentMessage]
    _steering: list[AgentMessage] | None
    _follow_up: list[AgentMessage] | None
    _tools: dict[str, AgentTool]
    _pause_requested: bool
    _pauser: PauseAtTurnEnd | None
    _run: _Run | None
    _running: bool

    def checkpoint(self) -> Checkpoint:
        """Everything needed to resume this agent later (round-trips through JSON).

        Raises:
            TypeError: the system prompt is a callable (code, like tools, is not captured:
                give it again to ``from_checkpoint``).
        """
        if not isinstance(self.system_prompt, str):
            raise TypeError(
                "a dynamic system prompt cannot be checkpointed; pass it again to "
                "Agent.from_checkpoint(..., system_prompt=...)"
            )
        return Checkpoint(
            system_prompt=self.system_prompt,
            model=self.model,
            messages=list(self._messages),
            steering=list(self._steering or ()),
            follow_up=list(self._follow_up or ()),
            tool_names=list(self._tools),
            usage=self.usage,
            cost=self.cost,
            plan_mode=self.plan_mode,
        )

    if TYPE_CHECKING:  # provided by ``Agent``

        def _inside_own_run(self) -> bool: ...
        async def wait_idle(self) -> None: ...

    async def pause(self) -> Checkpoint:
        """Stop the running run at the end of its current turn and return a checkpoint.

        Await it from outside the run (another task). From inside it (a tool, a hook) use
        ``pause_nowait()`` and take ``checkpoint()`` once the run has ended.

        Raises:
            RuntimeError: awaited from inside the run it would wait for.
        """
        if self._inside_own_run():
            raise RuntimeError(
                "pause() cannot be awaited from inside the agent's own run (it would wait for "
                "itself); call agent.pause_nowait() and take agent.checkpoint() after the run"
            )
        if self.pause_nowait():
            await self.wait_idle()
        return self.checkpoint()

    def pause_nowait(self) -> bool:
        """Ask the running run to stop at the end of its current turn; returns whether one runs.

        Synchronous, so tools, subscribers and policies can call it. The run ends with
        ``stopped_by`` set; ``checkpoint()`` then captures a state ``continue_run`` resumes from.
        """
        if not self._running:
            return False
        self._pause_requested = True
        pauser = self._pauser
        if pauser is None:
            pauser = self._pauser = PauseAtTurnEnd(self)
        run = self._run
        if run is not None:
            # The run's own list (``Agent._config`` builds one per run), appended to in place:
            # a post-turn policy asking for the pause sees it evaluated in that same turn.
            policies = run.config.post_turn_policies
            assert isinstance(policies, list)
            if not any(policy is pauser for policy in policies):
                policies.append(pauser)
        return True
