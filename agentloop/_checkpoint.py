"""``Checkpoint``: an agent's whole resumable state, as one JSON-friendly struct."""

from __future__ import annotations

import msgspec

from ._types import AgentMessage, Cost, ModelSpec, Usage

__all__ = ["Checkpoint"]


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What ``Agent.checkpoint()`` captures and ``Agent.restore()`` rebuilds from.

    Tools are code, so only their names are kept; ``restore`` takes the tools themselves.
    Encode with ``agentloop.encode`` and decode with ``agentloop.decode(data, Checkpoint)`` so
    custom messages round-trip too.
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
