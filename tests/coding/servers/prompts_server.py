"""An MCP server whose prompts change: ``add_prompt(name)`` adds one and tells the client
(both protocol eras). For the ACP test of slash commands sent again when prompts change.

    python prompts_server.py      serve over stdio
"""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver import Context  # noqa: TC002 - read at run time by MCPServer
from mcp.server.mcpserver.prompts.base import Prompt

mcp = MCPServer("prompts", log_level="WARNING")


@mcp.prompt()
def hello() -> str:
    """Say hello."""
    return "Say hello."


@mcp.tool()
async def add_prompt(name: str, ctx: Context) -> str:
    """Add a prompt called ``name`` and tell the client its prompts changed."""

    def render() -> str:
        return f"This is {name}."

    mcp.add_prompt(Prompt.from_function(render, name=name, description=f"The {name} prompt."))
    await ctx.notify_prompts_changed()  # 2026-era clients: the listen stream
    await ctx.session.send_prompt_list_changed()  # handshake-era clients: the notification
    return f"added {name}"


if __name__ == "__main__":
    mcp.run()
