"""``RecommendedPolicies``: a budget, a turn limit, a sandbox and a deny list in one call.

The bundle is a starting point for an agent that reads and writes files on a person's behalf:

* ``MaxTurns(25)`` and ``Budget(max_tokens=1_000_000, max_cost=5.0)`` as pre-turn policies;
* ``ToolDenyList(DEFAULT_DENIED)``, shell and code-execution tools, as a pre-dispatch policy;
* ``Sandbox(roots)``, with the current working directory as the one root by default, as a
  pre-dispatch policy after the deny list.

Its four fields are the four policy lists of ``AgentLoopConfig`` and ``Agent``; ``as_kwargs()``
gives them as keyword arguments, so any of these work::

    policies = RecommendedPolicies(roots=["./workspace"])
    agent = Agent(model=model, stream_fn=provider, tools=tools, **policies.as_kwargs())
    config = AgentLoopConfig(model=model, stream_fn=provider,
                             pre_dispatch_policies=[*policies.pre_dispatch_policies, mine])

Each part can be tuned through a keyword, or left out with ``None``; ``extra_*`` lists append
policies of your own after the bundled ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._limits import Budget, MaxTurns
from ._sandbox import Sandbox
from ._tool_filter import ToolDenyList

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable, Mapping, Sequence

    from agentloop.policy import PostLoopPolicy, PostTurnPolicy, PreDispatchPolicy, PreTurnPolicy

__all__ = ["DEFAULT_DENIED", "RecommendedPolicies"]

DEFAULT_DENIED: tuple[str, ...] = (
    "bash",
    "sh",
    "zsh",
    "powershell",
    "cmd",
    "*shell*",
    "exec",
    "exec_*",
    "*_exec",
    "eval",
    "run_command",
    "execute_command",
    "run_code",
    "execute_code",
    "python",
    "run_python",
    "execute_python",
)
"""Tool names denied by default: shells and arbitrary code execution (case ignored)."""


class RecommendedPolicies:
    """Safe defaults for the four policy slots.

    Args:
        roots: directories file paths must stay in (default: the current working directory);
            ``None`` leaves out the sandbox.
        max_turns: turn limit per run; ``None`` leaves it out.
        max_tokens: token budget per run (with ``max_cost``; both ``None`` leaves it out).
        max_cost: cost budget per run.
        deny: tool name patterns to deny; ``None`` or empty leaves the deny list out.
        paths: per-tool path arguments for the sandbox (see ``Sandbox``).
        extra_pre_turn: more pre-turn policies, run after the bundled ones.
        extra_pre_dispatch: more pre-dispatch policies, run after the bundled ones.
        extra_post_turn: more post-turn policies, run after the bundled ones.
        extra_post_loop: more post-loop policies, run after the bundled ones.

    Attributes:
        max_turns: the bundled ``MaxTurns`` (``None`` when left out).
        budget: the bundled ``Budget`` (``None`` when left out).
        deny_list: the bundled ``ToolDenyList`` (``None`` when left out).
        sandbox: the bundled ``Sandbox`` (``None`` when left out).
        pre_turn_policies: the list to give the loop's ``pre_turn_policies``.
        pre_dispatch_policies: the list to give the loop's ``pre_dispatch_policies``.
        post_turn_policies: the list to give the loop's ``post_turn_policies``.
        post_loop_policies: the list to give the loop's ``post_loop_policies``.

    Raises:
        ValueError: an invalid limit (as ``MaxTurns``, ``Budget``) or pattern.
    """

    __slots__ = (
        "budget",
        "deny_list",
        "max_turns",
        "post_loop_policies",
        "post_turn_policies",
        "pre_dispatch_policies",
        "pre_turn_policies",
        "sandbox",
    )

    def __init__(
        self,
        *,
        roots: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = (".",),
        max_turns: int | None = 25,
        max_tokens: int | None = 1_000_000,
        max_cost: float | None = 5.0,
        deny: Iterable[str] | None = DEFAULT_DENIED,
        paths: Mapping[str, Sequence[str]] | None = None,
        extra_pre_turn: Iterable[PreTurnPolicy] = (),
        extra_pre_dispatch: Iterable[PreDispatchPolicy] = (),
        extra_post_turn: Iterable[PostTurnPolicy] = (),
        extra_post_loop: Iterable[PostLoopPolicy] = (),
    ) -> None:
        self.max_turns = MaxTurns(max_turns) if max_turns is not None else None
        self.budget = (
            Budget(max_tokens=max_tokens, max_cost=max_cost)
            if max_tokens is not None or max_cost is not None
            else None
        )
        patterns = list(deny) if deny is not None else []
        self.deny_list = ToolDenyList(patterns) if patterns else None
        self.sandbox = Sandbox(roots, paths=paths) if roots is not None else None

        pre_turn: list[PreTurnPolicy] = [p for p in (self.max_turns, self.budget) if p is not None]
        pre_dispatch: list[PreDispatchPolicy] = [
            p for p in (self.deny_list, self.sandbox) if p is not None
        ]
        self.pre_turn_policies: list[PreTurnPolicy] = [*pre_turn, *extra_pre_turn]
        self.pre_dispatch_policies: list[PreDispatchPolicy] = [*pre_dispatch, *extra_pre_dispatch]
        self.post_turn_policies: list[PostTurnPolicy] = list(extra_post_turn)
        self.post_loop_policies: list[PostLoopPolicy] = list(extra_post_loop)

    def as_kwargs(self) -> dict[str, Any]:
        """The four policy lists as keyword arguments for ``AgentLoopConfig`` or ``Agent``."""
        return {
            "pre_turn_policies": list(self.pre_turn_policies),
            "pre_dispatch_policies": list(self.pre_dispatch_policies),
            "post_turn_policies": list(self.post_turn_policies),
            "post_loop_policies": list(self.post_loop_policies),
        }

    def __repr__(self) -> str:
        parts = [
            repr(p)
            for p in (self.max_turns, self.budget, self.deny_list, self.sandbox)
            if p is not None
        ]
        return f"RecommendedPolicies({', '.join(parts)})"
