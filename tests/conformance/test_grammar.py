"""The checker checked: the grammar accepts the runs the loop's own examples spell out and
rejects each way a run could go wrong. A property suite is only as good as its oracle."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import agentloop as al

from .grammar import GrammarError, check_events

if TYPE_CHECKING:
    from collections.abc import Callable

PROMPT = al.UserMessage.from_text("go")
CALL_A = al.ToolCall(id="a", name="ok", arguments={"n": 0})
CALL_B = al.ToolCall(id="b", name="ok", arguments={"n": 0})
ANSWER = al.AssistantMessage(content=[CALL_A, CALL_B], stop_reason=al.StopReason.TOOL_USE)
FINAL = al.AssistantMessage(content=[al.Text(text="done")])
OK = al.AgentToolResult.text("r")
RESULT_A = al.ToolResultMessage(tool_call_id="a", tool_name="ok", content=[al.Text(text="r")])
RESULT_B = al.ToolResultMessage(tool_call_id="b", tool_name="ok", content=[al.Text(text="r")])
EMPTY = al.AssistantMessage()
DELTA = al.MessageUpdate(event=al.stream.TextDelta(index=0, delta="x"))


def valid_run() -> list[al.AgentEvent]:
    """Two turns: a concurrent batch of two calls (interleaved), then a text answer."""
    return [
        al.AgentStart(),
        al.TurnStart(turn=0),
        al.MessageStart(message=PROMPT),
        al.MessageEnd(message=PROMPT),
        al.MessageStart(message=EMPTY),
        DELTA,
        al.StreamRetry(attempt=1, delay=0.0, kind=al.ErrorKind.NETWORK, message="reset"),
        DELTA,
        al.MessageEnd(message=ANSWER),
        al.ToolExecutionStart(call_id="a", name="ok"),
        al.ToolExecutionStart(call_id="b", name="ok"),
        al.ToolExecutionUpdate(call_id="b", name="ok", update=OK),
        al.ToolExecutionEnd(call_id="b", name="ok", result=OK),
        al.ToolExecutionEnd(call_id="a", name="ok", result=OK),
        al.MessageStart(message=RESULT_A),
        al.MessageEnd(message=RESULT_A),
        al.MessageStart(message=RESULT_B),
        al.MessageEnd(message=RESULT_B),
        al.TurnEnd(
            reason=al.TurnEndReason.TOOLS_EXECUTED,
            message=ANSWER,
            tool_results=[RESULT_A, RESULT_B],
            turn=0,
        ),
        al.TurnStart(turn=1),
        al.ContextCompacted(report="dropped 1"),
        al.MessageStart(message=EMPTY),
        al.MessageEnd(message=FINAL),
        al.TurnEnd(reason=al.TurnEndReason.COMPLETE, message=FINAL, turn=1),
        al.AgentEnd(messages=[PROMPT, ANSWER, RESULT_A, RESULT_B, FINAL]),
    ]


def test_the_grammar_accepts_a_valid_run() -> None:
    machine = check_events(valid_run())
    assert machine.turns == 2


def test_a_turn_stopped_before_the_model_is_valid() -> None:
    events: list[al.AgentEvent] = [
        al.AgentStart(),
        al.TurnStart(turn=0),
        al.MessageStart(message=PROMPT),
        al.MessageEnd(message=PROMPT),
        al.TurnEnd(reason=al.TurnEndReason.COMPLETE, message=None, turn=0),
        al.AgentEnd(messages=[PROMPT]),
    ]
    check_events(events)


def _drop(kind: type) -> Callable[[list[al.AgentEvent]], None]:
    def mutate(events: list[al.AgentEvent]) -> None:
        index = max(i for i, e in enumerate(events) if type(e) is kind)
        del events[index]

    return mutate


def _duplicate(kind: type) -> Callable[[list[al.AgentEvent]], None]:
    def mutate(events: list[al.AgentEvent]) -> None:
        index = next(i for i, e in enumerate(events) if type(e) is kind)
        events.insert(index, events[index])

    return mutate


def _swap(i: int, j: int) -> Callable[[list[al.AgentEvent]], None]:
    def mutate(events: list[al.AgentEvent]) -> None:
        events[i], events[j] = events[j], events[i]

    return mutate


def _replace(i: int, event: al.AgentEvent) -> Callable[[list[al.AgentEvent]], None]:
    def mutate(events: list[al.AgentEvent]) -> None:
        events[i] = event

    return mutate


def _append(event: al.AgentEvent) -> Callable[[list[al.AgentEvent]], None]:
    def mutate(events: list[al.AgentEvent]) -> None:
        events.append(event)

    return mutate


MUTATIONS: dict[str, Callable[[list[al.AgentEvent]], None]] = {
    "no AgentStart": _drop(al.AgentStart),
    "no AgentEnd": _drop(al.AgentEnd),
    "two AgentStarts": _duplicate(al.AgentStart),
    "event after AgentEnd": _append(al.TurnStart(turn=2)),
    "no TurnEnd": _drop(al.TurnEnd),
    "no MessageEnd": _drop(al.MessageEnd),
    "no ToolExecutionEnd": _drop(al.ToolExecutionEnd),
    "no ToolExecutionStart": _drop(al.ToolExecutionStart),
    "two ToolExecutionStarts": _duplicate(al.ToolExecutionStart),
    "update after end": _swap(11, 12),
    "results in the wrong order": _swap(14, 16),
    "result before its tool ends": _swap(13, 14),
    "delta outside a message": _swap(4, 5),
    "turn numbers that skip": _replace(19, al.TurnStart(turn=2)),
    "AgentEnd missing a message": _replace(24, al.AgentEnd(messages=[PROMPT, ANSWER, FINAL])),
    "TurnEnd with other results": _replace(
        18,
        al.TurnEnd(reason=al.TurnEndReason.TOOLS_EXECUTED, message=ANSWER, tool_results=[], turn=0),
    ),
    "tool event for an unknown call": _replace(9, al.ToolExecutionStart(call_id="zzz", name="ok")),
    "user message after the answer": _replace(14, al.MessageStart(message=PROMPT)),
    "compaction outside a turn": _append(al.ContextCompacted(report="x")),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_the_grammar_rejects(mutation: str) -> None:
    events = valid_run()
    MUTATIONS[mutation](events)
    with pytest.raises(GrammarError):
        check_events(events)
