"""The coding agent's subcommands of ``agentloop``, and the options they share with the TUI.

::

    agentloop run "fix the failing test"     headless: the answer streams to stdout
    agentloop run --json "..."               every event as a JSON line
    git diff | agentloop run "review this"   standard input is added to the prompt
    agentloop run --resume "Now do it"       continue the latest session of this workspace
    agentloop run --resume ID "..."          continue session ID (or --session ID)
    agentloop acp                            an Agent Client Protocol server on stdio
    agentloop config                         the effective settings and where they come from
    agentloop sessions                       the stored sessions, newest first

Each command (``RUN``, ``ACP``, ``CONFIG``, ``SESSIONS``) is registered in the
``agentloop.commands`` entry-point group, which the ``agentloop`` command (``agentloop_cli``)
reads; the terminal UI (``agentloop_tui``) builds its own command on ``add_common_options``
and ``load_settings``. Nothing heavy is imported until a command runs, so that
``agentloop --help`` stays fast. The ``scripted:<file.json>`` model (see ``load_script``) is
always available, for tests and demos.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._config import LoadedConfig

__all__ = [
    "ACP",
    "COMMANDS",
    "CONFIG",
    "RUN",
    "SESSIONS",
    "CliCommand",
    "add_common_options",
    "build_parser",
    "load_settings",
    "main",
    "usage_errors",
]

EXIT_USAGE = 2
EXIT_SIGPIPE = 141  # 128 + SIGPIPE: the reader of standard output went away


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """The options every coding-agent command takes (model, approval, trust, plan, ...)."""
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


def usage_errors() -> tuple[type[BaseException], ...]:
    """The errors a command reports as one line and exit status 2 (bad usage or settings)."""
    from agentloop import MissingExtra, SessionNotFound, UnknownModel

    from ._config import ConfigError
    from ._scripted import ScriptError

    return (ConfigError, UnknownModel, SessionNotFound, ScriptError, MissingExtra, ValueError)


def load_settings(args: argparse.Namespace) -> LoadedConfig:
    """The effective configuration for the common options in ``args``; warnings go to stderr.

    Raises:
        ConfigError: a file or variable is invalid, or ``--trust`` names no tool.
    """
    import msgspec

    from ._config import ConfigError, load_config
    from ._toolbox import TOOL_NAMES

    overrides = {
        "model": args.model,
        "approval": args.approval,
        "plan": args.plan,
        "thinking": args.thinking,
        "max_turns": args.max_turns,
    }
    loaded = load_config(args.cwd, overrides=overrides, user_file=args.config)
    for warning in loaded.warnings:
        print(f"agentloop: warning: {warning}", file=sys.stderr)
    if not loaded.config.sandbox:
        where = loaded.sources.get("sandbox", "the configuration")
        print(
            f"agentloop: warning: the sandbox is off ({where}): the file tools can read and "
            "change any file you can",
            file=sys.stderr,
        )
    if args.trust:
        unknown = [name for name in args.trust if name not in TOOL_NAMES]
        if unknown:
            raise ConfigError(
                f"--trust {unknown[0]}: there is no such tool (the tools: "
                f"{', '.join(sorted(TOOL_NAMES))})"
            )
        trusted = [*loaded.config.trusted_tools, *args.trust]
        config = msgspec.structs.replace(loaded.config, trusted_tools=trusted)
        loaded = msgspec.structs.replace(loaded, config=config)
    return loaded


def build_parser(prog: str = "agentloop") -> argparse.ArgumentParser:
    """One parser for the coding agent's commands (``run``, ``acp``, ``config``,
    ``sessions``): what the documentation's command lines are checked against."""
    parser = argparse.ArgumentParser(prog=prog)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in (("run", RUN), ("acp", ACP), ("config", CONFIG), ("sessions", SESSIONS)):
        command.configure(commands.add_parser(name, help=command.help))
    return parser


def _configure_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", nargs="*", help="the prompt (default: standard input)")
    parser.add_argument("--json", action="store_true", help="write every event as a JSON line")
    parser.add_argument("-v", "--verbose", action="store_true", help="show thinking and results")
    session = parser.add_mutually_exclusive_group()
    session.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="continue the latest session of this workspace, or session ID; a value with "
        'spaces is the prompt (agentloop run --resume "now do it")',
    )
    session.add_argument("--session", metavar="ID", help="continue or start the session ID")
    session.add_argument("--no-session", action="store_true", help="do not record the session")
    add_common_options(parser)


class CliCommand:
    """A subcommand of ``agentloop``: its one-line help, its options and what it runs.

    Args:
        help: the line ``agentloop --help`` shows.
        configure: adds the command's options to its parser.
        run: runs the command with the parsed arguments; returns the exit status.
    """

    def __init__(
        self,
        help: str,  # noqa: A002
        configure: Callable[[argparse.ArgumentParser], None],
        run: Callable[[argparse.Namespace], int],
    ) -> None:
        self.help = help
        self.configure = configure
        self._run = run

    def main(self, argv: list[str], prog: str) -> int:
        """Parse ``argv`` and run; usage errors are one line on stderr and exit status 2."""
        parser = argparse.ArgumentParser(prog=prog, description=self.help)
        self.configure(parser)
        args = parser.parse_args(argv)
        try:
            try:
                return self._run(args)
            except usage_errors() as exc:
                print(f"agentloop: error: {exc}", file=sys.stderr)
                return EXIT_USAGE
            finally:
                sys.stdout.flush()
        except BrokenPipeError:
            _silence(sys.stdout)
            return EXIT_SIGPIPE
        except KeyboardInterrupt:
            return 130


