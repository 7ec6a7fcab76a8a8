"""Agent: structured output through a synthetic final tool, with bounded retries."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from agentloop import (
    Aborted,
    Agent,
    AlreadyRunning,
    LlmContext,
    ModelSpec,
    StructuredOutputFailed,
    Text,
    ToolResultMessage,
    UserMessage,
    tool,
)
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="fake", model_id="fake-1")


class Person(msgspec.Struct):
    name: str
    age: int


PERSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}

OUTPUTS = [pytest.param(Person, id="msgspec-type"), pytest.param(PERSON_SCHEMA, id="schema-dict")]


def answer(arguments: Any) -> Any:
    return reply_tool_calls(("final_result", arguments))


def expected(output: Any, name: str, age: int) -> Any:
    return Person(name=name, age=age) if output is Person else {"name": name, "age": age}


def last_tool_result(context: LlmContext) -> ToolResultMessage:
    message = context.messages[-1]
    assert isinstance(message, ToolResultMessage)
    return message


@pytest.mark.parametrize("output", OUTPUTS)
async def test_success(output: Any) -> None:
    stream = ScriptedStream([answer({"name": "Ada", "age": 36})])
    agent = Agent(model=MODEL, stream_fn=stream, system_prompt="You extract people.")
    value = await agent.structured("Ada is 36.", output)
    assert value == expected(output, "Ada", 36)
    assert type(value) is type(expected(output, "Ada", 36))
    request = stream.calls[0].context
    # The model was offered the synthetic tool, with the output's schema, and told to use it.
    (final,) = request.tools
    assert final.name == "final_result"
    assert final.parameters["properties"]["age"] == {"type": "integer"}
    assert set(final.parameters["required"]) == {"name", "age"}
    assert request.system_prompt.startswith("You extract people.")
    assert "final_result" in request.system_prompt
    # The run ended once the answer was valid: one model call; the agent is restored.
    assert len(stream.calls) == 1
    assert agent.system_prompt == "You extract people."
    assert agent.tools == []
    assert not agent.post_turn_policies
    assert not agent.post_loop_policies


@pytest.mark.parametrize("output", OUTPUTS)
async def test_retry_then_success(output: Any) -> None:
    stream = ScriptedStream(
        [answer({"name": "Ada", "age": "thirty-six"}), answer({"name": "Ada", "age": 36})]
    )
    agent = Agent(model=MODEL, stream_fn=stream)
    value = await agent.structured("Ada is 36.", output, max_retries=1)
    assert value == expected(output, "Ada", 36)
    # The invalid answer went back to the model as an error result saying what was wrong.
    feedback = last_tool_result(stream.calls[1].context)
    assert feedback.is_error
    assert "age" in feedback.text
    assert "final_result again" in feedback.text


@pytest.mark.parametrize("output", OUTPUTS)
async def test_failure_after_max_retries(output: Any) -> None:
    stream = ScriptedStream(
        [
            answer({"name": "Ada"}),
            answer({"name": "Ada", "age": "old"}),
            answer({"name": "Ada", "age": "older"}),
            answer({"name": "Ada", "age": 36}),  # never asked for
        ]
    )
    agent = Agent(model=MODEL, stream_fn=stream)
    with pytest.raises(StructuredOutputFailed) as caught:
        await agent.structured("Ada is 36.", output, max_retries=2)
    assert caught.value.attempts == 3
    assert "age" in caught.value.last_error
    assert len(stream.calls) == 3
    assert stream.remaining == 1
    assert "3 attempts" in str(caught.value)
    # The agent is left idle and as it was configured.
    assert not agent.is_running
    assert agent.tools == []


@pytest.mark.parametrize("output", OUTPUTS)
async def test_a_model_that_answers_in_prose_first(output: Any) -> None:
    stream = ScriptedStream([reply_text("Ada, aged 36."), answer({"name": "Ada", "age": 36})])
    agent = Agent(model=MODEL, stream_fn=stream)
    value = await agent.structured("Ada is 36.", output)
    assert value == expected(output, "Ada", 36)
    # The model was reminded to call the tool.
    reminder = stream.calls[1].context.messages[-1]
    assert isinstance(reminder, UserMessage)
    assert "final_result" in "".join(b.text for b in reminder.content if isinstance(b, Text))


async def test_prose_only_fails_with_the_reason() -> None:
    stream = ScriptedStream([reply_text("no"), reply_text("still no"), reply_text("never")])
    agent = Agent(model=MODEL, stream_fn=stream)
    with pytest.raises(StructuredOutputFailed) as caught:
        await agent.structured("Ada is 36.", Person, max_retries=1)
    assert caught.value.attempts == 2
    assert "without calling" in caught.value.last_error
    assert len(stream.calls) == 2


@pytest.mark.parametrize(
    ("output", "arguments", "value"),
    [
        pytest.param(list[int], {"result": [1, 2, 3]}, [1, 2, 3], id="msgspec-list"),
        pytest.param(
            {"type": "array", "items": {"type": "integer"}},
            {"result": [1, 2, 3]},
            [1, 2, 3],
            id="schema-array",
        ),
    ],
)
async def test_non_object_output_is_wrapped(output: Any, arguments: Any, value: Any) -> None:
    stream = ScriptedStream([answer(arguments)])
    agent = Agent(model=MODEL, stream_fn=stream)
    assert await agent.structured("numbers", output) == value
    (final,) = stream.calls[0].context.tools
    assert final.parameters["required"] == ["result"]


async def test_structured_keeps_the_agents_own_tools() -> None:
    @tool
    def lookup(name: str) -> int:
        """Look up a person's age."""
        return 36

    stream = ScriptedStream(
        [reply_tool_calls(("lookup", {"name": "Ada"})), answer({"name": "Ada", "age": 36})]
    )
    agent = Agent(model=MODEL, stream_fn=stream, tools=[lookup])
    value = await agent.structured("How old is Ada?", Person)
    assert value == Person(name="Ada", age=36)
    assert [t.name for t in stream.calls[0].context.tools] == ["lookup", "final_result"]
    assert last_tool_result(stream.calls[1].context).text == "36"
    assert agent.tools == [lookup]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("output", OUTPUTS)
