"""The committed history of a conversation, with what the loop derives from it kept current.

A turn needs more than the list of messages: the messages converted for the model (each is
converted once, when committed), the tool calls still waiting for a result and the count of
results that answer no call (either means the request must be repaired). A ``History`` keeps all
of them up to date message by message, so neither a turn nor a prompt walks the whole
conversation: an ``Agent`` keeps one across its runs and hands it to each run. A transformer
that keeps a prefix and a suffix of the history (``Window``, what ``SlidingWindow`` and
``SummarizingCompactor`` return) is served by slicing the converted history, not by converting
the request afresh. ``request_messages`` builds a request's messages from them, and repairs them
(``repair_tool_results``) only when a call waits for its result or a result answers no call.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ._config import default_convert_to_llm
from ._errors import HookFailed
from ._types import (
    AgentMessage,
    AssistantMessage,
    LlmMessage,
    MessageLog,
    StopReason,
    Text,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ._config import ConvertToLlm

__all__ = ["History", "Window", "error_result", "is_failed_answer", "repair_tool_results"]

log = logging.getLogger("agentloop.loop")


def is_failed_answer(message: AgentMessage) -> bool:
    """Whether ``message`` is a failed answer (an assistant message with stop reason error)."""
    return type(message) is AssistantMessage and message.stop_reason is StopReason.ERROR


class Window(list[AgentMessage]):
    """A list of messages that is ``source[:head] + inserted + source[tail:]``.

    What a context transformer returns when it keeps the start and the end of the history and
    leaves out (or summarises) the middle; the loop then slices its converted history instead
    of converting every message of the request again. It is an ordinary list otherwise.
    """

    __slots__ = ("head", "inserted", "source", "tail")

    def __init__(
        self,
        source: list[AgentMessage],
        head: int,
        tail: int,
        inserted: Sequence[AgentMessage] = (),
    ) -> None:
        super().__init__(source[:head])
        self.extend(inserted)
        self.extend(source[tail:])
        self.source = source
        self.head = head
        self.tail = tail
        self.inserted = list(inserted)


class History:
    """Messages plus their derived state; ``append`` is the only way a message goes in.

    Args:
        messages: the list to keep (shared, not copied) and index.
        convert: the converter of the runs that will use this history.

    Attributes:
        messages: every committed message, in order.
        llm_messages: the messages as the model sees them; failed answers are left out.
        llm_before: ``llm_before[i]`` is how many of ``llm_messages`` come from
            ``messages[:i]`` (so a slice of the history maps to a slice of them).
        open_calls: tool calls without a result yet, by id.
        orphan_results: how many tool results answered no call.
        failure: the first ``convert_to_llm`` failure: no request can be built while it is set.
    """

    __slots__ = (
        "convert",
        "failure",
        "llm_before",
        "llm_messages",
        "messages",
        "open_calls",
        "orphan_results",
    )

    def __init__(self, messages: list[AgentMessage], *, convert: ConvertToLlm) -> None:
        self.convert = convert
        self.messages = messages
        self.llm_messages: list[LlmMessage] = MessageLog()
        self.llm_before = [0]
        self.open_calls: dict[str, ToolCall] = {}
        self.orphan_results = 0
        self.failure: HookFailed | None = None
        for message in messages:
            self._index(message)

    def fits(self, convert: ConvertToLlm) -> bool:
        """Whether this history was built for runs with ``convert``."""
        return self.convert is convert

    def slice_llm(self, window: Window) -> list[LlmMessage] | None:
        """The converted messages of ``window``, from the history's own (``None``: not a
        window of this history, or its inserted messages fail to convert)."""
        if window.source is not self.messages or not 0 <= window.head <= window.tail:
            return None
        before, llm = self.llm_before, self.llm_messages
        if window.tail >= len(before):
            return None
        inserted: list[LlmMessage] = []
        for message in window.inserted:
            converted = self.convert(message)
            if converted is not None and not is_failed_answer(converted):
                inserted.append(converted)
        return llm[: before[window.head]] + inserted + llm[before[window.tail] :]

    def request_messages(self, messages: list[AgentMessage] | None) -> list[LlmMessage]:
        """The LLM messages of a request for ``messages`` (``None``: the whole history),
        repaired so that no tool call goes unanswered.

        Failed answers (stop reason ``error``) are left out: a model never needs to see its own
        failed attempt, and most providers reject an empty assistant turn.

        Raises:
            HookFailed: the converter raised (now, or when a message was committed).
        """
        if self.failure is not None:
            raise self.failure
        llm: list[LlmMessage] | None = None
        repair = messages is not None
        if messages is None or messages is self.messages:
            llm, repair = self.llm_messages, False
        elif type(messages) is Window:
            try:
                llm = self.slice_llm(messages)
            except Exception as exc:
                raise HookFailed.wrap("convert_to_llm", exc) from exc
            # A window cuts at legal points: it separates no tool call from its results.
            repair = llm is None
        if llm is None:
            convert = self.convert
            try:
                llm = [
                    c
                    for c in map(convert, messages or ())
                    if c is not None and not is_failed_answer(c)
                ]
            except Exception as exc:
                raise HookFailed.wrap("convert_to_llm", exc) from exc
        if self.open_calls or self.orphan_results or repair:
            llm = repair_tool_results(llm)
        return llm

    def extend(self, messages: Iterable[AgentMessage]) -> None:
        """``append`` each message."""
        for message in messages:
            self.append(message)

    def append(self, message: AgentMessage) -> None:
        """Commit ``message``. Never raises: a conversion failure is kept in ``failure`` (the
        message is committed, not converted) and raised when the next request is built."""
        self.messages.append(message)
        self._index(message)

    def _index(self, message: AgentMessage) -> None:
        # One branch per kind of message, the default converter's work done inline (this runs
        # for every message committed).
        llm_messages = self.llm_messages
        default = self.convert is default_convert_to_llm
        if type(message) is ToolResultMessage:
            if default:
                llm_messages.append(message)
            else:
                self._convert(message)
            if self.open_calls.pop(message.tool_call_id, None) is None:
                self.orphan_results += 1
        elif type(message) is AssistantMessage:
            failed = message.stop_reason is StopReason.ERROR
            if not default:
                self._convert(message)
            elif not failed:
                llm_messages.append(message)
            if not failed:  # a failed answer is never sent again: its calls need no results
                for block in message.content:
                    if type(block) is ToolCall:
                        self.open_calls[block.id] = block
        elif default and type(message) is UserMessage:
            llm_messages.append(message)
        else:
            self._convert(message)
        self.llm_before.append(len(llm_messages))

    def _convert(self, message: AgentMessage) -> None:
        """Convert ``message`` with the history's converter and keep what the model sees."""
        llm: LlmMessage | None
        try:
            llm = self.convert(message)
        except Exception as exc:
            log.debug("convert_to_llm raised", exc_info=True)
            if self.failure is None:
                self.failure = HookFailed.wrap("convert_to_llm", exc)
                self.failure.__cause__ = exc
            llm = None
        if llm is not None and not is_failed_answer(llm):
            self.llm_messages.append(llm)


