"""How a run calls the application's turn-level policies, and what one that fails does.

A mixin of ``_Run`` (the loop's run), kept apart from the run's state and driver: a policy that
raises fails closed (the run ends with a ``HookFailed`` naming it) unless it says it fails
open; each verdict is told to the run's instrumentation.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ._errors import HookFailed
from ._policy import CONTINUE, Inject, PolicyContext, Stop

if TYPE_CHECKING:
    from collections.abc import Awaitable, Sequence

    from ._config import AgentLoopConfig
    from ._instrumentation import Observer
    from ._policy import MessagesView
    from ._types import AgentMessage, AssistantMessage, Cost, ToolResultMessage, Usage

__all__ = ["RunPolicies"]

log = logging.getLogger("agentloop.loop")


class RunPolicies:
    """The policy half of ``_Run`` (a mixin: ``_Run`` holds the state it reads)."""

    if TYPE_CHECKING:
        config: AgentLoopConfig
        observer: Observer | None
        turn: int
        view: MessagesView
        new_messages: list[AgentMessage]

        @property
        def usage(self) -> Usage: ...
        @property
        def cost(self) -> Cost: ...
    else:
        __slots__ = ()  # no dict of its own: ``_Run`` holds the slots

    @staticmethod
    def policy_name(policy: object) -> str:
        name = getattr(policy, "name", None)
        return name if isinstance(name, str) and name else type(policy).__name__

    def evaluate(self, policy: Any, ctx: Any, default: Any, slot: str) -> Any:
        """Run one turn-level policy.

        A policy that raises fails closed: the run ends with a ``HookFailed`` naming it. One
        whose ``fail_open`` attribute is true is logged and counts as ``default`` instead.

        Raises:
            HookFailed: the policy raised and does not fail open.
        """
        try:
            return policy.evaluate(ctx)
        except Exception as exc:
            return self._policy_failed(policy, exc, default, slot)

    async def settle(self, verdict: Awaitable[Any], policy: Any, default: Any, slot: str) -> Any:
        """Await the verdict of a policy that answered with an awaitable (heavy work, done in a
        worker thread); it fails as ``evaluate`` says."""
        try:
            return await verdict
        except Exception as exc:
            return self._policy_failed(policy, exc, default, slot)

    def _policy_failed(self, policy: Any, exc: Exception, default: Any, slot: str) -> Any:
        name = self.policy_name(policy)
        if getattr(policy, "fail_open", False):
            log.exception("%s policy %r raised; it fails open", slot, name)
            return default
        raise HookFailed.wrap(f"{slot} policy {name!r}", exc) from exc

    def policy_context(
        self,
        message: AssistantMessage | None = None,
        tool_results: list[ToolResultMessage] | None = None,
    ) -> PolicyContext:
        return PolicyContext(
            turn=self.turn,
            messages=self.view,
            new_messages=len(self.new_messages),
            usage=self.usage,
            cost=self.cost,
            model=self.config.model,
            message=message,
            tool_results=tool_results,
        )

    def run_turn_policies(
        self, policies: Sequence[Any], ctx: PolicyContext, slot: str
    ) -> tuple[str | None, list[AgentMessage]]:
        """Evaluate turn-level policies: returns (stop reason, messages to inject).

        Raises:
            HookFailed: a policy raised and does not fail open.
        """
        injected: list[AgentMessage] = []
        for policy in policies:
            verdict = self.evaluate(policy, ctx, CONTINUE, slot)
            kind = type(verdict)
            if kind is Stop:
                self.note_verdict(slot, policy, "stop", verdict.reason)
                return f"{self.policy_name(policy)}: {verdict.reason}", injected
            if kind is Inject:
                self.note_verdict(slot, policy, "inject")
                injected.extend(verdict.messages)
        return None, injected

    def note_verdict(
        self, slot: str, policy: object, verdict: str, reason: str = "", call_id: str | None = None
    ) -> None:
        """Tell the instrumentation (if any) of a verdict; ``slot`` as in a ``HookFailed``."""
        if self.observer is not None:
            source = policy if isinstance(policy, str) else self.policy_name(policy)
            self.observer.note(
                "verdict",
                slot=slot.replace("-", "_"),
                source=source,
                verdict=verdict,
                reason=reason,
                call_id=call_id,
            )
