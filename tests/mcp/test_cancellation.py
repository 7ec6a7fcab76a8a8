"""A call that is cancelled (timeout, abort, steering, a cancel scope) is cancelled on the server
too: the client sends ``notifications/cancelled``, and the server's handler is seen to stop (the
test server's ``sleepy`` tool records it, and ``cancelled(name)`` reports it)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import agentloop as al
import agentloop_mcp as mcp
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import ERAS, MODEL, Mode, call, features_spec, text, tool_named

pytestmark = pytest.mark.anyio


async def server_saw_cancel(server: mcp.McpToolset, name: str) -> bool:
    result = await call(server, "cancelled", name=name)
    return bool(result.details["structured_content"]["result"])


@ERAS
async def test_a_timed_out_call_is_cancelled_on_the_server(mode: Mode) -> None:
    async with mcp.open_toolset(features_spec(mode, call_timeout=3.0)) as server:
        result = await call(server, "sleepy", name="timeout")
        assert result.is_error and "timed out after 3 s" in text(result)
        assert await server_saw_cancel(server, "timeout")


@ERAS
async def test_a_call_cancelled_by_its_caller_is_cancelled_on_the_server(mode: Mode) -> None:
    async with mcp.open_toolset(features_spec(mode)) as server:
        sleepy = tool_named(server, "sleepy")
        with anyio.CancelScope() as scope:

            def on_update(update: Any) -> None:
                scope.cancel()  # once the server runs it

            await sleepy.execute("c", {"name": "scope"}, on_update)
        assert scope.cancelled_caught
        assert await server_saw_cancel(server, "scope")


async def test_an_aborted_run_cancels_its_call_on_the_server() -> None:
    model = ScriptedStream([reply_tool_calls(("sleepy", {"name": "abort"}))])
    async with mcp.open_toolset(features_spec()) as server:
        agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[server])

        def on_event(event: al.AgentEvent) -> None:
            if isinstance(event, al.ToolExecutionUpdate):
                agent.abort()

        agent.subscribe(on_event)
        result = await agent.prompt("sleep", raise_on_error=False)
        assert result.stop_reason is al.StopReason.ABORTED
        assert await server_saw_cancel(server, "abort")


async def test_steering_cancels_the_call_on_the_server() -> None:
    gate = anyio.Event()

    @al.tool
    async def wait_for_gate() -> str:
        """Returns once the test opens the gate."""
        await gate.wait()
        return "through"

    model = ScriptedStream(
        [
            reply_tool_calls(("sleepy", {"name": "steer"}), ("wait_for_gate", {})),
            reply_text("steered"),
        ]
    )
    async with mcp.open_toolset(features_spec()) as server:
        agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[server], tools=[wait_for_gate])

        def on_event(event: al.AgentEvent) -> None:
            if isinstance(event, al.ToolExecutionUpdate) and event.name == "sleepy":
                agent.steer("stop that")
                gate.set()

        agent.subscribe(on_event)
        result = await agent.prompt("sleep")
        cancelled = [
            m
            for m in result.messages
            if isinstance(m, al.ToolResultMessage) and m.tool_name == "sleepy"
        ]
        assert cancelled and cancelled[0].is_error
        assert await server_saw_cancel(server, "steer")
