"""Usage a server does not report, broken tool-call JSON, and keys in a raising provider's error.

Issue 15, defects 2 and 6: a tool call whose arguments are not valid JSON is answered with an
error result and the run goes on; a server that reports no usage gets an estimate, marked as
such, which budgets and prices count.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from agentloop import (
    Agent,
    AssistantMessage,
    ModelSpec,
    Pricing,
    StopReason,
    StreamOptions,
    ToolResultMessage,
    Usage,
    UserMessage,
    tool,
)
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.retry import NoRetry
from agentloop.stream import (
    Done,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from agentloop.testing import ScriptedStream, reply_text
from agentloop_policies import Budget
from agentloop_providers.openai_chat import OpenAIChatProvider

from ._loopback import Reply, serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agentloop.stream import AssistantMessageEvent, LlmContext

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="llamacpp", model_id="smollm2")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "c", "model": "smollm2", "choices": [choice]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _call(arguments: str) -> bytes:
    """A tool call as llama.cpp streams it, with no usage chunk (it sends none)."""
    call = {"index": 0, "id": "call_1", "type": "function"}
    return (
        _chunk({"role": "assistant", "content": None})
        + _chunk({"tool_calls": [{**call, "function": {"name": "add", "arguments": arguments}}]})
        + _chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )


def _text(text: str) -> bytes:
    return _chunk({"content": text}) + _chunk({}, "stop") + b"data: [DONE]\n\n"


@tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


async def _agent_run(replies: list[Reply], **agent: Any) -> Any:
    async with serve(replies) as server:
        async with OpenAIChatProvider(base_url=server.base_url) as provider:
            model = agent.pop("model", MODEL)
            run = Agent(model=model, stream_fn=provider, tools=[add], **agent)
            return await run.prompt("What is 1 + 2?"), server.requests


async def test_broken_tool_call_json_is_answered_and_the_run_goes_on() -> None:
    result, requests = await _agent_run(
        [Reply(body=_call('{"a": 1, "b": ')), Reply(body=_text("It is 3."))]
    )
    assert result.stop_reason is StopReason.STOP
    assert result.text == "It is 3."
    (answer,) = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert answer.is_error
    assert "arguments are not valid JSON" in answer.text
    assert len(requests) == 2
    # The model was told, in the tool message of its next request.
    sent = json.loads(requests[1].body)["messages"]
    assert sent[-1]["role"] == "tool"
    assert "arguments are not valid JSON" in sent[-1]["content"]


async def test_a_server_without_usage_gets_an_estimate_marked_as_such() -> None:
    priced = ModelSpec(provider="x", model_id="y", pricing=Pricing(input=1.0, output=2.0))
    result, _ = await _agent_run(
        [Reply(body=_call('{"a": 1, "b": 2}')), Reply(body=_text("It is 3, as the tool says."))],
        model=priced,
    )
    assert result.stop_reason is StopReason.STOP
    assert result.usage.estimated
    assert result.usage.input > 10  # the system prompt, the question and the tool schema
    assert result.usage.output > 0
    assert result.usage.total == result.usage.input + result.usage.output
    assert result.cost.total > 0  # priced like reported usage
    for message in result.messages:
        if isinstance(message, AssistantMessage):
            assert message.usage.estimated


async def test_reported_usage_is_not_marked_estimated() -> None:
    usage = b'data: {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}\n\n'
    body = _chunk({"content": "3"}) + _chunk({}, "stop") + usage + b"data: [DONE]\n\n"
    result, _ = await _agent_run([Reply(body=body)])
    assert not result.usage.estimated
    assert (result.usage.input, result.usage.output) == (7, 3)


async def test_a_budget_counts_estimated_usage() -> None:
    # A token budget must not take an unreported usage for a free one: the second turn is
    # never asked for.
    turn: list[AssistantMessageEvent] = [
        StreamStart(),
        ToolCallStart(index=0, id="c", name="add"),
        ToolCallDelta(index=0, delta='{"a": 1, "b": 2}'),
        ToolCallEnd(index=0),
        TextStart(index=1),
        TextDelta(index=1, delta="x" * 800),
        TextEnd(index=1),
        Done(stop_reason=StopReason.TOOL_USE),  # no usage reported
    ]
    stream = ScriptedStream([turn, turn])
    config = AgentLoopConfig(
        model=MODEL,
        stream_fn=stream,
        tools=[add],
        pre_turn_policies=[Budget(max_tokens=150)],
        retry_strategy=NoRetry(),
    )
    result = await run_loop([UserMessage.from_text("go")], AgentContext(tools=[add]), config)
    assert result.usage.estimated
    assert result.usage.output >= 200
    assert len(stream.calls) == 1
    assert result.stopped_by is not None and "token budget" in result.stopped_by


async def test_a_raising_provider_never_shows_the_key() -> None:
    key = "sk-secret/value+1"

    def leaky(model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        async def stream() -> AsyncIterator[AssistantMessageEvent]:
            key = options.api_key
            raise RuntimeError(f"rejected {key} / {key!r} / {json.dumps(key)}")
            yield  # pragma: no cover

        return stream()

    async def get_key(provider: str) -> str:
        return key

    config = AgentLoopConfig(
        model=MODEL, stream_fn=leaky, get_api_key=get_key, retry_strategy=NoRetry()
    )
    result = await run_loop([UserMessage.from_text("go")], AgentContext(), config)
    assert result.stop_reason is StopReason.ERROR
    assert result.error is not None
    assert "RuntimeError: rejected ***" in result.error
    assert "secret" not in result.error
    assert "secret" not in (result.messages[-1].error_message or "")  # type: ignore[union-attr]


def test_usage_addition_keeps_the_estimated_mark() -> None:
    assert (Usage(input=1) + Usage(input=2, estimated=True)).estimated
    assert not (Usage(input=1) + Usage(input=2)).estimated
    assert reply_text("x").usage.estimated is False
