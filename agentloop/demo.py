"""A small agent, end to end: ``python -m agentloop.demo [--backend trio|asyncio] [--offline]``.

The model streams a sentence, calls two tools at once, and is steered while both run: when the
first tool finishes, a subscriber queues a steering message, the loop cancels the other tool,
and the model answers with the steering in view. Every event is printed as it happens, one line
each (the streamed text inline).

With no network this runs against a scripted model (``agentloop.testing.ScriptedStream``). When
``ANTHROPIC_API_KEY`` or ``OPENAI_API_KEY`` is set and ``agentloop_providers`` has that
provider, the same agent runs against the real model, unless ``--offline`` is given.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any

import anyio

from ._agent import Agent
from ._events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    StreamRetry,
    ToolExecutionEnd,
    ToolExecutionStart,
    TurnEnd,
    TurnStart,
)
from ._stream import TextDelta
from ._tools import FunctionTool, tool
from ._types import (
    AssistantMessage,
    ModelSpec,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    extract_text,
)
from .testing import ScriptedStream, reply_text, reply_tool_calls

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractAsyncContextManager

    from ._stream import StreamFn

__all__ = ["FINAL_ANSWER", "PROMPT", "STEERING", "main", "run"]

PROMPT = (
    "What is the weather in Paris right now, and what time is it there? Call both tools at once."
)
STEERING = "Never mind the time: just give me the weather, in one short sentence."
FINAL_ANSWER = "Paris: 18 °C and sunny. (I skipped the local time, as you asked.)"
SYSTEM_PROMPT = "You are a concise assistant. Use the tools to look things up."

# How long the simulated tools may take at most (a real model may call only one of them).
_FIRST_TOOL_LIMIT = 2.0
_OTHER_TOOL_LIMIT = 5.0


class _Desk:
    """What the simulated tools wait on, so that the steering lands while both run.

    The first call to start finishes once a second call is running too; the others finish
    once the steering has been sent (each with a bound, as simulated work).
    """

    def __init__(self) -> None:
        self.started = 0
        self.second_started = anyio.Event()
        self.steered = anyio.Event()

    async def work(self) -> None:
        self.started += 1
        if self.started == 1:
            with anyio.move_on_after(_FIRST_TOOL_LIMIT):
                await self.second_started.wait()
        else:
            self.second_started.set()
            with anyio.move_on_after(_OTHER_TOOL_LIMIT):
                await self.steered.wait()


def _tools(desk: _Desk) -> list[FunctionTool]:
    @tool(read_only=True)
    async def get_weather(city: str) -> str:
        """Current weather in a city.

        Args:
            city: the city's name.
        """
        await desk.work()
        return f"{city}: 18 °C, sunny, light wind"

    @tool(read_only=True)
    async def get_local_time(city: str) -> str:
        """The local time in a city.

        Args:
            city: the city's name.
        """
        await desk.work()
        return f"{city}: 14:05"

    return [get_weather, get_local_time]


def scripted_model() -> ScriptedStream:
    """The offline model: streams a sentence and two tool calls, then the final answer."""
    return ScriptedStream(
        [
            reply_tool_calls(
                ToolCall(id="call_weather", name="get_weather", arguments={"city": "Paris"}),
                ToolCall(id="call_time", name="get_local_time", arguments={"city": "Paris"}),
                text="Let me check the weather and the clock in Paris.",
                usage=Usage(input=412, output=58, total=470),
            ),
            reply_text(FINAL_ANSWER, usage=Usage(input=590, output=21, total=611)),
        ],
        chunk_size=6,
    )


def _real_model() -> tuple[ModelSpec, AbstractAsyncContextManager[Any]] | None:
    """The real provider for the first API key in the environment, if the package has it."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        try:
            from agentloop_providers.anthropic import AnthropicProvider
        except ImportError:
            pass
        else:
            model_id = os.environ.get("AGENTLOOP_DEMO_MODEL", "claude-3-5-haiku-latest")
            return ModelSpec(provider="anthropic", model_id=model_id), AnthropicProvider()
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from agentloop_providers.openai_chat import OpenAIChatProvider
        except ImportError:
            pass
        else:
            model_id = os.environ.get("AGENTLOOP_DEMO_MODEL", "gpt-4o-mini")
            return ModelSpec(provider="openai", model_id=model_id), OpenAIChatProvider()
    return None