def _silence(stream: Any) -> None:
    """The reader of ``stream`` left: point it at /dev/null so the exit flush is silent."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream.fileno())
    os.close(devnull)


def _backend(args: argparse.Namespace) -> str:
    return str(args.backend or "asyncio")


# ---------------------------------------------------------------- run


def _read_prompt(words: list[str]) -> str:
    from ._config import ConfigError

    words = [w for w in words if w != "-"]
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


def _log_to_stderr(verbose: bool) -> None:
    """Show the library's warnings (a server that does not answer yet, a retry, a tool that
    raised) on stderr, one line each, tracebacks only with ``-v``."""
    import logging

    class _Line(logging.Formatter):
        def formatException(self, ei: Any) -> str:  # noqa: N802 (logging's name)
            return super().formatException(ei) if verbose else ""

        def format(self, record: logging.LogRecord) -> str:
            return super().format(record).rstrip()

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Line("agentloop: %(message)s"))
    root = logging.getLogger("agentloop")
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    root.propagate = False


def _run(args: argparse.Namespace) -> int:
    import anyio

    from ._run import run_headless
    from ._scripted import register_scripted

    _log_to_stderr(args.verbose)
    register_scripted()
    loaded = load_settings(args)
    words = list(args.prompt)
    resume: str | None = args.resume
    if resume and any(c.isspace() for c in resume):
        # ``--resume "now do it"``: the documented form; the value is the prompt.
        words.insert(0, resume)
        resume = ""
    prompt = _read_prompt(words)
    root = os.path.realpath(args.cwd)
    code: int = anyio.run(
        run_headless,
        loaded.config,
        prompt,
        root,
        resume,
        args.session,
        not args.no_session,
        args.model,
        args.json,
        args.verbose,
        backend=_backend(args),
    )
    return code


RUN = CliCommand("run one prompt headless", _configure_run, _run)
"""``agentloop run``: one prompt, headless (``--json`` for event lines)."""


# ---------------------------------------------------------------- acp


def _acp(args: argparse.Namespace) -> int:
    from agentloop import MissingExtra

    MissingExtra.check("agentloop acp", "coding", "acp")
    from ._acp import serve_stdio
    from ._scripted import register_scripted

    register_scripted()
    loaded = load_settings(args)
    serve_stdio(loaded.config, workspace=args.cwd)
    return 0


ACP = CliCommand("serve the Agent Client Protocol on stdio (for editors)", add_common_options, _acp)
"""``agentloop acp``: the coding agent as an Agent Client Protocol server on stdio."""


# ---------------------------------------------------------------- config


def _show_config(args: argparse.Namespace) -> int:
    import msgspec

    loaded = load_settings(args)
    values = msgspec.to_builtins(loaded.config)
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict) and key == "bash":
            flat.update({f"bash.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    for path in loaded.looked_for:
        state = "read" if path in loaded.files else "not found"
        print(f"# {path}: {state}")
    for key, value in flat.items():
        source = loaded.sources.get(key, "default")
        print(f"{key} = {msgspec.json.encode(value).decode()}  # {source}")
    print(f"# sessions are kept in {loaded.config.sessions_path()}")
    return 0


CONFIG = CliCommand(
    "show the effective settings and the files they come from", add_common_options, _show_config
)
"""``agentloop config``: the effective settings and every file looked for."""


# ---------------------------------------------------------------- sessions


def _sessions(args: argparse.Namespace) -> int:
    import anyio

    from ._session import list_sessions

    loaded = load_settings(args)

    async def show() -> int:
        for info in await list_sessions(loaded.config):
            where = info.metadata.get("cwd", "")
            print(f"{info.id}  {info.message_count:>4} messages  {where}  {info.title}")
        return 0

    code: int = anyio.run(show, backend=_backend(args))
    return code


SESSIONS = CliCommand("list the stored sessions, newest first", add_common_options, _sessions)
"""``agentloop sessions``: the stored sessions, newest first."""


COMMANDS = {"run": RUN, "acp": ACP, "config": CONFIG, "sessions": SESSIONS}
"""The coding agent's subcommands of ``agentloop``, by name."""


def main(argv: list[str] | None = None) -> int:
    """``python -m agentloop_coding``: the coding agent's commands without the ``agentloop``
    command around them (the same commands, the same options)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or arguments[0] not in COMMANDS:
        print("usage: python -m agentloop_coding {run,acp,config,sessions} ...", file=sys.stderr)
        return EXIT_USAGE
    name = arguments[0]
    return COMMANDS[name].main(arguments[1:], f"agentloop {name}")
