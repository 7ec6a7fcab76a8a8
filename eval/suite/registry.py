"""The sample suite's registry: its tools, the agents some cases build, and a check.

The cassettes were recorded against a real model: SmolLM2-135M-Instruct served by
``python -m llama_cpp.server`` (the ``llamacpp_python`` provider), see README.md. A model that
small needs help to call tools, so the agents here force the first tool call with
``tool_choice`` and let the model answer freely once a tool has run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

import agentloop as al
from agentloop import multi
from agentloop_eval import Registry

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agentloop.stream import AssistantMessageEvent, LlmContext, StreamFn
    from agentloop_eval import Setup, Trajectory

registry = Registry()
OPTIONS = al.StreamOptions(max_tokens=48, temperature=0.0)


@registry.tool
@al.tool
def get_weather(city: str) -> str:
    """The weather in a city today."""
    return f"Sunny and 21 C in {city}."


class ToolFirst:
    """A ``StreamFn`` that asks for ``tool`` until one of its calls has run, then lets the model
    answer as it likes."""

    def __init__(self, inner: StreamFn, tool: str) -> None:
        self.inner = inner
        self.tool = tool

    def __call__(
        self, model: al.ModelSpec, context: LlmContext, options: al.StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        ran = any(isinstance(m, al.ToolResultMessage) and not m.is_error for m in context.messages)
        choice = None if ran else self.tool
        return self.inner(model, context, msgspec.structs.replace(options, tool_choice=choice))


@registry.agent("weather_agent")
def weather_agent(setup: Setup, tools: list[al.AgentTool]) -> al.Agent[Any]:
    return al.Agent(
        model=setup.model,
        stream_fn=ToolFirst(setup.stream_fn, "get_weather"),
        name="weather",
        system_prompt="You report the weather. Use the tool, then answer in one sentence.",
        tools=tools,
        stream_options=OPTIONS,
    )


@registry.tool_factory("ask_forecaster")
def ask_forecaster(setup: Setup) -> al.AgentTool:
    """A sub-agent on the case's model (and so on its cassette) that uses ``get_weather``."""

    def forecaster() -> al.Agent[Any]:
        return al.Agent(
            model=setup.model,
            stream_fn=ToolFirst(setup.stream_fn, "get_weather"),
            name="forecaster",
            system_prompt="You find the weather with the tool and report it in one sentence.",
            tools=[get_weather],
            stream_options=OPTIONS,
        )

    return multi.SubAgentTool(
        forecaster, name="ask_forecaster", description="Ask the forecaster about the weather."
    )


@registry.agent("planner")
def planner(setup: Setup, tools: list[al.AgentTool]) -> al.Agent[Any]:
    return al.Agent(
        model=setup.model,
        stream_fn=ToolFirst(setup.stream_fn, "ask_forecaster"),
        name="planner",
        system_prompt="You plan outings. Ask the forecaster first, then answer briefly.",
        tools=tools,
        stream_options=OPTIONS,
    )


@registry.check
def mentions_the_tool_result(trajectory: Trajectory) -> tuple[bool, str]:
    """The answer repeats what the weather tool said (its temperature)."""
    said = [s.result for s in trajectory.walk_tool_calls() if s.name == "get_weather"]
    if not said:
        return False, "get_weather was never called"
    return "21" in trajectory.text, f"the answer: {trajectory.text!r}"