class _Printer:
    """Prints each event on one line; the assistant's text streams inline."""

    def __init__(self, write: Callable[[str], object], steering: set[int]) -> None:
        self.write = write
        self.steering = steering
        self.streaming = False
        # The call whose end made the subscriber steer, and what it queued.
        self.steered_after: tuple[str, str] | None = None

    def line(self, text: str) -> None:
        if self.streaming:
            self.write("\n")
            self.streaming = False
        self.write(text + "\n")

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, MessageUpdate):
            delta = event.event
            if isinstance(delta, TextDelta):
                if not self.streaming:
                    self.write("  assistant: ")
                    self.streaming = True
                self.write(delta.delta)
        elif isinstance(event, AgentStart):
            self.line("agent start")
        elif isinstance(event, TurnStart):
            self.line(f"turn {event.turn} start")
        elif isinstance(event, MessageStart):
            pass  # the message is shown when it ends (the assistant's text as it streams)
        elif isinstance(event, MessageEnd):
            self._message_end(event)
        elif isinstance(event, StreamRetry):
            self.line(f"  model call failed ({event.kind}); retry {event.attempt}")
        elif isinstance(event, ToolExecutionStart):
            self.line(f"  tool start  {event.name} {event.arguments}")
        elif isinstance(event, ToolExecutionEnd):
            status = "error" if event.is_error else "ok"
            self.line(f"  tool end    {event.name} [{status}] {extract_text(event.result.content)}")
            if self.steered_after is not None and self.steered_after[0] == event.call_id:
                self.line(f"  >> steering while the other tool runs: {self.steered_after[1]}")
        elif isinstance(event, TurnEnd):
            self.line(f"turn {event.turn} end: {event.reason}")
        elif isinstance(event, AgentEnd):
            self.line(f"agent end ({len(event.messages)} new messages)")

    def _message_end(self, event: MessageEnd) -> None:
        message = event.message
        if isinstance(message, UserMessage):
            who = "steering" if id(message) in self.steering else "user"
            self.line(f"  {who}: {extract_text(message.content)}")
        elif isinstance(message, AssistantMessage):
            if self.streaming:
                self.write("\n")
                self.streaming = False
            calls = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
            summary = f"  assistant done: {message.stop_reason}"
            if calls:
                summary += f", calls {calls}"
            if message.error_message:
                summary += f", error: {message.error_message}"
            self.line(summary)
        elif isinstance(message, ToolResultMessage):
            pass  # shown by its ToolExecutionEnd


def _stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()  # the streamed text shows as it arrives


async def run(
    stream_fn: StreamFn,
    model: ModelSpec,
    *,
    write: Callable[[str], object] = _stdout,
) -> Agent:
    """Run the demo agent once against ``stream_fn``, printing its events with ``write``."""
    desk = _Desk()
    agent = Agent(model=model, stream_fn=stream_fn, system_prompt=SYSTEM_PROMPT, tools=_tools(desk))
    steering_ids: set[int] = set()
    printer = _Printer(write, steering_ids)

    def steer_when_the_first_tool_ends(event: AgentEvent) -> None:
        # Subscribers run synchronously as the event is emitted: the steering is queued
        # before the loop polls for it, right after this tool's end.
        if isinstance(event, ToolExecutionEnd) and not desk.steered.is_set():
            message = UserMessage.text(STEERING)
            steering_ids.add(id(message))
            printer.steered_after = (event.call_id, STEERING)
            agent.steer(message)
            desk.steered.set()

    agent.subscribe(steer_when_the_first_tool_ends)
    async with agent.stream(PROMPT) as events:
        async for event in events:
            printer(event)
    result = events.result
    printer.line(f"final answer: {result.text}")
    printer.line(
        f"stop reason: {result.stop_reason}; tokens in/out over the run: "
        f"{agent.usage.input}/{agent.usage.output}"
    )
    return agent


async def main(*, offline: bool = False, write: Callable[[str], object] = _stdout) -> Agent:
    """Run the demo: against a real provider when one is configured, else the scripted model."""
    real = None if offline else _real_model()
    if real is None:
        write("(scripted model, no network)\n")
        return await run(
            scripted_model(), ModelSpec(provider="demo", model_id="scripted"), write=write
        )
    model, provider = real
    write(f"({model.provider} {model.model_id})\n")
    async with provider as stream_fn:
        return await run(stream_fn, model, write=write)


def _cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m agentloop.demo", description=__doc__)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument(
        "--offline", action="store_true", help="use the scripted model even if an API key is set"
    )
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        anyio.run(lambda: main(offline=args.offline), backend=args.backend)


if __name__ == "__main__":
    _cli()
