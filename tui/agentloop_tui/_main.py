"""``agentloop tui`` (and ``agentloop`` alone on a terminal): open the terminal UI.

::

    agentloop                          full screen, in this directory
    agentloop tui --inline             below the prompt, leaving the terminal's scrollback alone
    agentloop tui --resume             continue the latest session of this directory
    agentloop tui -m openai:gpt-4.1 --approval enabled --plan

The common flags (model, approval, trust, plan, thinking, turn limit, workspace, config file)
are those of ``agentloop run``. When the app closes, the conversation is printed to the terminal
(always in inline mode, with ``--transcript`` in full screen), so it stays in the scrollback,
where the terminal's own search, selection and copy work.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from agentloop_coding import CodingSession, ConfigError, list_sessions, register_scripted
from agentloop_coding.cli import add_common_options, load_settings, usage_errors

from ._app import AgentApp
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
    add_common_options(parser)
    return parser


def print_transcript(view: Conversation, console: Console) -> None:
    """The conversation as plain terminal output (answers rendered, tool calls one line each)."""
    from rich.markdown import Markdown
    from rich.text import Text

    from ._view import AssistantEntry, ToolEntry, UserEntry

    for entry in view.entries:
        if isinstance(entry, UserEntry):
            console.print(Text.assemble(("› ", "bold cyan"), (entry.text, "bold")))
        elif isinstance(entry, AssistantEntry):
            if entry.plan:
                console.print(Text("PLAN", style="bold black on magenta"))
            if entry.text:
                console.print(Markdown(entry.text, code_theme="monokai"))
            if entry.aborted:
                console.print(Text("⊘ aborted", style="magenta"))
        elif isinstance(entry, ToolEntry):
            line = Text(f"  {entry.status}: {entry.title}", style="dim")
            if entry.summary:
                line.append(f" — {entry.summary}")
            console.print(line)


async def _latest_here(config: Any, root: str) -> str:
    for info in await list_sessions(config):
        if info.metadata.get("cwd") == root:
            return info.id
    raise ConfigError(f"no stored session for {root} to resume")


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

    app = AgentApp(start, needs_setup=needs_setup(config.model))
    code = app.run(inline=args.inline, inline_no_clear=args.inline)
    if args.inline or args.transcript:
        from rich.console import Console

        print_transcript(app.view, Console())
    if app.session is not None and app.session.session_id:
        print(f"session: {app.session.session_id}", file=sys.stderr)
    return code if isinstance(code, int) else 0
