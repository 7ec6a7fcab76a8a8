"""``agentloop tui`` (and ``agentloop`` alone on a terminal): open the terminal UI.

::

    agentloop                          full screen, in this directory
    agentloop tui --inline             below the prompt, leaving the terminal's scrollback alone
    agentloop tui --resume             continue the latest session of this directory
    agentloop tui -m openai:gpt-4.1 --approval enabled --plan

    agentloop --mcp servers.json       with the MCP servers the file lists

The common flags (model, approval, trust, plan, thinking, turn limit, workspace, config file)
are those of ``agentloop run``. Inline, each finished message goes into the terminal's own
scrollback as it settles (and what is left when the app closes), so the terminal's search,
selection and copy work on the conversation; mouse reporting is off there unless ``--mouse``
(so a drag selects text). ``--transcript`` prints the conversation after a full-screen session.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from agentloop import MissingExtra
from agentloop_coding import CodingSession, ConfigError, list_sessions, register_scripted
from agentloop_coding.cli import add_common_options, load_settings, usage_errors

from ._app import AgentApp
from ._history import PromptHistory, history_path
from ._setup import needs_setup

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

    from ._view import Conversation

__all__ = ["build_parser", "main", "print_transcript"]

NO_TERMINAL = (
    "agentloop: the terminal UI needs a terminal (standard input and output are not one).\n"
    'To run one prompt headless:   agentloop run "what does this project do?"\n'
    "To serve an editor over ACP:  agentloop acp\n"
    "See agentloop --help."
)


def build_parser(prog: str = "agentloop tui") -> argparse.ArgumentParser:
    """The parser of ``agentloop tui``'s arguments."""
    parser = argparse.ArgumentParser(
        prog=prog, description="The terminal UI of the agentloop coding agent."
    )
    parser.add_argument("--inline", action="store_true", help="run below the prompt")
    parser.add_argument(
        "--transcript", action="store_true", help="print the conversation on exit (full screen)"
    )
    session = parser.add_mutually_exclusive_group()
    session.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="continue session ID (default: the latest in this workspace)",
    )
    session.add_argument("--no-session", action="store_true", help="do not record the session")
    parser.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="FILE",
        help="connect the MCP servers FILE lists (JSON or TOML; repeatable)",
    )
    parser.add_argument(
        "--mouse",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="mouse reporting (default: on full screen, off inline so a drag selects text)",
    )
    add_common_options(parser)
    return parser


def print_transcript(view: Conversation, console: Console, *, start: int = 0) -> None:
    """The conversation (from entry ``start``) as plain terminal output: answers rendered,
    tool calls one line each, notices dimmed."""
    from ._inline import render_entry

    for entry in view.entries[start:]:
        for renderable in render_entry(entry):
            console.print(renderable)


async def _latest_here(config: Any, root: str) -> str:
    # The latest session of this workspace with a conversation in it: one opened and closed
    # without a prompt has nothing to resume.
    for info in await list_sessions(config):
        if info.metadata.get("cwd") == root and info.message_count > 0:
            return info.id
    raise ConfigError(f"no stored session with a conversation for {root} to resume")


def _mcp_servers(files: list[str]) -> list[Any]:
    if not files:
        return []
    from pathlib import Path

    from ._mcp import load_servers

    servers: list[Any] = []
    for name in files:
        servers += load_servers(Path(name))
    return servers


def main(argv: Sequence[str] | None = None, prog: str = "agentloop tui") -> int:
    """Run the terminal UI; returns the exit status."""
    args = build_parser(prog).parse_args(argv)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(NO_TERMINAL, file=sys.stderr)
        return 2
    register_scripted()
    try:
        loaded = load_settings(args)
    except usage_errors() as exc:
        print(f"agentloop: error: {exc}", file=sys.stderr)
        return 2
    config = loaded.config
    root = os.path.realpath(args.cwd)
    if not os.path.isdir(root):
        print(f"agentloop: error: {args.cwd} is not a directory", file=sys.stderr)
        return 2
    try:
        servers = _mcp_servers(args.mcp)
    except ValueError as exc:  # McpConfigError
        print(f"agentloop: error: {exc}", file=sys.stderr)
        return 2
    except MissingExtra as exc:
        print(f"agentloop: {exc}", file=sys.stderr)
        return 2
    first = {"resume": args.resume}

    async def start(*, resume: str | None = None, model: str | None = None) -> CodingSession:
        wanted = first.pop("resume", None)
        if resume is None and wanted is not None:
            resume = wanted or await _latest_here(config, root)
        return await CodingSession.start(
            config,
            workspace=root,
            resume=resume,
            record=not args.no_session,
            model=model or args.model,
        )

    app = AgentApp(
        start,
        needs_setup=needs_setup(config.model),
        history=PromptHistory(history_path(root)),
        mcp_servers=servers,
    )
    mouse = args.mouse if args.mouse is not None else not args.inline
    code = app.run(inline=args.inline, mouse=mouse)
    if args.inline or args.transcript:
        from rich.console import Console

        printed = app.scrollback.printed if app.scrollback is not None else 0
        print_transcript(app.view, Console(), start=0 if args.transcript else printed)
    if app.session is not None and app.session.session_id and app.session.recorded:
        print(f"session: {app.session.session_id}", file=sys.stderr)
    return code if isinstance(code, int) else 0
