"""Approval modes: ``ApprovalGate``, a ready-made approval hook with modes and session trust.

The loop asks its ``approval`` callback about every tool call that passed the pre-dispatch
policies. ``ApprovalGate`` decides which calls need a person at all, asks the application's
``ask`` function for those, and turns every way that can go wrong into a refusal:

=============  =============================================================================
mode           who is asked
=============  =============================================================================
``enabled``    every tool call
``smart``      calls to tools whose ``requires_approval`` is true (the default); others run
``bypassed``   nobody: every call runs
=============  =============================================================================

A tool can be trusted for the session (the gate's lifetime, typically one ``Agent``): its calls
then run without asking, in ``smart`` and ``enabled`` mode alike. ``ask`` grants that trust by
answering ``ALWAYS_ALLOW``; the application can also call ``trust``/``distrust``. Calls to a
tool the loop does not know are never asked about: they cannot run, and the loop tells the
model so.

``ask`` is asynchronous and may take its time (a person reading a prompt): it answers
``Approved``, ``ApprovedWith(arguments=...)`` (run with these arguments instead; the loop
checks them with the pre-dispatch policies again), ``Rejected(reason=...)``, ``ALWAYS_ALLOW``,
or simply ``True``/``False``. If it raises, answers something else, or does not answer within
``timeout`` seconds, the call is rejected with a reason the model can read and the failure is
logged; the run goes on. Cancellation of the run itself is never caught: it goes through.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, TypeAlias

import anyio

from agentloop.policy import APPROVED, ApprovalDecision, Approved, ApprovedWith, Rejected

if TYPE_CHECKING:
    from agentloop import AgentTool, ToolCall

__all__ = ["ALWAYS_ALLOW", "AlwaysAllow", "ApprovalAnswer", "ApprovalGate", "ApprovalMode", "AskFn"]

logger = logging.getLogger("agentloop.policies.approval")


class ApprovalMode(enum.StrEnum):
    """Which tool calls ``ApprovalGate`` asks about."""

    ENABLED = "enabled"
    SMART = "smart"
    BYPASSED = "bypassed"


class AlwaysAllow:
    """An answer of ``ask``: approve this call and trust its tool for the rest of the session."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ALWAYS_ALLOW"


ALWAYS_ALLOW = AlwaysAllow()
"""The ``AlwaysAllow`` answer: approve this call and trust its tool for the session."""

ApprovalAnswer: TypeAlias = Approved | ApprovedWith | Rejected | AlwaysAllow | bool
"""What ``ask`` may answer (``True`` approves, ``False`` rejects)."""
AskFn: TypeAlias = Callable[["ToolCall", "AgentTool | None"], Awaitable[ApprovalAnswer]]
"""The function ``ApprovalGate`` asks about a call (the tool is ``None`` when none has the
call's name)."""


class ApprovalGate:
    """An approval hook (``AgentLoopConfig.approval``) with modes, session trust and a timeout.

    Example::

        async def ask(call, tool):
            answer = await ui.confirm(f"Run {call.name} with {call.arguments}?")
            return {"yes": True, "always": ALWAYS_ALLOW}.get(answer, False)

        agent = Agent(..., approval=ApprovalGate(ask, mode="smart", timeout=120))

    Args:
        ask: asks the application (or a person) about one call; see the module docs. Needed
            unless the mode is ``bypassed``.
        mode: ``"enabled"``, ``"smart"`` (default) or ``"bypassed"``; may be changed later
            through the ``mode`` attribute.
        timeout: seconds to wait for ``ask`` before rejecting the call; ``None`` waits forever.
        trusted: tool names trusted from the start.

    Raises:
        ValueError: an unknown mode, a negative timeout, or no ``ask`` for a mode that asks.
    """

    def __init__(
        self,
        ask: AskFn | None = None,
        *,
        mode: ApprovalMode | str = ApprovalMode.SMART,
        timeout: float | None = 300.0,
        trusted: Iterable[str] = (),
    ) -> None:
        self._mode = ApprovalMode(mode)
        if timeout is not None and timeout < 0:
            raise ValueError(f"timeout must not be negative, not {timeout!r}")
        if ask is None and self._mode is not ApprovalMode.BYPASSED:
            raise ValueError(f"mode {self._mode.value!r} needs an ask function")
        self.ask = ask
        self.timeout = timeout
        self._trusted: set[str] = set(trusted)

    @property
    def mode(self) -> ApprovalMode:
        """The current mode."""
        return self._mode

    @mode.setter
    def mode(self, value: ApprovalMode | str) -> None:
        mode = ApprovalMode(value)
        if self.ask is None and mode is not ApprovalMode.BYPASSED:
            raise ValueError(f"mode {mode.value!r} needs an ask function")
        self._mode = mode

    @property
    def trusted(self) -> frozenset[str]:
        """The tools trusted for this session."""
        return frozenset(self._trusted)

    def trust(self, tool_name: str) -> None:
        """Run calls to ``tool_name`` without asking from now on."""
        self._trusted.add(tool_name)

    def distrust(self, tool_name: str) -> None:
        """Ask again about calls to ``tool_name``."""
        self._trusted.discard(tool_name)

    def clear_trust(self) -> None:
        """Forget every trusted tool (a new session)."""
        self._trusted.clear()

    def needs_approval(self, call: ToolCall, tool: AgentTool | None) -> bool:
        """Whether ``ask`` would be consulted about ``call``."""
        if self._mode is ApprovalMode.BYPASSED or tool is None or call.name in self._trusted:
            return False
        if self._mode is ApprovalMode.ENABLED:
            return True
        # A tool object without the attribute is treated as one that needs approval.
        return bool(getattr(tool, "requires_approval", True))

    async def __call__(self, call: ToolCall, tool: AgentTool | None) -> ApprovalDecision:
        """Decide about one tool call (the loop's approval hook).

        Returns:
            ``Approved``, ``ApprovedWith`` or ``Rejected``; never raises for a failing ``ask``.
        """
        if not self.needs_approval(call, tool):
            return APPROVED
        ask = self.ask
        assert ask is not None  # guaranteed by the mode checks
        timeout = self.timeout
        try:
            # The deadline bounds only the wait for an answer, inside this coroutine; a
            # cancellation of the run is not ours and propagates out of the scope.
            with anyio.move_on_after(timeout) as scope:
                answer = await ask(call, tool)
        except Exception:
            logger.exception("approval of tool call %s (%s) failed", call.id, call.name)
            return Rejected(
                reason="The approval request for this tool call failed, so it was not run."
            )
        if scope.cancelled_caught:
            logger.warning("approval of tool call %s (%s) timed out", call.id, call.name)
            return Rejected(
                reason=f"No approval came within {timeout:g} seconds, so this tool call was "
                "not run."
            )
        return self._decision(call, answer)

    def _decision(self, call: ToolCall, answer: object) -> ApprovalDecision:
        if isinstance(answer, Approved | ApprovedWith | Rejected):
            return answer
        if isinstance(answer, AlwaysAllow):
            self._trusted.add(call.name)
            return APPROVED
        if answer is True:
            return APPROVED
        if answer is False:
            return Rejected()
        logger.error(
            "approval of tool call %s (%s) returned %r, not an approval decision",
            call.id,
            call.name,
            answer,
        )
        return Rejected(reason="The approval request for this tool call failed, so it was not run.")

    def __repr__(self) -> str:
        return f"ApprovalGate(mode={self._mode.value!r}, trusted={sorted(self._trusted)!r})"