def error_result(call: ToolCall, text: str) -> ToolResultMessage:
    """An error result for ``call`` saying ``text``."""
    return ToolResultMessage(
        tool_call_id=call.id, tool_name=call.name, content=[Text(text=text)], is_error=True
    )


def repair_tool_results(messages: list[LlmMessage]) -> list[LlmMessage]:
    """Pair every tool call with a result and drop results that answer no call.

    A synthetic error result is placed after the results that follow the call's message, where
    every provider expects it. Returns ``messages`` itself when nothing needed repair.
    """
    answered = {m.tool_call_id for m in messages if type(m) is ToolResultMessage}
    called: set[str] = set()
    out: list[LlmMessage] = []
    missing: list[ToolCall] = []
    changed = False

    def flush() -> None:
        nonlocal changed
        for call in missing:
            out.append(error_result(call, "tool call has no result (repaired history)"))
            changed = True
        missing.clear()

    for message in messages:
        cls = type(message)
        if cls is ToolResultMessage:
            assert isinstance(message, ToolResultMessage)
            if message.tool_call_id not in called:
                changed = True
                continue
            out.append(message)
            continue
        flush()
        out.append(message)
        if cls is AssistantMessage:
            assert isinstance(message, AssistantMessage)
            for block in message.content:
                if type(block) is ToolCall:
                    called.add(block.id)
                    if block.id not in answered:
                        missing.append(block)
    flush()
    return out if changed else messages
