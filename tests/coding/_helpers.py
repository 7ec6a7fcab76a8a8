"""Calling the built-in tools as the loop would: arguments validated first, then executed."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

import anyio

from agentloop import AgentToolResult, ToolArgumentError, extract_text

if TYPE_CHECKING:
    from agentloop_coding import CodingTool

__all__ = ["alive", "call", "pids_in", "text_of", "wait_gone"]


async def call(
    tool: CodingTool, updates: list[str] | None = None, **arguments: Any
) -> AgentToolResult:
    """Validate ``arguments`` against the tool's schema and run it (an invalid one is an error
    result, as in the loop)."""
    try:
        validated = tool.validate_arguments(arguments)
    except ToolArgumentError as exc:
        return AgentToolResult.error(f"invalid arguments: {exc}")

    def on_update(update: AgentToolResult | str) -> None:
        if updates is not None:
            updates.append(update if isinstance(update, str) else extract_text(update.content))

    return await tool.execute("call_1", validated, on_update)


def text_of(result: AgentToolResult) -> str:
    return extract_text(result.content)


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (dead but not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            state = file.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in ("Z", "X")


def pids_in(text: str) -> list[int]:
    """The process ids a command printed as ``pid N``."""
    return [int(p) for p in re.findall(r"pid (\d+)", text)]


async def wait_gone(pid: int) -> None:
    """Return once process ``pid`` has exited (a pidfd becomes readable), within 5 seconds."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with anyio.fail_after(5):
            await anyio.wait_readable(fd)
    finally:
        os.close(fd)
    assert not alive(pid)
