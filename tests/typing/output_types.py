"""Checked by type checkers (mypy in ``nox -s types``, pyright by ``test_typing.py``).

It also runs: every ``assert_type`` is checked statically and is a no-op at run time.
"""

from __future__ import annotations

import dataclasses
from typing import TypedDict, assert_type

import msgspec

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

MODEL = al.ModelSpec(provider="typing", model_id="check")


class Person(msgspec.Struct):
    name: str
    age: int


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str


class Deps(msgspec.Struct):
    greeting: str


@al.tool
async def greet(ctx: al.ToolContext[Deps], name: str) -> str:
    """Greet someone."""
    assert_type(ctx.deps, Deps)
    return f"{ctx.deps.greeting}, {name}"


async def check() -> None:
    plain_script = [
        reply_text("hi"),
        reply_tool_calls(("final_result", {"x": 1, "y": 2})),
        reply_tool_calls(("final_result", {"title": "Up"})),
        reply_tool_calls(("final_result", {"result": [1, 2]})),
        reply_tool_calls(("final_result", {"result": 3})),
    ]
    plain = al.Agent(model=MODEL, stream_fn=ScriptedStream(plain_script))
    assert_type(plain, al.Agent[str])
    assert_type((await plain.prompt("x")).output, str)

    answer = reply_tool_calls(("final_result", {"name": "Ada", "age": 36}))
    typed = al.Agent(model=MODEL, stream_fn=ScriptedStream([answer] * 3), output_type=Person)
    assert_type(typed, al.Agent[Person])
    result = await typed.prompt("Ada is 36.")
    assert_type(result, al.AgentResult[Person])
    assert_type(result.output, Person)

    point = await plain.prompt("x", output_type=Point)
    assert_type(point.output, Point)
    movie = await plain.prompt("x", output_type=Movie)
    assert_type(movie.output, Movie)
    numbers = await plain.prompt("x", output_type=list[int])
    assert_type(numbers.output, list[int])

    async with typed.stream("x") as events:
        async for event in events:
            assert_type(event, al.AgentEvent)
    assert_type(events.result.output, Person)

    async with plain.stream("x", output_type=int) as counted:
        async for delta in counted.text_deltas():
            assert_type(delta, str)
    assert_type(counted.result.output, int)

    again = await typed.continue_run()
    assert_type(again.output, Person)

    loop_result = await al.loop.run_loop(
        [],
        al.loop.AgentContext(),
        al.loop.AgentLoopConfig(model=MODEL, stream_fn=ScriptedStream([reply_text("hi")])),
    )
    assert_type(loop_result.output, str)
