"""Tools: ``@tool`` schemas and validation from annotations, and JSON Schema tools."""

from __future__ import annotations

import threading
from typing import Annotated, Any, Literal

import msgspec
import pytest

from agentloop import (
    AgentTool,
    AgentToolResult,
    FunctionTool,
    Text,
    Tool,
    ToolArgumentError,
    ToolContext,
    tool,
)
from agentloop._tools import validator_for

pytestmark = pytest.mark.anyio


class Point(msgspec.Struct, frozen=True):
    x: int
    y: int = 0


@tool
def move(to: Point, speed: float = 1.0, mode: Literal["walk", "run"] = "walk") -> str:
    """Move the robot.

    It never leaves the room.

    Args:
        to: where to go, as a point
            on the floor.
        speed (float): metres per second.

    Returns:
        Where the robot ended up.
    """
    return f"at {to.x},{to.y} ({mode}, {speed})"


def ignore_update(update: AgentToolResult | str) -> None:
    pass


async def run(t: FunctionTool | Tool, arguments: Any, call_id: str = "call_1") -> AgentToolResult:
    """Validate then execute, as the loop does."""
    return await t.execute(call_id, t.validate_arguments(arguments), ignore_update)


# --------------------------------------------------------------------------- @tool schema


def test_schema_from_annotations() -> None:
    schema = move.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["to"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert list(props) == ["to", "speed", "mode"]
    assert props["speed"]["type"] == "number"
    assert props["speed"]["default"] == 1.0
    assert sorted(props["mode"]["enum"]) == ["run", "walk"]
    assert props["mode"]["default"] == "walk"
    # The nested struct is described once, in $defs, and referenced.
    assert props["to"]["$ref"] == "#/$defs/Point"
    point = schema["$defs"]["Point"]
    assert point["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}}
    assert point["required"] == ["x"]
    assert "title" not in schema


def test_descriptions_from_the_docstring() -> None:
    assert move.name == "move"
    assert move.label == "move"
    assert move.description == "Move the robot.\n\nIt never leaves the room."
    props = move.parameters["properties"]
    assert props["to"]["description"] == "where to go, as a point on the floor."
    assert props["speed"]["description"] == "metres per second."
    assert "description" not in props["mode"]


def test_overrides_and_flags() -> None:
    @tool(name="lookup", description="Find a word.", label="Dictionary", requires_approval=True)
    def find(word: str) -> str:
        """Ignored docstring."""
        return word

    assert (find.name, find.description, find.label) == ("lookup", "Find a word.", "Dictionary")
    assert find.requires_approval
    assert not find.read_only
    assert find("direct call") == "direct call"
    assert repr(find) == "<FunctionTool lookup>"


def test_tool_without_docstring_or_parameters() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert ping.description == ""
    assert ping.parameters == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_var_args_are_refused() -> None:
    def spread(*values: int) -> int:
        return sum(values)

    def keywords(**values: int) -> int:
        return len(values)

    with pytest.raises(TypeError, match="args"):
        tool(spread)
    with pytest.raises(TypeError, match="kwargs"):
        tool(keywords)


def test_tools_satisfy_the_protocol() -> None:
    class Echo(Tool):
        name = "echo"

    assert isinstance(move, AgentTool)
    assert isinstance(Echo(), AgentTool)
    assert not isinstance(object(), AgentTool)


# --------------------------------------------------------------------------- @tool validation


def test_valid_arguments_are_decoded_into_the_declared_types() -> None:
    args = move.validate_arguments({"to": {"x": 3, "y": 4}, "speed": 2})
    assert args.to == Point(x=3, y=4)
    assert args.speed == 2.0
    assert args.mode == "walk"


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"to": {"x": "3"}}, "Expected `int`, got `str` - at `$.to.x`"),
        ({"to": {"x": 1}, "speed": "fast"}, "Expected `float`, got `str` - at `$.speed`"),
        ({"to": {"x": 1}, "mode": "fly"}, "Invalid enum value 'fly'"),
        ({}, "missing required field `to`"),
        ({"to": {"x": 1}, "colour": "red"}, "unknown field `colour`"),
        ([1, 2], "must be a JSON object, not list"),
        ("to=1", "must be a JSON object, not str"),
        (None, "must be a JSON object, not NoneType"),
    ],
)
def test_invalid_arguments_say_what_is_wrong(arguments: Any, fragment: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        move.validate_arguments(arguments)
    assert fragment in str(info.value)


def test_annotated_constraints_reach_schema_and_validation() -> None:
    @tool
    def pick(count: Annotated[int, msgspec.Meta(ge=1, le=10, description="how many")]) -> str:
        """Pick some.

        Args:
            count: overridden by the annotation's own description.
        """
        return str(count)

    prop = pick.parameters["properties"]["count"]
    assert (prop["minimum"], prop["maximum"]) == (1, 10)
    assert prop["description"] == "how many"
    assert pick.validate_arguments({"count": 10}).count == 10
    with pytest.raises(ToolArgumentError, match=">= 1"):
        pick.validate_arguments({"count": 0})


# --------------------------------------------------------------------------- @tool execution


async def test_sync_function_runs_in_a_worker_thread_by_default() -> None:
    seen: list[bool] = []

    @tool
    def slow(n: int) -> int:
        seen.append(threading.current_thread() is threading.main_thread())
        return n * 2

    result = await run(slow, {"n": 21})
    assert result.content == [Text(text="42")]
    assert seen == [False]


async def test_inline_sync_function_runs_in_the_event_loop_thread() -> None:
    seen: list[bool] = []

    @tool(inline=True)
    def where() -> str:
        seen.append(threading.current_thread() is threading.main_thread())
        return "here"

    assert await run(where, {}) == AgentToolResult(content=[Text(text="here")])
    assert seen == [True]


def test_inline_is_refused_for_async_functions() -> None:
    async def noop() -> None:
        return None

    with pytest.raises(TypeError, match="inline=True"):
        tool(inline=True)(noop)


async def test_async_function() -> None:
    @tool
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    result = await run(add, {"a": 2, "b": 3})
    assert result == AgentToolResult(content=[Text(text="5")], details=5)
    assert not result.is_error


async def test_nested_struct_arguments_reach_the_function_as_structs() -> None:
    result = await run(move, {"to": {"x": 1, "y": 2}, "mode": "run"})
    assert result.content == [Text(text="at 1,2 (run, 1.0)")]


async def test_raw_dict_arguments_are_passed_through() -> None:
    # A tool may be executed with unvalidated (already plain) arguments.
    @tool
    def echo(word: str) -> str:
        return word

    result = await echo.execute("c", {"word": "raw"}, ignore_update)
    assert result.content == [Text(text="raw")]


async def test_tool_context_is_injected_and_kept_out_of_the_schema() -> None:
    updates: list[AgentToolResult | str] = []

    @tool
    async def work(steps: int, ctx: ToolContext[Any]) -> str:
        for i in range(steps):
            ctx.on_update(f"step {i}")
        return f"{ctx.name}:{ctx.call_id}"

    assert list(work.parameters["properties"]) == ["steps"]
    assert work.parameters["required"] == ["steps"]
    result = await work.execute("call_7", work.validate_arguments({"steps": 2}), updates.append)
    assert result.content == [Text(text="work:call_7")]
    assert updates == ["step 0", "step 1"]
    with pytest.raises(ToolArgumentError, match="ctx"):
        work.validate_arguments({"steps": 1, "ctx": None})


class Report(msgspec.Struct):
    lines: int
    ok: bool


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain text", AgentToolResult(content=[Text(text="plain text")])),
        (None, AgentToolResult(content=[Text(text="")])),
        (
            {"a": [1, 2]},
            AgentToolResult(content=[Text(text='{"a":[1,2]}')], details={"a": [1, 2]}),
        ),
        (
            Report(lines=3, ok=True),
            AgentToolResult(
                content=[Text(text='{"lines":3,"ok":true}')], details=Report(lines=3, ok=True)
            ),
        ),
        (AgentToolResult.error("nope"), AgentToolResult.error("nope")),
    ],
)
async def test_return_values_become_results(value: Any, expected: AgentToolResult) -> None:
    @tool
    def give() -> Any:
        return value

    assert await run(give, {}) == expected


