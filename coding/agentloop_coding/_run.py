"""``agentloop run``: one prompt, headless, the answer streamed to standard output.

Exit codes (``EXIT_CODES``): 0 the run completed; 1 it failed (a model or tool loop error);
2 bad usage or configuration; 3 a policy stopped it (the turn limit, say); 130 or 143
interrupted by ``SIGINT`` or ``SIGTERM`` — the run is aborted first, so every command it
started is killed and the session keeps a well-paired history.

With ``--json`` every event goes to standard output as one JSON line (``agentloop.encode``;
read back with ``agentloop.decode(line, agentloop.AgentEvent)``) and nothing else does.

Approval: calls that need it (see ``CodingSession``) are asked about on the terminal when
standard input and standard error are both terminals; otherwise they are refused with a reason
the model reads, unless the mode is ``bypassed`` or the tool is trusted (``--trust bash``).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING, Any, TextIO

import anyio

import agentloop
from agentloop import SessionNotFound, StopReason
from agentloop.secrets import redact, redact_bytes
from agentloop_policies import ALWAYS_ALLOW

from ._config import ConfigError
from ._render import TextRenderer
from ._session import CodingSession, list_sessions, open_store
from ._waiting import WaitingNotice

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentloop import AgentTool, ToolCall
    from agentloop_policies import ApprovalAnswer

    from ._config import Config

__all__ = ["EXIT_CODES", "exit_code", "run_headless", "run_prompt", "terminal_ask"]

EXIT_CODES = {
    "completed": 0,
    "failed": 1,
    "usage": 2,
    "stopped": 3,
    "SIGINT": 128 + signal.SIGINT,
    "SIGTERM": 128 + signal.SIGTERM,
}


def exit_code(result: agentloop.AgentResult[Any], interrupted: int | None) -> int:
    """The exit status of a run that ended with ``result``."""
    if interrupted is not None:
        return 128 + interrupted
    if result.stop_reason is StopReason.ERROR or result.stop_reason is StopReason.ABORTED:
        return EXIT_CODES["failed"]
    if result.stopped_by:
        return EXIT_CODES["stopped"]
    return EXIT_CODES["completed"]


def terminal_ask(session: CodingSession, stdin: TextIO, stderr: TextIO) -> Any:
    """An ``ask`` that asks on the terminal: yes, no, or always (for this session).

    The answer is awaited with ``anyio.wait_readable`` rather than read in a thread, so an
    abort while the question is open ends the wait at once and leaves no thread blocked on
    the terminal.
    """

    async def ask(call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        found = session.tool(call.name)
        title = found.title(call.arguments) if found is not None else call.name
        stderr.write(f"Allow {title}? [y]es / [n]o / [a]lways for {call.name}: ")
        stderr.flush()
        fd = stdin.fileno()
        await anyio.wait_readable(fd)
        # A terminal in canonical mode is readable once a whole line was typed.
        answer = os.read(fd, 4096).decode(errors="replace").strip().lower()
        if answer in ("a", "always"):
            return ALWAYS_ALLOW
        return answer in ("y", "yes")

    return ask


class _Writer:
    """Writes to the terminal or a pipe; ``closed`` once the reader of standard output left."""

    def __init__(self, stdout: TextIO, stderr: TextIO) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.closed = False

    def write(self, pieces: Sequence[tuple[str, str]]) -> None:
        try:
            for where, text in pieces:
                stream = self.stdout if where == "out" else self.stderr
                stream.write(redact(text))  # no key the process knows reaches the terminal
            if pieces:
                self.stdout.flush()
                self.stderr.flush()
        except BrokenPipeError:
            self.closed = True

    def json(self, event: agentloop.AgentEvent) -> None:
        try:
            self.stdout.buffer.write(redact_bytes(agentloop.encode(event)) + b"\n")
            self.stdout.buffer.flush()
        except BrokenPipeError:
            self.closed = True


async def _watch_signals(session: CodingSession, interrupted: list[int]) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if not interrupted:
                interrupted.append(int(signum))
            session.agent.abort()


async def run_prompt(
    session: CodingSession,
    prompt: str,
    *,
    json_lines: bool = False,
    verbose: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    handle_signals: bool = True,
) -> int:
    """Run ``prompt`` in ``session``, writing as the module docs say; returns the exit code."""
    writer = _Writer(stdout or sys.stdout, stderr or sys.stderr)

    def title(name: str, arguments: Any) -> str:
        tool = session.tool(name)
        return tool.title(arguments) if tool is not None else name

    renderer = TextRenderer(title, verbose=verbose)
    interrupted: list[int] = []
    stream_fn = session.agent.stream_fn
    where = getattr(stream_fn, "base_url", None) or session.model
    waiting = WaitingNotice(where, lambda line: writer.write([("err", f"agentloop: {line}\n")]))
    try:
        async with anyio.create_task_group() as tg:
            if handle_signals:
                tg.start_soon(_watch_signals, session, interrupted)
            tg.start_soon(waiting.run)
            async with session.agent.stream(prompt) as events:
                async for event in events:
                    waiting.feed(event)
                    if json_lines:
                        writer.json(event)
                    else:
                        writer.write(renderer.feed(event))
                    if writer.closed:
                        break  # nobody reads the answer any more: leaving ends the run
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # The task group is ours, an internal detail: a failure comes out as itself.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    if writer.closed:
        return EXIT_CODES["failed"]
    result = events.result
    if not json_lines:
        writer.write(renderer.finish())
        if result.error and result.error not in renderer.errors:
            writer.write([("err", f"error: {result.error}\n")])
        if result.stopped_by:
            writer.write([("err", f"stopped: {result.stopped_by}\n")])
        if result.stop_reason is StopReason.ABORTED:
            writer.write([("err", "aborted\n")])
    return exit_code(result, interrupted[0] if interrupted else None)


async def _latest_here(config: Config, root: str) -> str:
    for info in await list_sessions(config, workspace=root):
        return info.id
    raise ConfigError(f"no stored session for {root} to resume (agentloop sessions lists them)")


async def run_headless(
    config: Config,
    prompt: str,
    root: str,
    resume: str | None,
    session_name: str | None,
    record: bool,
    model: str | None,
    json_lines: bool,
    verbose: bool,
) -> int:
    """``agentloop run``: start or continue a session in ``root`` and run ``prompt`` in it.

    ``resume`` is ``None`` (a new session), ``""`` (the latest session of ``root``) or a
    session's id; ``session_name`` continues that session if it exists, else starts it.

    Raises:
        ConfigError: nothing to resume here.
        SessionNotFound: ``resume`` names no stored session.
    """
    resume_id: str | None = None
    session_id: str | None = None
    if resume is not None:
        resume_id = resume or await _latest_here(config, root)
    elif session_name:
        try:
            await open_store(config).info(session_name)
            resume_id = session_name
        except SessionNotFound:
            session_id = session_name
    try:
        session = await CodingSession.start(
            config,
            workspace=root,
            resume=resume_id,
            session_id=session_id,
            record=record,
            model=model,  # a flag wins over the resumed session's own model
        )
    except SessionNotFound:
        raise SessionNotFound(
            f"no stored session {resume_id!r} (agentloop sessions lists them; to send a "
            f"one-word prompt to the latest session: agentloop run --resume -- {resume_id})"
        ) from None
    if sys.stdin.isatty() and sys.stderr.isatty():
        session.ask = terminal_ask(session, sys.stdin, sys.stderr)
    try:
        code = await run_prompt(session, prompt, json_lines=json_lines, verbose=verbose)
    finally:
        await session.aclose()
    if session.recorded:
        print(f"session: {session.session_id}", file=sys.stderr)
    return code
