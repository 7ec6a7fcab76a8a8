"""``RunExtras``: what one run adds to its agent's configuration, for that run only."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ._abc import AgentTool

__all__ = ["RunExtras"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunExtras:
    """What one run adds to its agent's configuration, for that run only.

    Typed output, teams and sub-agents use it; the agent itself never changes.

    Attributes:
        tools: more tools (replacing the agent's of the same name, for this run).
        pre_turn_policies: more pre-turn policies, after the agent's.
        post_turn_policies: more post-turn policies, after the agent's.
        post_loop_policies: more post-loop policies, after the agent's.
        instruction: appended to the system prompt.
        turn_options: per-turn stream options (``AgentLoopConfig.turn_options``).
        approval: the approval hook, when the agent has none of its own.
    """

    tools: Sequence[AgentTool] = ()
    pre_turn_policies: Sequence[Any] = ()
    post_turn_policies: Sequence[Any] = ()
    post_loop_policies: Sequence[Any] = ()
    instruction: str = ""
    turn_options: Callable[[Any, Any], Any] | None = None
    approval: Any = None