async def test_exceptions_propagate_to_the_caller() -> None:
    # The loop turns them into error results; the tool itself does not hide them.
    @tool
    async def broken() -> str:
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        await run(broken, {})


# --------------------------------------------------------------------------- schema tools


class ReadFile(Tool):
    name = "read_file"
    description = "Read a file."
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "default": 100},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    read_only = True

    async def execute(self, call_id: str, arguments: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult.text(f"{arguments['path']}:{arguments['limit']}")


async def test_schema_tool_validates_and_fills_defaults() -> None:
    result = await run(ReadFile(), {"path": "/etc/hosts"})
    assert result.content == [Text(text="/etc/hosts:100")]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "path"),
        ({"path": 3}, "must be string"),
        ({"path": "p", "limit": 0}, "must be bigger than or equal to 1"),
        ({"path": "p", "extra": 1}, "must not contain"),
        ([], "must be object"),
    ],
)
def test_schema_tool_rejects_bad_arguments(arguments: Any, fragment: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        ReadFile().validate_arguments(arguments)
    assert fragment in str(info.value)


def test_validators_are_shared_across_equal_schemas() -> None:
    a = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    b = {"required": ["q"], "properties": {"q": {"type": "string"}}, "type": "object"}
    c = {"type": "object", "properties": {"q": {"type": "integer"}}, "required": ["q"]}
    assert validator_for(a) is validator_for(b)
    assert validator_for(a) is not validator_for(c)
    assert validator_for(a)({"q": "x"}) == {"q": "x"}
    with pytest.raises(ToolArgumentError):
        validator_for(c)({"q": "x"})


def test_base_tool_defaults() -> None:
    base = Tool()
    assert base.parameters == {"type": "object", "properties": {}}
    assert not base.requires_approval
    assert base.validate_arguments({"anything": 1}) == {"anything": 1}


async def test_base_tool_execute_must_be_overridden() -> None:
    with pytest.raises(NotImplementedError, match="Tool must implement execute"):
        await Tool().execute("c", {}, ignore_update)