def test_structured_sync(backend: str, output: Any) -> None:
    stream = ScriptedStream(
        [answer({"name": "Ada", "age": "x"}), answer({"name": "Ada", "age": 36})]
    )
    agent = Agent(model=MODEL, stream_fn=stream)
    assert agent.structured_sync("Ada", output, backend=backend) == expected(output, "Ada", 36)


async def test_structured_while_running_raises_already_running() -> None:
    import anyio

    started = anyio.Event()
    gate = anyio.Event()

    @tool
    async def wait() -> str:
        """Wait."""
        started.set()
        await gate.wait()
        return "ok"

    stream = ScriptedStream([reply_tool_calls(("wait", {})), reply_text("done")])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[wait], system_prompt="sys")
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, "go")
        await started.wait()
        with pytest.raises(AlreadyRunning):
            await agent.structured("x", Person)
        # The refused call left the agent's configuration alone.
        assert agent.system_prompt == "sys"
        assert agent.tools == [wait]
        gate.set()


async def test_structured_aborted_raises_aborted() -> None:
    import anyio

    started = anyio.Event()

    @tool
    async def stall() -> str:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()
        return "unreachable"

    stream = ScriptedStream([reply_tool_calls(("stall", {}))])
    agent = Agent(model=MODEL, stream_fn=stream, tools=[stall])
    caught: list[BaseException] = []

    async def ask() -> None:
        try:
            await agent.structured("x", Person)
        except Aborted as exc:
            caught.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        await started.wait()
        agent.abort()
    assert len(caught) == 1
    assert agent.tools == [stall]
