"""``LoopDetection``: notice a model calling the same tool with the same arguments over and over.

A post-turn policy. After each turn it looks at the run's most recent tool calls (the last
``window`` of them, this turn's included). When a call of this turn has been made with the very
same arguments ``threshold`` times among them, the model is stuck: the first time, a nudge
(a user message asking it to change course) is queued for the next turn; if the model repeats
the call again after the nudge, the run stops.

The policy keeps no state: it reads the run's committed messages (only as far back as the
window needs) and recognises its own nudge there. One instance can serve any number of runs,
and each run starts with a clean slate.

Arguments are compared by their canonical JSON (keys sorted), so ``{"a": 1, "b": 2}`` and
``{"b": 2, "a": 1}`` are the same call, and ``1`` and ``1.0`` are not.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from agentloop import AssistantMessage, ToolCall, UserMessage, extract_text
from agentloop.policy import CONTINUE, Inject, PolicyVerdict, Stop

if TYPE_CHECKING:
    from agentloop.policy import PolicyContext

__all__ = ["DEFAULT_NUDGE", "LoopDetection"]

DEFAULT_NUDGE = (
    "You have called the tool {tool!r} several times in a row with exactly the same arguments. "
    "Repeating it will not give a different result. Change your approach: use different "
    "arguments or another tool, or answer with what you have."
)
"""What ``LoopDetection`` tells the model when it repeats a call (``{tool}`` is its name)."""

_Signature = tuple[str, str]


def _signature(call: ToolCall) -> _Signature:
    try:
        arguments = json.dumps(call.arguments, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):  # keys of mixed types, circular structures
        arguments = repr(call.arguments)
    return (call.name, arguments)


class LoopDetection:
    """Nudge, then stop, a model that repeats the same tool call.

    Example::

        agent = Agent(..., post_turn_policies=[LoopDetection(threshold=3, window=10)])

    Args:
        threshold: how many identical calls within the window count as a loop (at least 2).
        window: how many of the run's most recent tool calls are considered.
        nudge: the text of the nudge; ``{tool}`` is replaced by the tool's name. It is
            recognised by its exact text when the policy looks for an earlier nudge.
        stop: stop the run when the model repeats the call after the nudge; with ``False``
            the policy only nudges (again, each time the loop is detected).

    Raises:
        ValueError: ``threshold`` is below 2 or ``window`` below ``threshold``.
    """

    __slots__ = ("nudge", "stop", "threshold", "window")

    def __init__(
        self,
        *,
        threshold: int = 3,
        window: int = 10,
        nudge: str = DEFAULT_NUDGE,
        stop: bool = True,
    ) -> None:
        if threshold < 2:
            raise ValueError(f"threshold must be at least 2, not {threshold}")
        if window < threshold:
            raise ValueError(f"window ({window}) must be at least threshold ({threshold})")
        self.threshold = threshold
        self.window = window
        self.nudge = nudge
        self.stop = stop

    def nudge_text(self, tool: str) -> str:
        """The nudge sent about ``tool``."""
        return self.nudge.format(tool=tool)

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        """Inject a nudge or stop when this turn repeats a call ``threshold`` times."""
        message = ctx.message
        if message is None:
            return CONTINUE
        current = message.tool_calls
        if not current:
            return CONTINUE
        recent, user_texts = self._recent(ctx, message)
        calls = [_signature(call) for call in current]
        window = (recent[::-1] + calls)[-self.window :]
        counts = Counter(window)
        for signature in dict.fromkeys(calls):
            count = counts[signature]
            if count < self.threshold:
                continue
            name = signature[0]
            text = self.nudge_text(name)
            if self.stop and text in user_texts:
                return Stop(
                    reason=(
                        f"loop detected: {name!r} was called {count} times with the same "
                        f"arguments within the last {len(window)} tool calls, despite a nudge"
                    )
                )
            return Inject(messages=[UserMessage.from_text(text)])
        return CONTINUE

    def _recent(
        self, ctx: PolicyContext, message: AssistantMessage
    ) -> tuple[list[_Signature], set[str]]:
        """This run's earlier tool calls (newest first, at most a window) and user texts."""
        recent: list[_Signature] = []
        user_texts: set[str] = set()
        messages = ctx.messages
        # Only this run's messages, and never more than a window's worth of turns would need.
        limit = min(ctx.new_messages, len(messages), 4 * self.window + 16)
        for index in range(len(messages) - 1, len(messages) - 1 - limit, -1):
            item: Any = messages[index]
            if item is message:
                continue
            if type(item) is AssistantMessage:
                if len(recent) < self.window:
                    recent.extend(_signature(c) for c in reversed(item.tool_calls))
            elif type(item) is UserMessage:
                user_texts.add(extract_text(item.content))
        return recent, user_texts

    def __repr__(self) -> str:
        return f"LoopDetection(threshold={self.threshold}, window={self.window})"
