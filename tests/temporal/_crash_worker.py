"""A worker in a process of its own, for the tests that kill one mid-run (``kill -9``).

Usage: ``python _crash_worker.py ADDRESS TASK_QUEUE WORKDIR``. It prints ``READY`` once it
polls, and ``BLOCKED <what>`` when a step it was told to block at (``WORKDIR/block``: ``tool``
or ``model``) starts for the first time; that step then never finishes in this process. With
``finish``, the third tool call waits for a line on standard input, then finishes (its side
effect done) and prints ``FINISHED <call id>``. Tool
calls append their call id to ``WORKDIR/effects`` when they finish (the side effect counted)
and to ``WORKDIR/starts`` when they start.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from temporalio.client import Client

from agentloop import AssistantMessage, ToolCall, ToolResultMessage, tool
from agentloop.testing import events_for, reply_text, reply_tool_calls
from agentloop_temporal import create_worker

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agentloop import ModelSpec, StreamOptions
    from agentloop.stream import AssistantMessageEvent, LlmContext

ADDRESS, QUEUE, WORKDIR = sys.argv[1], sys.argv[2], Path(sys.argv[3])
BLOCK = (WORKDIR / "block").read_text().strip()


def say(line: str) -> None:
    print(line, flush=True)


def block_once(what: str) -> bool:
    """Whether to block here: the first time only (a marker file remembers)."""
    marker = WORKDIR / f"blocked-{what}"
    if BLOCK != what.split("-")[0] or marker.exists():
        return False
    marker.touch()
    return True


@tool
async def effect(n: int) -> str:
    """A tool with a side effect."""
    from agentloop import current_tool_context

    context = current_tool_context()
    call_id = context.call_id if context else "?"
    with (WORKDIR / "starts").open("a") as f:
        f.write(f"{call_id}\n")
    if n == 3 and block_once("tool"):
        say(f"BLOCKED tool {call_id}")
        await anyio.sleep_forever()
    if n == 3 and block_once("finish"):
        # Held until the test says so (a line on standard input), then finished: the test
        # takes the server down first, so the completion cannot be delivered.
        say(f"BLOCKED finish {call_id}")
        await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        with (WORKDIR / "effects").open("a") as f:
            f.write(f"{call_id}\n")
        say(f"FINISHED {call_id}")
        return f"effect {n}"
    with (WORKDIR / "effects").open("a") as f:
        f.write(f"{call_id}\n")
    return f"effect {n}"


async def scripted(
    model: ModelSpec, context: LlmContext, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    answers = sum(1 for m in context.messages if isinstance(m, AssistantMessage))
    done = sum(1 for m in context.messages if isinstance(m, ToolResultMessage))
    if answers == 0:
        reply = reply_tool_calls(
            ToolCall(id="c1", name="effect", arguments={"n": 1}),
            ToolCall(id="c2", name="effect", arguments={"n": 2}),
        )
    elif answers == 1:
        reply = reply_tool_calls(ToolCall(id="c3", name="effect", arguments={"n": 3}))
    else:
        reply = reply_text(f"finished after {done} effects")
    events = events_for(reply, chunk_size=4)
    for i, event in enumerate(events):
        yield event
        if answers == 2 and i == 3 and block_once("model"):
            say("BLOCKED model")
            await anyio.sleep_forever()


async def main() -> None:
    client = await Client.connect(ADDRESS)
    # No workflow cache: every workflow task replays the history, on whichever worker.
    worker = create_worker(
        client, task_queue=QUEUE, stream_fn=scripted, tools=[effect], max_cached_workflows=0
    )
    async with worker:
        say("READY")
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, backend="asyncio")
