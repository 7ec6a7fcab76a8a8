"""Agent: typed output through a synthetic final tool, with bounded retries."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypedDict

import msgspec
import pytest

from agentloop import (
    Aborted,
    Agent,
    AlreadyRunning,
    ModelSpec,
    StructuredOutputFailed,
    Text,
    ToolResultMessage,
    UserMessage,
    tool,
)
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

if TYPE_CHECKING:
    from agentloop.stream import LlmContext

pytestmark = pytest.mark.anyio

MODEL = ModelSpec(provider="fake", model_id="fake-1")


class Person(msgspec.Struct):
    name: str
    age: int


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str
    year: int


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
    value = (await agent.prompt("Ada is 36.", output_type=output)).output
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
    agent = Agent(model=MODEL, stream_fn=stream, output_retries=1)
    value = (await agent.prompt("Ada is 36.", output_type=output)).output
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
    agent = Agent(model=MODEL, stream_fn=stream, output_retries=2)
    with pytest.raises(StructuredOutputFailed) as caught:
        await agent.prompt("Ada is 36.", output_type=output)
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
    value = (await agent.prompt("Ada is 36.", output_type=output)).output
    assert value == expected(output, "Ada", 36)
    # The model was reminded to call the tool.
    reminder = stream.calls[1].context.messages[-1]
    assert isinstance(reminder, UserMessage)
    assert "final_result" in "".join(b.text for b in reminder.content if isinstance(b, Text))


async def test_prose_only_fails_with_the_reason() -> None:
    stream = ScriptedStream([reply_text("no"), reply_text("still no"), reply_text("never")])
    agent = Agent(model=MODEL, stream_fn=stream, output_retries=1)
    with pytest.raises(StructuredOutputFailed) as caught:
        await agent.prompt("Ada is 36.", output_type=Person)
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
    assert (await agent.prompt("numbers", output_type=output)).output == value
    (final,) = stream.calls[0].context.tools
    assert final.parameters["required"] == ["result"]


async def test_output_keeps_the_agents_own_tools() -> None:
    @tool
    def lookup(name: str) -> int:
        """Look up a person's age."""
        return 36

    stream = ScriptedStream(
        [reply_tool_calls(("lookup", {"name": "Ada"})), answer({"name": "Ada", "age": 36})]
    )
    agent = Agent(model=MODEL, stream_fn=stream, tools=[lookup])
    value = (await agent.prompt("How old is Ada?", output_type=Person)).output
    assert value == Person(name="Ada", age=36)
    assert [t.name for t in stream.calls[0].context.tools] == ["lookup", "final_result"]
    assert last_tool_result(stream.calls[1].context).text == "36"
    assert agent.tools == [lookup]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("output", OUTPUTS)
def test_output_from_prompt_sync(backend: str, output: Any) -> None:
    stream = ScriptedStream(
        [answer({"name": "Ada", "age": "x"}), answer({"name": "Ada", "age": 36})]
    )
    agent = Agent(model=MODEL, stream_fn=stream)
    result = agent.prompt_sync("Ada", backend=backend, output_type=output)
    assert result.output == expected(output, "Ada", 36)


async def test_output_while_running_raises_already_running() -> None:
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
            await agent.prompt("x", output_type=Person)
        # The refused call left the agent's configuration alone.
        assert agent.system_prompt == "sys"
        assert agent.tools == [wait]
        gate.set()


async def test_output_aborted_raises_aborted_with_the_result() -> None:
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
            await agent.prompt("x", output_type=Person)
        except Aborted as exc:
            caught.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        await started.wait()
        agent.abort()
    assert len(caught) == 1
    assert caught[0].result.stop_reason.value == "aborted"  # type: ignore[attr-defined]
    assert agent.tools == [stall]


# --------------------------------------------------------------------------- the agent's own type


async def test_an_agent_with_an_output_type_answers_with_values() -> None:
    stream = ScriptedStream([answer({"name": "Ada", "age": 36}), answer({"name": "Bo", "age": 7})])
    agent = Agent(model=MODEL, stream_fn=stream, output_type=Person)
    first = await agent.prompt("Ada is 36.")
    assert first.output == Person(name="Ada", age=36)
    # Each run gets a fresh final tool: the second answer is not the first one again.
    second = await agent.prompt("Bo is 7.")
    assert second.output == Person(name="Bo", age=7)
    # Asked for text instead, for one prompt: the final tool is not offered.
    stream.script.append(reply_text("plain"))
    plain = await agent.prompt("say something", output_type=str)
    assert plain.output == "plain"


async def test_output_forces_a_tool_call_and_the_final_tool_after_prose() -> None:
    stream = ScriptedStream([reply_text("Ada, aged 36."), answer({"name": "Ada", "age": 36})])
    agent = Agent(model=MODEL, stream_fn=stream)
    await agent.prompt("Ada is 36.", output_type=Person)
    choices = [call.options.tool_choice for call in stream.calls]
    assert choices == ["required", "final_result"]
    # The agent's own options were never changed.
    assert agent.stream_options.tool_choice is None


async def test_output_through_the_event_stream() -> None:
    stream = ScriptedStream([answer({"name": "Ada", "age": 36})])
    agent = Agent(model=MODEL, stream_fn=stream)
    async with agent.stream("Ada is 36.", output_type=Person) as events:
        async for _ in events:
            pass
    assert events.result.output == Person(name="Ada", age=36)


async def test_a_failed_output_through_the_event_stream_is_data_until_output_is_read() -> None:
    stream = ScriptedStream([reply_text("no"), reply_text("no")])
    agent = Agent(model=MODEL, stream_fn=stream, output_retries=1)
    async with agent.stream("Ada is 36.", output_type=Person) as events:
        async for _ in events:
            pass
    result = events.result  # the event stream keeps failures as data
    assert not result.ok
    assert result.output_error is not None
    with pytest.raises(StructuredOutputFailed) as caught:
        _ = result.output
    assert caught.value.result is result


@pytest.mark.parametrize(
    ("output_type", "arguments", "value"),
    [
        pytest.param(int, {"result": 7}, 7, id="plain-type"),
        pytest.param(Point, {"x": 1, "y": 2}, Point(x=1, y=2), id="dataclass"),
        pytest.param(
            Movie, {"title": "Up", "year": 2009}, {"title": "Up", "year": 2009}, id="typeddict"
        ),
    ],
)
async def test_output_types_of_every_kind(output_type: Any, arguments: Any, value: Any) -> None:
    stream = ScriptedStream([answer(arguments)])
    agent = Agent(model=MODEL, stream_fn=stream)
    result = await agent.prompt("x", output_type=output_type)
    assert result.output == value


async def test_structured_is_kept_for_one_release_with_a_warning() -> None:
    stream = ScriptedStream([answer({"name": "Ada", "age": 36})])
    agent = Agent(model=MODEL, stream_fn=stream)
    with pytest.warns(DeprecationWarning, match="prompt"):
        value = await agent.structured("Ada is 36.", Person)
    assert value == Person(name="Ada", age=36)
