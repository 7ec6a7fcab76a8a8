"""The view model: what the terminal UI shows, as plain data fed by the agent's events.

``Conversation.feed(event)`` turns each ``AgentEvent`` into entries — the user's messages,
the assistant's answers (markdown cut into blocks as it streams, thinking, a PLAN mark when
made in plan mode), tool blocks (status, output, diff), notices — and the ``Status`` the
status bar shows. It records what changed since the last look (``take_changes``), so a
display updates only those entries, at its own frame rate. Full screen and inline mode are
two displays of the same model; tests read it without any terminal.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

from agentloop import (
    AgentEnd,
    AgentStart,
    AssistantMessage,
    ContextCompacted,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    StopReason,
    StreamRetry,
    Text,
    Thinking,
    ToolCall,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolResultMessage,
    TurnEnd,
    TurnStart,
    UserMessage,
    extract_text,
)
from agentloop.stream import TextDelta, TextStart, ThinkingDelta, ThinkingEnd, ThinkingStart

from ._entries import (
    AnyEntry,
    AssistantEntry,
    Entry,
    NoticeEntry,
    TextPart,
    ThinkingPart,
    ToolEntry,
    ToolStatus,
    UserEntry,
)
from ._status import Status

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agentloop import AgentEvent, AgentMessage

__all__ = [
    "AUTO_COLLAPSE_SECONDS",
    "AssistantEntry",
    "Conversation",
    "Entry",
    "NoticeEntry",
    "TextPart",
    "ThinkingPart",
    "ToolEntry",
    "ToolStatus",
    "UserEntry",
]

AUTO_COLLAPSE_SECONDS = 3.0
"""How long a finished tool block stays open before it folds to one line."""


class Conversation:
    """The state of the UI: entries, status, selections. See the module docs.

    Args:
        title: names a tool call in one line, from its tool's name and arguments.
        clock: the time in seconds (for folding tool blocks after ``auto_collapse``).
        auto_collapse: seconds a finished tool block stays expanded (``None``: stays).
    """

    def __init__(
        self,
        *,
        title: Callable[[str, Any], str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        auto_collapse: float | None = AUTO_COLLAPSE_SECONDS,
    ) -> None:
        self.title = title or (lambda name, _arguments: name)
        self.clock = clock
        self.auto_collapse = auto_collapse
        self.entries: list[AnyEntry] = []
        self.status = Status()
        # An index into tool_entries() once the user moved the selection; None: the newest.
        self.selected_tool: int | None = None
        self.show_thinking = False
        self._tools: dict[str, ToolEntry] = {}
        self._answer: AssistantEntry | None = None
        self._abort_requested = False
        self._added: list[AnyEntry] = []
        self._changed: set[int] = set()
        self._seconds: dict[int, int] = {}  # the whole seconds shown of each running tool

    # ---------------------------------------------------------------- changes

    def take_changes(self) -> tuple[list[AnyEntry], list[AnyEntry]]:
        """The entries added and the entries changed since the last call (then forgotten)."""
        added, self._added = self._added, []
        new = {e.id for e in added}
        changed = [e for e in self.entries if e.id in self._changed and e.id not in new]
        self._changed = set()
        return added, changed

    def _add(self, entry: AnyEntry) -> None:
        self.entries.append(entry)
        self._added.append(entry)

    def touch(self, entry: Entry) -> None:
        """Mark ``entry`` as changed, so the display redraws it."""
        self._changed.add(entry.id)

    def notice(self, text: str, *, level: Literal["info", "warning", "error"] = "info") -> None:
        """Show a line from the application."""
        self._add(NoticeEntry(text, level=level))

    def clear(self) -> None:
        """Forget every entry (a new conversation)."""
        self.entries.clear()
        self._tools.clear()
        self._answer = None
        self.selected_tool = None
        self._added.clear()
        self._changed.clear()

    def request_abort(self) -> None:
        """The user asked to abort: the run's end shows as aborted."""
        self._abort_requested = True

    # ---------------------------------------------------------------- events

    def feed(self, event: AgentEvent) -> None:
        """Apply one event."""
        kind = type(event)
        if kind is MessageUpdate:
            assert isinstance(event, MessageUpdate)
            self._update(event)
        elif kind is MessageStart:
            assert isinstance(event, MessageStart)
            message = event.message
            if type(message) is AssistantMessage:
                self._answer = AssistantEntry(plan=self.status.mode == "plan")
                self._add(self._answer)
            elif type(message) is UserMessage:
                assert isinstance(message, UserMessage)
                self._add(UserEntry(extract_text(message.content)))
        elif kind is MessageEnd:
            assert isinstance(event, MessageEnd)
            if type(event.message) is AssistantMessage:
                assert isinstance(event.message, AssistantMessage)
                self._end_answer(event.message)
        elif kind is ToolExecutionStart:
            assert isinstance(event, ToolExecutionStart)
            title = self.title(event.name, event.arguments)
            entry = ToolEntry(
                event.call_id, event.name, event.arguments, title, started=self.clock()
            )
            self._tools[event.call_id] = entry
            self._add(entry)
        elif kind is ToolExecutionUpdate:
            assert isinstance(event, ToolExecutionUpdate)
            found = self._tools.get(event.call_id)
            if found is not None:
                found.output = extract_text(event.update.content)
                self.touch(found)
        elif kind is ToolExecutionEnd:
            assert isinstance(event, ToolExecutionEnd)
            self._end_tool(event)
        elif kind is TurnStart:
            assert isinstance(event, TurnStart)
            self.status.turn += 1
        elif kind is TurnEnd:
            self.status.changed = True
        elif kind is AgentStart:
            self._abort_requested = False
            self._unpin()
            self.status.state = "running"
            self.status.turn = 0
            self.status.changed = True
        elif kind is AgentEnd:
            assert isinstance(event, AgentEnd)
            self._end_run(event)
        elif kind is ContextCompacted:
            assert isinstance(event, ContextCompacted)
            self.notice(f"context compacted: {event.report}")
        elif kind is StreamRetry:
            assert isinstance(event, StreamRetry)
            line = f"retrying (attempt {event.attempt}) in {event.delay:.1f} s: {event.message}"
            if self._answer is not None:
                # What streamed before the failure is void and the retry streams afresh within
                # the same message: the answer starts again below the line, so that its end
                # (an error, say) comes after the retries, as it did in time.
                self._answer.restart(line)
                self.touch(self._answer)
            else:
                self.notice(line, level="warning")

    def _update(self, event: MessageUpdate) -> None:
        answer = self._answer
        if answer is None:
            return
        inner = event.event
        kind = type(inner)
        if kind is TextDelta:
            assert isinstance(inner, TextDelta)
            answer.part(inner.index, TextPart).markdown.append(inner.delta)
        elif kind is ThinkingDelta:
            assert isinstance(inner, ThinkingDelta)
            answer.part(inner.index, ThinkingPart).append(inner.delta)
        elif kind is TextStart:
            assert isinstance(inner, TextStart)
            answer.part(inner.index, TextPart)
        elif kind is ThinkingStart:
            assert isinstance(inner, ThinkingStart)
            answer.part(inner.index, ThinkingPart)
        elif kind is ThinkingEnd:
            assert isinstance(inner, ThinkingEnd)
            thinking = answer.part(inner.index, ThinkingPart)
            thinking.done = True
            thinking.collapsed = not self.show_thinking
        else:
            return
        self._changed.add(answer.id)

    def _end_answer(self, message: AssistantMessage) -> None:
        answer = self._answer
        if answer is None:
            return
        if not answer.parts and message.content:
            # Not streamed (a provider that sent the whole answer at once): show it anyway.
            text = extract_text(message.content)
            if text:
                answer.part(0, TextPart).markdown.append(text)
        for part in answer.parts:
            if isinstance(part, TextPart):
                part.markdown.close()
            else:
                part.done = True
                part.collapsed = not self.show_thinking
        answer.streaming = False
        answer.aborted = message.stop_reason is StopReason.ABORTED
        if message.error_message and not answer.aborted:
            answer.error = message.error_message
        self.status.add_usage(message)
        self._answer = None
        self.touch(answer)

    def _end_tool(self, event: ToolExecutionEnd) -> None:
        entry = self._tools.get(event.call_id)
        if entry is None:
            return
        entry.ended = self.clock()
        _settle(entry, extract_text(event.result.content), event.is_error, event.result.details)
        if self.auto_collapse is not None:
            entry.expanded = True
            entry.collapse_at = self.clock() + self.auto_collapse
        self.touch(entry)

    def _end_run(self, event: AgentEnd) -> None:
        if self._answer is not None:
            self._answer.streaming = False
            self.touch(self._answer)
            self._answer = None
        for entry in self._tools.values():
            if entry.status == "running":
                entry.status = "cancelled"
                self.touch(entry)
        last = next(
            (m for m in reversed(event.messages) if type(m) is AssistantMessage),
            None,
        )
        stop = last.stop_reason if isinstance(last, AssistantMessage) else None
        if self._abort_requested or stop is StopReason.ABORTED:
            self.status.state = "aborted"
        elif stop is StopReason.ERROR:
            self.status.state = "error"
        else:
            self.status.state = "idle"
        self._abort_requested = False
        self.status.changed = True

    def load(self, messages: Sequence[AgentMessage]) -> None:
        """Show a stored history (a resumed session): answers whole, tool blocks folded."""
        for message in messages:
            if type(message) is UserMessage:
                assert isinstance(message, UserMessage)
                self._add(UserEntry(extract_text(message.content)))
            elif type(message) is AssistantMessage:
                assert isinstance(message, AssistantMessage)
                self._load_answer(message)
            elif type(message) is ToolResultMessage:
                assert isinstance(message, ToolResultMessage)
                found = self._tools.get(message.tool_call_id)
                if found is not None:
                    text = extract_text(message.content)
                    _settle(found, text, message.is_error, message.details)

    def _load_answer(self, message: AssistantMessage) -> None:
        answer = AssistantEntry()
        calls: list[ToolEntry] = []
        for index, block in enumerate(message.content):
            if isinstance(block, Text) and block.text:
                answer.part(index, TextPart).markdown.append(block.text)
            elif isinstance(block, Thinking) and block.thinking:
                answer.part(index, ThinkingPart).append(block.thinking)
            elif isinstance(block, ToolCall):
                title = self.title(block.name, block.arguments)
                entry = ToolEntry(block.id, block.name, block.arguments, title)
                entry.expanded = False
                self._tools[block.id] = entry
                calls.append(entry)
        self._add(answer)
        self._answer = answer
        self._end_answer(message)
        for entry in calls:
            self._add(entry)

    # ---------------------------------------------------------------- tool blocks

    def tool_entries(self) -> list[ToolEntry]:
        """The tool blocks, in order."""
        return [e for e in self.entries if isinstance(e, ToolEntry)]

    def tick(self) -> list[ToolEntry]:
        """Fold the tool blocks whose time is up, and count the seconds of running ones;
        returns the blocks changed."""
        now = self.clock()
        changed = []
        for entry in self._tools.values():
            if entry.collapse_at is not None and now >= entry.collapse_at:
                entry.collapse_at = None
                entry.expanded = False
                self.touch(entry)
                changed.append(entry)
            elif entry.status == "running" and entry.started is not None:
                second = int(now - entry.started)
                if second != self._seconds.get(entry.id):
                    self._seconds[entry.id] = second
                    self.touch(entry)
                    changed.append(entry)
        return changed

    def truncate(self, entry: AnyEntry) -> list[AnyEntry]:
        """Forget ``entry`` and every entry after it (going back in the conversation);
        returns them."""
        index = next(i for i, e in enumerate(self.entries) if e is entry)
        gone = self.entries[index:]
        del self.entries[index:]
        ids = {e.id for e in gone}
        self._tools = {k: t for k, t in self._tools.items() if t.id not in ids}
        self._added = [e for e in self._added if e.id not in ids]
        self._changed -= ids
        self._answer = None
        self._unpin()
        return gone

    def select_tool(self, step: int) -> ToolEntry | None:
        """Move the tool-block selection by ``step`` (wrapping); returns the selected block.

        From then on the selection stays where the user put it (until the next prompt);
        before, it is the newest block, whatever arrives.
        """
        tools = self.tool_entries()
        if not tools:
            return None
        previous = self.selected_tool
        if previous is None or previous >= len(tools):
            # Nothing selected yet: left starts from the newest block, right from the oldest.
            self.selected_tool = len(tools) - 1 if step < 0 else 0
        else:
            self.selected_tool = (previous + step) % len(tools)
        if previous is not None and previous < len(tools):
            self.touch(tools[previous])
        chosen = tools[self.selected_tool]
        self.touch(chosen)
        return chosen

    def _unpin(self) -> None:
        tools = self.tool_entries()
        if self.selected_tool is not None and self.selected_tool < len(tools):
            self.touch(tools[self.selected_tool])
        self.selected_tool = None

    def toggle_tool(self) -> ToolEntry | None:
        """Expand or collapse the selected tool block: the one the user selected, else the
        newest (the newest at the time of the key, not at the time of an earlier one)."""
        tools = self.tool_entries()
        if not tools:
            return None
        index = self.selected_tool
        if index is None or index >= len(tools):
            index = len(tools) - 1
        entry = tools[index]
        entry.expanded = not entry.expanded
        entry.collapse_at = None
        self.touch(entry)
        return entry

    def toggle_thinking(self) -> None:
        """Show or fold every finished thinking block."""
        self.show_thinking = not self.show_thinking
        for entry in self.entries:
            if isinstance(entry, AssistantEntry):
                for part in entry.parts:
                    if isinstance(part, ThinkingPart) and part.done:
                        part.collapsed = not self.show_thinking
                self.touch(entry)

    def last_prompt(self) -> UserEntry | None:
        """The user's last message."""
        return next((e for e in reversed(self.entries) if isinstance(e, UserEntry)), None)

    def last_answer(self) -> AssistantEntry | None:
        """The latest answer of the assistant, if any."""
        return next((e for e in reversed(self.entries) if isinstance(e, AssistantEntry)), None)


_CANCELLED = ("tool call cancelled", "tool call aborted")


def _settle(entry: ToolEntry, output: str, is_error: bool, details: Any) -> None:
    """A tool block's end, from its result (live, or read back from a stored session)."""
    entry.output = output
    entry.status = "error" if is_error else "done"
    if output.startswith(_CANCELLED):
        entry.status = "cancelled"
    if isinstance(details, dict):
        if isinstance(details.get("diff"), str):
            entry.diff = details["diff"]
        code = details.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool):
            entry.exit_code = code
