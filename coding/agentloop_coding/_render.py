"""Plain-text rendering of a run's events for the terminal, as data.

``TextRenderer.feed(event)`` returns what to write where: ``("out", text)`` for the answer
(standard output, so that ``agentloop run ... > answer.md`` keeps just the answer) and
``("err", text)`` for everything about the run (tool calls, errors, retries, thinking with
``verbose``). It writes nothing itself: the command writes, a test reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from agentloop import (
    AssistantMessage,
    MessageEnd,
    MessageUpdate,
    StreamRetry,
    ToolExecutionEnd,
    ToolExecutionStart,
    extract_text,
)
from agentloop.stream import TextDelta, ThinkingDelta, ThinkingEnd, ThinkingStart

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop import AgentEvent

__all__ = ["Output", "TextRenderer"]

Output: TypeAlias = list[tuple[Literal["out", "err"], str]]


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit] + "..."


class TextRenderer:
    """Turns events into terminal text; see the module docs.

    Args:
        title: names a tool call in one line, from the tool's name and arguments.
        verbose: also show the model's thinking and each tool's first line of output.
    """

    def __init__(self, title: Callable[[str, Any], str], *, verbose: bool = False) -> None:
        self.title = title
        self.verbose = verbose
        self._line_open = False  # the answer's last line has no newline yet
        self.errors: list[str] = []  # the model errors shown

    def _err(self, out: Output, text: str) -> None:
        if self._line_open:
            out.append(("out", "\n"))
            self._line_open = False
        out.append(("err", text))

    def feed(self, event: AgentEvent) -> Output:
        """What ``event`` shows, in order."""
        out: Output = []
        kind = type(event)
        if kind is MessageUpdate:
            assert isinstance(event, MessageUpdate)
            inner = event.event
            if type(inner) is TextDelta:
                out.append(("out", inner.delta))
                self._line_open = not inner.delta.endswith("\n") if inner.delta else self._line_open
            elif self.verbose and type(inner) is ThinkingStart:
                self._err(out, "[thinking] ")
            elif self.verbose and type(inner) is ThinkingDelta:
                out.append(("err", inner.delta))
            elif self.verbose and type(inner) is ThinkingEnd:
                out.append(("err", "\n"))
        elif kind is ToolExecutionStart:
            assert isinstance(event, ToolExecutionStart)
            self._err(out, f"> {self.title(event.name, event.arguments)}\n")
        elif kind is ToolExecutionEnd:
            assert isinstance(event, ToolExecutionEnd)
            text = _first_line(extract_text(event.result.content))
            if event.is_error:
                self._err(out, f"  ! {event.name}: {text}\n")
            elif self.verbose and text:
                self._err(out, f"  = {text}\n")
        elif kind is MessageEnd:
            assert isinstance(event, MessageEnd)
            message = event.message
            if type(message) is AssistantMessage:
                if message.error_message:
                    self.errors.append(message.error_message)
                    self._err(out, f"error: {message.error_message}\n")
                elif self._line_open:
                    out.append(("out", "\n"))
                    self._line_open = False
        elif kind is StreamRetry:
            assert isinstance(event, StreamRetry)
            self._err(
                out,
                f"retrying (attempt {event.attempt}) in {event.delay:.1f} s: {event.message}\n",
            )
        return out

    def finish(self) -> Output:
        """What is left to write once the run is over (a final newline)."""
        if self._line_open:
            self._line_open = False
            return [("out", "\n")]
        return []
