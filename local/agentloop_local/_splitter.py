"""The model's output, as it streams, split into text, reasoning and tool calls.

Reasoning models write ``<think>…</think>`` before answering; calls come as
``<tool_call>{…}</tool_call>`` (see ``_template``). ``OutputSplitter`` takes the decoded text
piece by piece and turns it into ``AssistantMessageEvent`` values: text and reasoning stream as
they come; a call is held until its closing tag (it is one short JSON object) and then sent as
start, arguments and end. Text that could be the beginning of a tag is held back until the
next piece says whether it is one, so no tag ever leaks into the visible text. A call cut off
by the token limit is still sent, with its raw text, so the accumulator marks it incomplete.
A model that starts writing a ``<tool_response>`` is imagining the tool's answer: the answer
ends there (``stopped``), and generation with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from agentloop.stream import (
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

from ._template import CALL_CLOSE, CALL_OPEN

if TYPE_CHECKING:
    from agentloop.stream import AssistantMessageEvent

__all__ = ["OutputSplitter"]

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_RESPONSE = "<tool_response>"  # only the tool writes these: a model that does has gone astray
_TEXT, _THINK, _CALL = 0, 1, 2
_decode = msgspec.json.decode


def _held_back(text: str, tags: tuple[str, ...]) -> int:
    """How many characters at the end of ``text`` could begin one of ``tags``."""
    longest = 0
    for tag in tags:
        for size in range(min(len(tag) - 1, len(text)), longest, -1):
            if text.endswith(tag[:size]):
                longest = size
                break
    return longest


class OutputSplitter:
    """Splits streamed output into events; ``calls`` counts the tool calls sent.

    Args:
        tools: whether ``<tool_call>`` starts a call (false when no tool may be called).
        call_id: makes the id of the n-th call.
    """

    def __init__(self, *, tools: bool, call_id: Any) -> None:
        self._tools = tools
        self._call_id = call_id
        self._state = _TEXT
        self._pending = ""
        self._index = 0
        self._open = False  # a text or thinking block is open
        self.calls = 0
        self.stopped = False

    def _opening_tags(self) -> tuple[str, ...]:
        return (_THINK_OPEN, CALL_OPEN, _RESPONSE) if self._tools else (_THINK_OPEN, _RESPONSE)

    def feed(self, piece: str) -> list[AssistantMessageEvent]:
        """The events that ``piece`` (the next decoded text) completes."""
        if self.stopped:
            return []
        self._pending += piece
        out: list[AssistantMessageEvent] = []
        while True:
            if self._state == _CALL:
                end = self._pending.find(CALL_CLOSE)
                if end < 0:
                    return out
                out.extend(self._call(self._pending[:end]))
                self._pending = self._pending[end + len(CALL_CLOSE) :].lstrip("\n")
                self._state = _TEXT
                continue
            close = _THINK_CLOSE if self._state == _THINK else None
            tags = (close,) if close else self._opening_tags()
            found = [(self._pending.find(tag), tag) for tag in tags]
            hits = [(at, tag) for at, tag in found if at >= 0]
            if not hits:
                keep = _held_back(self._pending, tags)
                cut = len(self._pending) - keep
                out.extend(self._emit(self._pending[:cut]))
                self._pending = self._pending[cut:]
                return out
            at, tag = min(hits)
            out.extend(self._emit(self._pending[:at]))
            out.extend(self._close_block())
            self._pending = self._pending[at + len(tag) :]
            if tag == _RESPONSE:
                self.stopped = True
                self._pending = ""
                return out
            if tag == _THINK_OPEN:
                self._state = _THINK
            elif tag == CALL_OPEN:
                self._state = _CALL
            else:
                self._state = _TEXT
                self._pending = self._pending.lstrip("\n")

    def finish(self) -> list[AssistantMessageEvent]:
        """The events for whatever is left when generation ends."""
        out: list[AssistantMessageEvent] = []
        rest, self._pending = self._pending, ""
        if self._state == _CALL:
            # Cut off in its closing tag, a call whose JSON is whole is still a whole call.
            out.extend(self._call(rest[: len(rest) - _held_back(rest, (CALL_CLOSE,))]))
        else:
            out.extend(self._emit(rest))
            out.extend(self._close_block())
        self._state = _TEXT
        return out

    def _emit(self, text: str) -> list[AssistantMessageEvent]:
        if not text:
            return []
        if not self._open:
            if self._state == _TEXT and not text.strip():
                return []  # whitespace between blocks is not an answer of its own
            if self._state == _TEXT:
                text = text.lstrip("\n")
            self._open = True
            start: AssistantMessageEvent = (
                ThinkingStart(index=self._index)
                if self._state == _THINK
                else TextStart(index=self._index)
            )
            return [start, self._delta(text)]
        return [self._delta(text)]

    def _delta(self, text: str) -> AssistantMessageEvent:
        if self._state == _THINK:
            return ThinkingDelta(index=self._index, delta=text)
        return TextDelta(index=self._index, delta=text)

    def _close_block(self) -> list[AssistantMessageEvent]:
        if not self._open:
            return []
        self._open = False
        index = self._index
        self._index += 1
        if self._state == _THINK:
            return [ThinkingEnd(index=index)]
        return [TextEnd(index=index)]

    def _call(self, raw: str) -> list[AssistantMessageEvent]:
        raw = raw.strip()
        name = ""
        arguments = raw
        try:
            parsed = _decode(raw)
        except (msgspec.DecodeError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("name"), str):
            name = parsed["name"]
            value = parsed.get("arguments", {})
            arguments = msgspec.json.encode(value).decode()
        index = self._index
        self._index += 1
        call_id = self._call_id(self.calls)
        self.calls += 1
        out: list[AssistantMessageEvent] = [ToolCallStart(index=index, id=call_id, name=name)]
        if arguments:
            out.append(ToolCallDelta(index=index, delta=arguments))
        out.append(ToolCallEnd(index=index))
        return out
