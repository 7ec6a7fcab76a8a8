"""agentloop tools served over MCP by ``agentloop_mcp.serve``, for the tests.

python agentloop_server.py        over stdio
python agentloop_server.py http   over streamable HTTP on a free port (printed as a URL)
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import anyio.lowlevel

import agentloop as al
import agentloop_mcp

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


@al.tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


@al.tool
async def steps(n: int, ctx: al.ToolContext) -> str:
    """Report n progress steps, then finish."""
    for i in range(1, n + 1):
        ctx.on_update(f"step {i}")
        await anyio.lowlevel.checkpoint()
    return f"{n} steps"


@al.tool
def threaded_steps(n: int, ctx: al.ToolContext) -> str:
    """Like steps, from a worker thread."""
    for i in range(1, n + 1):
        ctx.on_update(f"thread step {i}")
    return f"{n} thread steps"


@al.tool
def broken() -> str:
    """Always raises."""
    raise ValueError("broken tool")


@al.tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (pretend); needs approval."""
    return f"deleted {path}"


class Picture(al.Tool):
    name = "picture"
    label = "Picture"
    description = "A tiny image, with details."
    parameters = {"type": "object", "properties": {}, "additionalProperties": False}  # noqa: RUF012

    async def execute(
        self, call_id: str, arguments: Any, on_update: al.abc.OnUpdate
    ) -> al.AgentToolResult:
        return al.AgentToolResult(
            content=[al.Text(text="a picture"), al.Image(media_type="image/png", data=PNG_B64)],
            details={"width": 1, "height": 1},
        )


NAPS: dict[str, anyio.Event] = {}


@al.tool
async def nap(name: str, ctx: al.ToolContext) -> str:
    """Reports progress ("napping"), then sleeps until cancelled; remembers the cancellation."""
    woken = NAPS.setdefault(name, anyio.Event())
    try:
        ctx.on_update("napping")
        await anyio.sleep_forever()
    finally:
        woken.set()
    return "unreachable"


@al.tool
async def woken(name: str) -> bool:
    """Whether the nap ``name`` was cancelled (waiting up to 10 s for it to be)."""
    event = NAPS.setdefault(name, anyio.Event())
    with anyio.move_on_after(10):
        await event.wait()
    return event.is_set()


@al.tool
async def interview(ctx: al.ToolContext) -> str:
    """Logs, asks the client's user and the client's model, and reports both answers."""
    client = agentloop_mcp.current_client()
    assert client is not None
    await client.log("debug", "too detailed")
    await client.log("info", f"interviewing {client.name}")
    answer = await client.elicit(
        "Your name?", {"type": "object", "properties": {"name": {"type": "string", "default": "?"}}}
    )
    said = await client.sample(["Say hi"], max_tokens=20, hints=["small"])
    return f"{answer.action} {answer.content} / {said.model_id}: {said.text}"


@agentloop_mcp.resource("memo://today", mime_type="text/plain")
def memo() -> str:
    """Today's memo."""
    return MEMO[0]


@agentloop_mcp.resource(
    "memo://{day}/summary",
    complete=lambda arg, value: [d for d in ("monday", "tuesday") if d.startswith(value)],
)
async def summary(day: str) -> str:
    """A day's summary."""
    return f"summary of {day}"


@agentloop_mcp.resource("memo://broken")
def broken_memo() -> str:
    """Always fails."""
    raise OSError("disk on fire")


@agentloop_mcp.prompt(title="Plan a day")
def plan(day: str, mood: str = "calm") -> list[al.AgentMessage]:
    """Plan a day."""
    return [
        al.UserMessage(content=[al.Text(text=f"Plan {day}, {mood}.")]),
        al.AssistantMessage(content=[al.Text(text="What matters most?")]),
    ]


MEMO = ["call mum"]
RESOURCES = [memo, summary, broken_memo]
PROMPTS = [plan]


@al.tool
async def edit_memo(text: str) -> str:
    """Change today's memo; subscribers are told."""
    MEMO[0] = text
    await memo.changed()
    return "edited"


async def approval(call: al.ToolCall, tool: al.AgentTool | None) -> al.policy.ApprovalDecision:
    if str(call.arguments.get("path", "")).startswith("/tmp/"):
        return al.policy.APPROVED
    return al.policy.Rejected(reason="only files under /tmp/ may be deleted")


TOOLS: list[al.AgentTool] = [
    add,
    steps,
    threaded_steps,
    broken,
    delete,
    Picture(),
    interview,
    edit_memo,
    nap,
    woken,
]


async def main() -> None:
    if sys.argv[1:2] == ["http"]:
        await agentloop_mcp.serve(
            TOOLS,
            name="agentloop-test",
            approval=approval,
            resources=RESOURCES,
            prompts=PROMPTS,
            transport="streamable-http",
            port=0,
            on_ready=lambda url: print(url, flush=True),
        )
    else:
        await agentloop_mcp.serve(
            TOOLS,
            name="agentloop-test",
            version="1.0",
            approval=approval,
            resources=RESOURCES,
            prompts=PROMPTS,
        )


if __name__ == "__main__":
    anyio.run(main)
