"""The lifecycle grammar of a run's events, written as a small state machine.

In words (``agentloop/_events.py`` states the same in EBNF)::

    run      := AgentStart turn* AgentEnd
    turn     := TurnStart message* answer? tools results TurnEnd
    message  := MessageStart MessageEnd                       (prompt, steering, follow-up,
                                                               injected: before the answer)
    answer   := MessageStart (MessageUpdate | StreamRetry)* MessageEnd   (the assistant's)
    tools    := the ToolExecutionStart/Update/End of the answer's calls, interleaved across
                calls; per call: one Start, Updates only while it runs, one End
    results  := MessageStart MessageEnd per call, in call order, each after its call's End

``ContextCompacted`` may appear anywhere inside a turn (an overflow retry compacts the context
while the answer is open). The machine checks more than the shape: turn numbers count up from
zero and ``TurnEnd`` repeats its ``TurnStart``'s; a committed message ends as it started;
``TurnEnd`` carries the turn's answer and exactly the results committed in the turn; every call
of the answer gets exactly one ``ToolExecutionStart`` and one ``ToolExecutionEnd`` (named as the
call, ``is_error`` matching the result) and exactly one result; ``AgentEnd`` carries every
message committed during the run, in order.

``Lifecycle.feed`` raises ``GrammarError`` at the first event that breaks the grammar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import agentloop as al

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["GrammarError", "Lifecycle", "check_events", "paired"]

State = Literal["before", "run", "turn", "message", "after"]
Phase = Literal["pre", "tools", "results"]


class GrammarError(AssertionError):
    """An event sequence that breaks the lifecycle grammar."""


class Lifecycle:
    """Feed events one at a time; ``finish()`` checks the sequence is complete.

    Args:
        tolerate_error_answer_calls: accept an answer that ended in error with tool calls that
            get no tool events and no results (a known loop bug, see ``test_regressions.py``).
        tolerate_open_answer_on_abort: accept ``TurnEnd(aborted)`` while the answer is open
            right after a ``StreamRetry`` (a known loop bug, see ``test_regressions.py``).
        tolerate_repeated_turn_number: accept a turn that repeats the number of the turn
            before it when that one ended aborted or in error (a known loop bug).
    """

    def __init__(
        self,
        *,
        tolerate_error_answer_calls: bool = False,
        tolerate_open_answer_on_abort: bool = False,
        tolerate_repeated_turn_number: bool = False,
    ) -> None:
        self.tolerate_error_answer_calls = tolerate_error_answer_calls
        self.tolerate_repeated_turn_number = tolerate_repeated_turn_number
        self.tolerate_open_answer_on_abort = tolerate_open_answer_on_abort
        self._last: al.AgentEvent | None = None
        self.state: State = "before"
        self.index = -1
        self.turns = 0
        self.committed: list[al.AgentMessage] = []
        self.turn_ends: list[al.TurnEnd] = []
        self._open: al.AgentMessage | None = None
        self._streamed = False
        self._reset_turn()

    def _reset_turn(self) -> None:
        self.phase: Phase = "pre"
        self.answer: al.AssistantMessage | None = None
        self.calls: dict[str, al.ToolCall] = {}
        self.call_order: list[str] = []
        self.started: set[str] = set()
        self.ended: dict[str, al.ToolExecutionEnd] = {}
        self.results: list[al.ToolResultMessage] = []

    def _fail(self, event: al.AgentEvent, why: str) -> GrammarError:
        return GrammarError(
            f"event #{self.index} {type(event).__name__} in state {self.state}: {why}"
        )

    def _expect(self, event: al.AgentEvent, *states: State) -> None:
        if self.state not in states:
            raise self._fail(event, f"expected state {' or '.join(states)}")

    def feed(self, event: al.AgentEvent) -> None:
        self.index += 1
        last, self._last = self._last, event
        if (
            self.tolerate_open_answer_on_abort
            and isinstance(event, al.TurnEnd)
            and event.reason is al.TurnEndReason.ABORTED
            and self.state == "message"
            and isinstance(last, al.StreamRetry)
        ):
            self.state = "turn"
            self._open = None
        cls = type(event)
        if cls is al.AgentStart:
            self._expect(event, "before")
            self.state = "run"
        elif isinstance(event, al.AgentEnd):
            self._expect(event, "run")
            if event.messages != self.committed:
                raise self._fail(event, "AgentEnd.messages differ from the committed messages")
            self.state = "after"
        elif isinstance(event, al.TurnStart):
            self._expect(event, "run")
            if (
                self.tolerate_repeated_turn_number
                and self.turn_ends
                and event.turn == self.turns - 1
                and self.turn_ends[-1].reason in (al.TurnEndReason.ABORTED, al.TurnEndReason.ERROR)
            ):
                self.turns -= 1
            if event.turn != self.turns:
                raise self._fail(event, f"turn number {event.turn}, expected {self.turns}")
            self.state = "turn"
            self._reset_turn()
        elif isinstance(event, al.TurnEnd):
            self._turn_end(event)
        elif isinstance(event, al.MessageStart):
            self._message_start(event)
        elif isinstance(event, al.MessageUpdate | al.StreamRetry):
            self._expect(event, "message")
            if not self._streamed:
                raise self._fail(event, "only the assistant's streamed answer has updates")
        elif isinstance(event, al.MessageEnd):
            self._message_end(event)
        elif isinstance(event, al.ToolExecutionStart):
            self._tool_event(event)
            if event.call_id in self.started:
                raise self._fail(event, f"second start for call {event.call_id}")
            self.started.add(event.call_id)
        elif isinstance(event, al.ToolExecutionUpdate):
            self._tool_event(event)
            if event.call_id not in self.started or event.call_id in self.ended:
                raise self._fail(event, f"update for call {event.call_id} that is not running")
        elif isinstance(event, al.ToolExecutionEnd):
            self._tool_event(event)
            if event.call_id not in self.started or event.call_id in self.ended:
                raise self._fail(event, f"end for call {event.call_id} that is not running")
            if event.is_error != event.result.is_error:
                raise self._fail(event, "is_error differs from the result's")
            self.ended[event.call_id] = event
        elif isinstance(event, al.ContextCompacted):
            self._expect(event, "turn", "message")
        else:
            raise self._fail(event, "unknown event type")

    def _message_start(self, event: al.MessageStart) -> None:
        self._expect(event, "turn")
        message = event.message
        self._open = message
        self._streamed = False
        if isinstance(message, al.AssistantMessage):
            if self.phase != "pre" or self.answer is not None:
                raise self._fail(event, "a second assistant answer in one turn")
            if message.content:
                raise self._fail(event, "an answer starts empty")
            self._streamed = True
        elif isinstance(message, al.ToolResultMessage):
            call = self.calls.get(message.tool_call_id)
            if call is None:
                raise self._fail(
                    event, f"result for {message.tool_call_id}, not a call of the turn"
                )
            if message.tool_call_id not in self.ended:
                raise self._fail(event, "result committed before its ToolExecutionEnd")
            self.phase = "results"
        elif self.phase != "pre":
            raise self._fail(event, "a user or custom message after the answer")
        self.state = "message"

    def _message_end(self, event: al.MessageEnd) -> None:
        self._expect(event, "message")
        message = event.message
        opened = self._open
        self.state = "turn"
        self._open = None
        if self._streamed:
            if not isinstance(message, al.AssistantMessage):
                raise self._fail(event, "the answer ended as another kind of message")
            self.answer = message
            for call in message.tool_calls:
                if call.id in self.calls:
                    raise self._fail(event, f"two calls with id {call.id!r}")
                self.calls[call.id] = call
                self.call_order.append(call.id)
            self.phase = "tools"
        else:
            if message != opened:
                raise self._fail(event, "a committed message ended differently than it started")
            if isinstance(message, al.ToolResultMessage):
                self.results.append(message)
        self.committed.append(message)

    def _tool_event(
        self, event: al.ToolExecutionStart | al.ToolExecutionUpdate | al.ToolExecutionEnd
    ) -> None:
        self._expect(event, "turn")
        if self.phase != "tools":
            raise self._fail(event, "tool events belong between the answer and its results")
        call = self.calls.get(event.call_id)
        if call is None:
            raise self._fail(event, f"{event.call_id} is not a call of this turn's answer")
        if event.name != call.name:
            raise self._fail(event, f"name {event.name!r}, the call is {call.name!r}")

    def _turn_end(self, event: al.TurnEnd) -> None:
        self._expect(event, "turn")
        if event.turn != self.turns:
            raise self._fail(event, f"turn number {event.turn}, expected {self.turns}")
        if event.message is not self.answer and event.message != self.answer:
            raise self._fail(event, "TurnEnd.message is not the turn's answer")
        if event.tool_results != self.results:
            raise self._fail(event, "TurnEnd.tool_results differ from the committed results")
        unanswered = self.answer is not None and not self.started and not self.results
        tolerated = (
            self.tolerate_error_answer_calls
            and unanswered
            and self.answer is not None
            and self.answer.stop_reason is al.StopReason.ERROR
        )
        if not tolerated:
            if set(self.started) != set(self.call_order) or set(self.ended) != set(self.call_order):
                missing = [c for c in self.call_order if c not in self.ended]
                raise self._fail(event, f"calls without a start/end pair: {missing}")
            got = [r.tool_call_id for r in self.results]
            if got != self.call_order:
                raise self._fail(event, f"results {got} for calls {self.call_order}")
        self.turn_ends.append(event)
        self.turns += 1
        self.state = "run"

    def finish(self) -> None:
        if self.state != "after":
            raise GrammarError(f"the events stop in state {self.state}, before AgentEnd")


def check_events(
    events: Iterable[al.AgentEvent],
    *,
    tolerate_error_answer_calls: bool = False,
    tolerate_open_answer_on_abort: bool = False,
    tolerate_repeated_turn_number: bool = False,
) -> Lifecycle:
    """Run ``events`` through the grammar; returns the finished machine.

    Raises:
        GrammarError: the sequence breaks the grammar.
    """
    machine = Lifecycle(
        tolerate_error_answer_calls=tolerate_error_answer_calls,
        tolerate_open_answer_on_abort=tolerate_open_answer_on_abort,
        tolerate_repeated_turn_number=tolerate_repeated_turn_number,
    )
    for event in events:
        machine.feed(event)
    machine.finish()
    return machine


def paired(
    messages: Sequence[al.AgentMessage], *, tolerate_error_answers: bool = False
) -> str | None:
    """Why ``messages`` are not well paired, or ``None``.

    Well paired: each assistant message with tool calls is followed at once by exactly one
    result per call, in call order; no result answers a call not directly before it.
    """
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if isinstance(message, al.ToolResultMessage):
            return f"message {i - 1}: a result for {message.tool_call_id} answers no call"
        if isinstance(message, al.AssistantMessage) and message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            if len(set(ids)) != len(ids):
                return f"message {i - 1}: repeated call ids {ids}"
            got: list[str] = []
            while i < len(messages) and isinstance(messages[i], al.ToolResultMessage):
                result = messages[i]
                assert isinstance(result, al.ToolResultMessage)
                got.append(result.tool_call_id)
                i += 1
            if got != ids:
                if (
                    tolerate_error_answers
                    and not got
                    and message.stop_reason is al.StopReason.ERROR
                ):
                    continue
                return f"message {i - 1 - len(got)}: calls {ids} answered by {got}"
    return None
