"""What ACP clients are told: agentloop events and messages as ACP session updates.

One ``UpdateMapper`` per prompt turn turns the run's events into ``session/update``
notifications:

=======================================  =============================================
agentloop                                ACP
=======================================  =============================================
text delta                               ``agent_message_chunk``
thinking delta                           ``agent_thought_chunk``
an answer's tool calls (``MessageEnd``)  ``tool_call`` (status ``pending``)
``ToolExecutionStart``                   ``tool_call_update`` (``in_progress``)
``ToolExecutionUpdate`` (output so far)  ``tool_call_update`` (content)
``bash`` run in the editor's terminal    ``tool_call_update`` with the terminal embedded
``ToolExecutionEnd``                     ``tool_call_update`` (``completed``/``failed``),
                                         with a ``diff`` for file edits (and the
                                         terminal, if the command ran in one)
a plan-mode answer                       ``plan`` (its numbered lines as entries)
=======================================  =============================================

``history_updates`` replays a stored conversation the same way for ``session/load``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    tool_terminal_ref,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import ToolCallLocation

from agentloop import (
    AssistantMessage,
    MessageEnd,
    MessageUpdate,
    Text,
    Thinking,
    ToolCall,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolResultMessage,
    UserMessage,
    extract_text,
)
from agentloop.stream import TextDelta, ThinkingDelta

from ._acp_editor import TERMINAL_KEY

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentloop import AgentEvent, AgentMessage

    from ._session import CodingSession

__all__ = ["UpdateMapper", "call_content", "call_start", "history_updates", "plan_updates"]

_MAX_OUTPUT = 20_000  # characters of running output shown per update
_PLAN_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*])\s+(.+)$")


def _kind(session: CodingSession, name: str) -> Any:
    tool = session.tool(name)
    return tool.kind if tool is not None else "other"


def _title(session: CodingSession, name: str, arguments: Any) -> str:
    tool = session.tool(name)
    return tool.title(arguments) if tool is not None else name


def _locations(session: CodingSession, arguments: Any, line: int | None = None) -> Any:
    path = arguments.get("path") if isinstance(arguments, dict) else None
    if not isinstance(path, str):
        return None
    try:
        full = session.workspace.resolve(path)
    except Exception:
        return None
    return [ToolCallLocation(path=str(full), line=line)]


def call_start(session: CodingSession, call: ToolCall, *, status: Any = "pending") -> Any:
    """The ``tool_call`` update announcing ``call``."""
    return start_tool_call(
        call.id,
        _title(session, call.name, call.arguments),
        kind=_kind(session, call.name),
        status=status,
        locations=_locations(session, call.arguments),
        raw_input=call.arguments,
    )


def call_content(session: CodingSession, details: Any, text: str) -> list[Any]:
    """A finished call's content: its diff (for a file change) and its text."""
    content: list[Any] = []
    if isinstance(details, dict) and isinstance(details.get("new_text"), str):
        path = details.get("path")
        if isinstance(path, str) and path:
            full = str(session.workspace.root / path)  # a display path: relative to the root
            content.append(tool_diff_content(full, details["new_text"], details.get("old_text")))
    if text:
        content.append(tool_content(text_block(text)))
    return content


def plan_updates(text: str) -> list[Any]:
    """A plan-mode answer's numbered (or bulleted) lines as a ``plan`` update."""
    entries = [m.group(1).strip() for m in map(_PLAN_LINE.match, text.splitlines()) if m]
    if not entries:
        return []
    return [
        update_plan([plan_entry(entry, priority="medium", status="pending") for entry in entries])
    ]


class UpdateMapper:
    """The session updates of one prompt turn's events (see the module docs)."""

    def __init__(self, session: CodingSession) -> None:
        self.session = session
        self._output: dict[str, str] = {}
        self._terminals: dict[str, str] = {}

    def updates(self, event: AgentEvent) -> list[Any]:
        """The updates ``event`` produces, in order."""
        kind = type(event)
        session = self.session
        if kind is MessageUpdate:
            assert isinstance(event, MessageUpdate)
            inner = event.event
            if type(inner) is TextDelta and inner.delta:
                return [update_agent_message_text(inner.delta)]
            if type(inner) is ThinkingDelta and inner.delta:
                return [update_agent_thought_text(inner.delta)]
            return []
        if kind is MessageEnd:
            assert isinstance(event, MessageEnd)
            message = event.message
            if type(message) is not AssistantMessage:
                return []
            calls = [block for block in message.content if type(block) is ToolCall]
            out = [call_start(session, call) for call in calls]
            if not calls and session.mode == "plan" and not message.error_message:
                out.extend(plan_updates(extract_text(message.content)))
            return out
        if kind is ToolExecutionStart:
            assert isinstance(event, ToolExecutionStart)
            return [
                update_tool_call(event.call_id, status="in_progress", raw_input=event.arguments)
            ]
        if kind is ToolExecutionUpdate:
            assert isinstance(event, ToolExecutionUpdate)
            details = event.update.details
            if isinstance(details, dict) and isinstance(details.get(TERMINAL_KEY), str):
                terminal = self._terminals[event.call_id] = details[TERMINAL_KEY]
                return [update_tool_call(event.call_id, content=[tool_terminal_ref(terminal)])]
            so_far = self._output.get(event.call_id, "") + extract_text(event.update.content)
            so_far = so_far[-_MAX_OUTPUT:]
            self._output[event.call_id] = so_far
            return [update_tool_call(event.call_id, content=[tool_content(text_block(so_far))])]
        if kind is ToolExecutionEnd:
            assert isinstance(event, ToolExecutionEnd)
            self._output.pop(event.call_id, None)
            result = event.result
            content = call_content(session, result.details, extract_text(result.content))
            terminal = self._terminals.pop(event.call_id, None)
            if terminal is not None:  # the editor keeps showing a released terminal
                content.insert(0, tool_terminal_ref(terminal))
            return [
                update_tool_call(
                    event.call_id,
                    status="failed" if event.is_error else "completed",
                    content=content,
                    raw_output=result.details,
                )
            ]
        return []


def history_updates(session: CodingSession, messages: Sequence[AgentMessage]) -> list[Any]:
    """A stored conversation as the updates that replay it to a client."""
    results = {m.tool_call_id: m for m in messages if type(m) is ToolResultMessage}
    out: list[Any] = []
    for message in messages:
        if type(message) is UserMessage:
            text = extract_text(message.content)
            if text:
                out.append(update_user_message_text(text))
        elif type(message) is AssistantMessage:
            for block in message.content:
                if type(block) is Text and block.text:
                    out.append(update_agent_message_text(block.text))
                elif type(block) is Thinking and block.thinking:
                    out.append(update_agent_thought_text(block.thinking))
                elif type(block) is ToolCall:
                    result = results.get(block.id)
                    failed = result is None or result.is_error
                    out.append(
                        call_start(session, block, status="failed" if failed else "completed")
                    )
                    if result is not None:
                        content = call_content(
                            session, result.details, extract_text(result.content)
                        )
                        out.append(update_tool_call(block.id, content=content))
    return out
