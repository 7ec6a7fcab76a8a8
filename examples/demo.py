"""A small agent, end to end: ``python examples/demo.py [--backend trio|asyncio] [--offline]``.

The model streams a sentence, calls two tools at once, and is steered while both run: when the
first tool finishes, a subscriber queues a steering message, the loop cancels the other tool,
and the model answers with the steering in view. Every event is printed as it happens, one line
each (the streamed text inline).

With no network this runs against a scripted model (``agentloop.testing.ScriptedStream``). When
``ANTHROPIC_API_KEY`` or ``OPENAI_API_KEY`` is set (and the providers are installed:
``pip install 'anyio-agentloop[providers]'``), the same agent runs against the real model, named
by a model string, unless ``--offline`` is given.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import TYPE_CHECKING

import anyio

import agentloop as al
from agentloop.stream import TextDelta
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop.abc import StreamFn

__all__ = ["FINAL_ANSWER", "PROMPT", "STEERING", "main", "run", "scripted_model"]

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


def _tools(desk: _Desk) -> list[al.FunctionTool]:
    @al.tool(read_only=True)
    async def get_weather(city: str) -> str:
        """Current weather in a city.

        Args:
            city: the city's name.
        """
        await desk.work()
        return f"{city}: 18 °C, sunny, light wind"

    @al.tool(read_only=True)
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
                al.ToolCall(id="call_weather", name="get_weather", arguments={"city": "Paris"}),
                al.ToolCall(id="call_time", name="get_local_time", arguments={"city": "Paris"}),
                text="Let me check the weather and the clock in Paris.",
                usage=al.Usage(input=412, output=58, total=470),
            ),
            reply_text(FINAL_ANSWER, usage=al.Usage(input=590, output=21, total=611)),
        ],
        chunk_size=6,
    )


def real_model() -> str | None:
    """The model string for the first API key in the environment, if any."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic:" + os.environ.get("AGENTLOOP_DEMO_MODEL", "claude-3-5-haiku-latest")
    if os.environ.get("OPENAI_API_KEY"):
        return "openai:" + os.environ.get("AGENTLOOP_DEMO_MODEL", "gpt-4o-mini")
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

    def __call__(self, event: al.AgentEvent) -> None:
        if isinstance(event, al.MessageUpdate):
            delta = event.event
            if isinstance(delta, TextDelta):
                if not self.streaming:
                    self.write("  assistant: ")
                    self.streaming = True
                self.write(delta.delta)
        elif isinstance(event, al.AgentStart):
            self.line("agent start")
        elif isinstance(event, al.TurnStart):
            self.line(f"turn {event.turn} start")
        elif isinstance(event, al.MessageStart):
            pass  # the message is shown when it ends (the assistant's text as it streams)
        elif isinstance(event, al.MessageEnd):
            self._message_end(event)
        elif isinstance(event, al.StreamRetry):
            self.line(f"  model call failed ({event.kind}); retry {event.attempt}")
        elif isinstance(event, al.ToolExecutionStart):
            self.line(f"  tool start  {event.name} {event.arguments}")
        elif isinstance(event, al.ToolExecutionEnd):
            status = "error" if event.is_error else "ok"
            self.line(
                f"  tool end    {event.name} [{status}] {al.extract_text(event.result.content)}"
            )
            if self.steered_after is not None and self.steered_after[0] == event.call_id:
                self.line(f"  >> steering while the other tool runs: {self.steered_after[1]}")
        elif isinstance(event, al.TurnEnd):
            self.line(f"turn {event.turn} end: {event.reason}")
        elif isinstance(event, al.AgentEnd):
            self.line(f"agent end ({len(event.messages)} new messages)")

    def _message_end(self, event: al.MessageEnd) -> None:
        message = event.message
        if isinstance(message, al.UserMessage):
            who = "steering" if id(message) in self.steering else "user"
            self.line(f"  {who}: {al.extract_text(message.content)}")
        elif isinstance(message, al.AssistantMessage):
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
        elif isinstance(message, al.ToolResultMessage):
            pass  # shown by its ToolExecutionEnd


def _stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()  # the streamed text shows as it arrives


async def run(
    model: str | al.ModelSpec,
    stream_fn: StreamFn | None = None,
    *,
    write: Callable[[str], object] = _stdout,
) -> al.Agent:
    """Run the demo agent once, printing its events with ``write``."""
    desk = _Desk()
    agent = al.Agent(
        model=model, stream_fn=stream_fn, system_prompt=SYSTEM_PROMPT, tools=_tools(desk)
    )
    steering_ids: set[int] = set()
    printer = _Printer(write, steering_ids)

    def steer_when_the_first_tool_ends(event: al.AgentEvent) -> None:
        # Subscribers run synchronously as the event is emitted: the steering is queued
        # before the loop polls for it, right after this tool's end.
        if isinstance(event, al.ToolExecutionEnd) and not desk.steered.is_set():
            message = al.UserMessage.from_text(STEERING)
            steering_ids.add(id(message))
            printer.steered_after = (event.call_id, STEERING)
            agent.steer(message)
            desk.steered.set()

    agent.subscribe(steer_when_the_first_tool_ends)
    async with agent.stream(PROMPT) as events:
        async for event in events:
            printer(event)
    result = events.result
    printer.line(f"final answer: {result.output}")
    printer.line(
        f"stop reason: {result.stop_reason}; tokens in/out over the run: "
        f"{agent.usage.input}/{agent.usage.output}"
    )
    return agent


async def main(*, offline: bool = False, write: Callable[[str], object] = _stdout) -> al.Agent:
    """Run the demo: against a real provider when one is configured, else the scripted model."""
    model = None if offline else real_model()
    if model is None:
        write("(scripted model, no network)\n")
        scripted = al.ModelSpec(provider="demo", model_id="scripted")
        return await run(scripted, scripted_model(), write=write)
    write(f"({model})\n")
    return await run(model, write=write)


def _cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python examples/demo.py", description=__doc__)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument(
        "--offline", action="store_true", help="use the scripted model even if an API key is set"
    )
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        anyio.run(lambda: main(offline=args.offline), backend=args.backend)


if __name__ == "__main__":
    _cli()
