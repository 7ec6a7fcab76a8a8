"""The provider-script generators checked against the one accumulator.

A well-formed answer, however it is chunked and interleaved, accumulates to exactly the blocks
it streamed, with its stop reason and usage; every broken call accumulates to an error (or an
abort) message, never to an exception. This keeps the generators honest (a "broken" script
that is secretly fine tests nothing) and checks the accumulator's contract on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from hypothesis import given

import agentloop as al

from .profiles import CONFORMANCE
from .strategies import answers, broken_calls

if TYPE_CHECKING:
    from .fakes import StreamCall


def _accumulate(call: StreamCall) -> al.AssistantMessage:
    acc = al.stream.Accumulator()
    for event in call.events:
        acc.push(event)
    return acc.finish()


def _expected_blocks(events: tuple[al.stream.AssistantMessageEvent, ...]) -> list[Any]:
    """The blocks a stream describes, in start order, rebuilt independently of the accumulator."""
    order: list[int] = []
    kinds: dict[int, str] = {}
    parts: dict[int, list[str]] = {}
    objects: dict[int, Any] = {}
    for event in events:
        if isinstance(
            event,
            al.stream.TextStart
            | al.stream.ThinkingStart
            | al.stream.ToolCallStart
            | al.stream.ExtensionBlock,
        ):
            order.append(event.index)
            kinds[event.index] = type(event).__name__
            parts[event.index] = []
        if isinstance(
            event, al.stream.TextDelta | al.stream.ThinkingDelta | al.stream.ToolCallDelta
        ):
            parts[event.index].append(event.delta)
        if isinstance(event, al.stream.ToolCallEnd) and event.arguments is not msgspec.UNSET:
            objects[event.index] = event.arguments
    out: list[Any] = []
    for index in order:
        text = "".join(parts[index])
        kind = kinds[index]
        if kind == "TextStart":
            out.append(("text", text))
        elif kind == "ThinkingStart":
            out.append(("thinking", text))
        elif kind == "ToolCallStart":
            arguments = objects[index] if index in objects else msgspec.json.decode(text)
            out.append(("call", arguments))
        else:
            out.append(("extension", None))
    return out


def _blocks(message: al.AssistantMessage) -> list[Any]:
    out: list[Any] = []
    for block in message.content:
        if isinstance(block, al.Text):
            out.append(("text", block.text))
        elif isinstance(block, al.Thinking):
            out.append(("thinking", block.thinking))
        elif isinstance(block, al.ToolCall):
            out.append(("call", block.arguments))
        else:
            out.append(("extension", None))
    return out


@CONFORMANCE
@given(answers())
def test_an_answer_accumulates_to_what_it_streamed(call: StreamCall) -> None:
    message = _accumulate(call)
    done = call.events[-1]
    assert isinstance(done, al.stream.Done)
    assert message.stop_reason is done.stop_reason
    assert message.error_message is None
    assert message.usage == done.usage
    assert _blocks(message) == _expected_blocks(call.events)


@CONFORMANCE
@given(broken_calls())
def test_a_broken_call_accumulates_to_an_error(call: StreamCall) -> None:
    if call.label in ("raise_at", "truncated_call"):
        return  # the failure is the exception / the length stop, not the events
    message = _accumulate(call)
    if call.label == "after_end":
        # The loop stops reading at the terminal event; pushing past it spoils the message.
        assert message.stop_reason is al.StopReason.ERROR
        return
    if call.label == "bad_json":
        # Broken arguments are the model's mistake, not the stream's: the call is kept with its
        # raw text (the loop answers it with an error result) and the answer stands.
        assert message.stop_reason is al.StopReason.TOOL_USE
        bad = [c for c in message.tool_calls if c.partial_json is not None]
        assert [c.partial_json for c in bad] == ['{"n": 1,,']
        return
    assert message.stop_reason in (al.StopReason.ERROR, al.StopReason.ABORTED)
    if message.stop_reason is al.StopReason.ERROR:
        assert message.error_message
    else:
        assert not message.tool_calls


@CONFORMANCE
@given(answers(truncated_call=True))
def test_a_call_cut_off_by_the_length_limit_is_marked_incomplete(call: StreamCall) -> None:
    message = _accumulate(call)
    assert message.stop_reason is al.StopReason.LENGTH
    cut = [c for c in message.tool_calls if c.id.endswith("cut")]
    assert len(cut) == 1
    assert cut[0].partial_json is not None
