"""The ``agentloop`` command.

::

    agentloop run "fix the failing test"     headless: the answer streams to stdout
    agentloop run --json "..."               every event as a JSON line
    git diff | agentloop run "review this"   standard input is added to the prompt
    agentloop acp                            an Agent Client Protocol server on stdio
    agentloop config                         the effective settings and where they come from
    agentloop sessions                       the stored sessions, newest first
    agentloop eval run|report|gate ...       evaluate agents (the [eval] extra)

``agentloop`` alone (or ``agentloop tui``) opens the terminal UI, which is not part of this
package: it is imported by name, when asked for, from the ``[tui]`` extra (``agentloop_tui``
imports this package, never the reverse). ``agentloop eval`` hands over to ``agentloop_eval``
(the ``[eval]`` extra) the same way. The ``scripted:<file.json>`` model (see
``_scripted``) is always available, for tests and demos.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

import anyio

import agentloop
from agentloop import SessionNotFound, UnknownModel

from ._config import ConfigError, LoadedConfig, load_config
from ._run import EXIT_CODES, run_prompt, terminal_ask
from ._scripted import ScriptError, register_scripted
from ._session import CodingSession, list_sessions, open_store

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["EVAL_MISSING", "TUI_MISSING", "build_parser", "main"]

TUI_MISSING = (
    "agentloop: the terminal UI needs the [tui] extra: pip install 'anyio-agentloop[tui]'\n"
    'For now, run one prompt headless:   agentloop run "what does this project do?"\n'
    "or connect an editor over ACP:      agentloop acp\n"
    "See agentloop --help."
)

EVAL_MISSING = (
    "agentloop: evaluation needs the [eval] extra: pip install 'anyio-agentloop[eval]'\n"
    "then: agentloop eval run SUITE_FOLDER   (see the Evaluation page of the docs)"
)

_USAGE_ERRORS = (ConfigError, UnknownModel, SessionNotFound, ScriptError, ValueError)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--model", help="the model, as provider:model-id")
    parser.add_argument(
        "--approval",
        choices=["enabled", "smart", "bypassed"],
        help="which tool calls need approval (default: smart, or the config's)",
    )
    parser.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="TOOL",
        help="run this tool's calls without asking (repeatable)",
    )
    parser.add_argument("--plan", action="store_true", default=None, help="start in plan mode")
    parser.add_argument(
        "--thinking", choices=["off", "minimal", "low", "medium", "high", "extra_high"]
    )
    parser.add_argument("--max-turns", type=int, help="the most turns one prompt may take")
    parser.add_argument("--cwd", default=".", help="the workspace (default: this directory)")
    parser.add_argument("--config", help="read this file instead of the user config file")
    parser.add_argument("--backend", choices=["asyncio", "trio"], help=argparse.SUPPRESS)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser."""
    parser = argparse.ArgumentParser(
        prog="agentloop", description="A coding agent on agentloop: headless runs and ACP."
    )
    parser.add_argument("--version", action="version", version=agentloop.__version__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser("run", help="run one prompt headless")
    run.add_argument("prompt", nargs="*", help="the prompt (default: standard input)")
    run.add_argument("--json", action="store_true", help="write every event as a JSON line")
    run.add_argument("-v", "--verbose", action="store_true", help="show thinking and results")
    session = run.add_mutually_exclusive_group()
    session.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="continue session ID (default: the latest in this workspace)",
    )
    session.add_argument("--session", metavar="ID", help="continue or start the session ID")
    session.add_argument("--no-session", action="store_true", help="do not record the session")
    _common(run)

    acp = commands.add_parser("acp", help="serve the Agent Client Protocol on stdio")
    _common(acp)

    config = commands.add_parser("config", help="show the effective settings")
    _common(config)

    sessions = commands.add_parser("sessions", help="list the stored sessions")
    _common(sessions)

    commands.add_parser("tui", help="the terminal UI (the default; needs the [tui] extra)")
    commands.add_parser("eval", help="evaluate agents: run, report, gate (the [eval] extra)")
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "model": args.model,
        "approval": args.approval,
        "plan": args.plan,
        "thinking": args.thinking,
        "max_turns": args.max_turns,
    }


def _load(args: argparse.Namespace) -> LoadedConfig:
    loaded = load_config(args.cwd, overrides=_overrides(args), user_file=args.config)
    for warning in loaded.warnings:
        print(f"agentloop: warning: {warning}", file=sys.stderr)
    if args.trust:
        trusted = [*loaded.config.trusted_tools, *args.trust]
        config = agentloop_config_replace(loaded.config, trusted_tools=trusted)
        loaded = LoadedConfig(
            config=config, sources=loaded.sources, files=loaded.files, warnings=loaded.warnings
        )
    return loaded


def agentloop_config_replace(config: Any, **changes: Any) -> Any:
    import msgspec

    return msgspec.structs.replace(config, **changes)


def _read_prompt(args: argparse.Namespace) -> str:
    words = [w for w in args.prompt if w != "-"]
    piped = ""
    if not sys.stdin.isatty():
        piped = sys.stdin.read()
    text = " ".join(words).strip()
    if text and piped.strip():
        return f"{text}\n\n{piped}"
    text = text or piped.strip()
    if not text:
        raise ConfigError("no prompt: give one as arguments or on standard input")
    return text


async def _latest_here(loaded: LoadedConfig, root: str) -> str:
    for info in await list_sessions(loaded.config):
        if info.metadata.get("cwd") == root:
            return info.id
    raise ConfigError(f"no stored session for {root} to resume")


async def _run(args: argparse.Namespace, loaded: LoadedConfig, prompt: str, root: str) -> int:
    resume: str | None = None
    session_id: str | None = None
    if args.resume is not None:
        resume = args.resume or await _latest_here(loaded, root)
    elif args.session:
        try:
            await open_store(loaded.config).info(args.session)
            resume = args.session
        except SessionNotFound:
            session_id = args.session
    session = await CodingSession.start(
        loaded.config,
        workspace=root,
        resume=resume,
        session_id=session_id,
        record=not args.no_session,
        model=args.model,  # a flag wins over the resumed session's own model
    )
    if sys.stdin.isatty() and sys.stderr.isatty():
        session.ask = terminal_ask(session, sys.stdin, sys.stderr)
    try:
        code = await run_prompt(session, prompt, json_lines=args.json, verbose=args.verbose)
    finally:
        await session.aclose()
    if session.session_id is not None:
        print(f"session: {session.session_id}", file=sys.stderr)
    return code


async def _sessions(loaded: LoadedConfig) -> int:
    for info in await list_sessions(loaded.config):
        where = info.metadata.get("cwd", "")
        print(f"{info.id}  {info.message_count:>4} messages  {where}  {info.title}")
    return 0


def _show_config(loaded: LoadedConfig) -> int:
    import msgspec

    values = msgspec.to_builtins(loaded.config)
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict) and key == "bash":
            flat.update({f"bash.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    print("# files read: " + (", ".join(loaded.files) or "none"))
    for key, value in flat.items():
        source = loaded.sources.get(key, "default")
        print(f"{key} = {msgspec.json.encode(value).decode()}  # {source}")
    print(f"# sessions are kept in {loaded.config.sessions_path()}")
    return 0


def _quiet_if_broken(stream: Any) -> None:
    """If the reader of ``stream`` left, point it at /dev/null so the exit flush is silent."""
    try:
        stream.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def _open_tui(argv: Sequence[str]) -> int:
    """Hand over to the terminal UI (``agentloop_tui.main``), if it is installed."""
    try:
        tui = importlib.import_module("agentloop_tui")
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("agentloop_tui", "textual"):
            raise
        print(TUI_MISSING, file=sys.stderr)
        return EXIT_CODES["usage"]
    code: int = tui.main(list(argv))
    return code


def _open_eval(argv: Sequence[str]) -> int:
    """Hand over to the evaluation command line (``agentloop_eval.main``), if installed."""
    try:
        evaluation = importlib.import_module("agentloop_eval")
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "agentloop_eval":
            raise
        print(EVAL_MISSING, file=sys.stderr)
        return EXIT_CODES["usage"]
    code: int = evaluation.main(list(argv), prog="agentloop eval")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``agentloop`` command; returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["tui"]:
        return _open_tui(arguments[1:])  # its flags are the terminal UI's own
    if arguments[:1] == ["eval"]:
        return _open_eval(arguments[1:])
    parser = build_parser()
    args = parser.parse_args(arguments)
    if args.command is None:
        return _open_tui([])
    register_scripted()
    backend = args.backend or "asyncio"
    try:
        loaded = _load(args)
        if args.command == "config":
            return _show_config(loaded)
        if args.command == "sessions":
            code: int = anyio.run(_sessions, loaded, backend=backend)
            return code
        if args.command == "acp":
            from ._acp import serve_stdio

            serve_stdio(loaded.config, workspace=args.cwd)
            return 0
        prompt = _read_prompt(args)
        root = os.path.realpath(args.cwd)
        code = anyio.run(_run, args, loaded, prompt, root, backend=backend)
        _quiet_if_broken(sys.stdout)
        return code
    except _USAGE_ERRORS as exc:
        print(f"agentloop: error: {exc}", file=sys.stderr)
        return EXIT_CODES["usage"]
    except KeyboardInterrupt:
        return EXIT_CODES["SIGINT"]


if __name__ == "__main__":
    sys.exit(main())
