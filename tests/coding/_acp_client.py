"""An editor for the ACP tests, on the ``agent-client-protocol`` package's client side: it
records what the agent sends, answers permission requests and elicitations as told, and
(when it says so in ``initialize``) serves file access from its own buffers and runs
commands in terminals of its own."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from typing import TYPE_CHECKING, Any, cast

import acp
import anyio
import anyio.abc
from acp import spawn_agent_process
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeclineElicitationResponse,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationUrlCapabilities,
    FileSystemCapabilities,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from anyio import wait_all_tasks_blocked

from ._cli_helpers import AGENTLOOP

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from ._cli_helpers import Cli

__all__ = ["Editor", "Settled", "Terminal", "connect", "final_text", "script", "tool_updates"]


def tool_updates(updates: list[Any], call_id: str) -> list[Any]:
    return [u for u in updates if getattr(u, "tool_call_id", None) == call_id]


def final_text(update: Any) -> str:
    return "".join(
        c.content.text for c in update.content or [] if getattr(c, "type", "") == "content"
    )


class Terminal:
    """A command the editor runs for the agent."""

    def __init__(self, process: anyio.abc.Process, argv: list[str], cwd: str, env: dict[str, str]):
        self.process = process
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.output = b""
        self.exited = anyio.Event()
        self.killed = False
        self.released = False

    async def read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
            async for chunk in stream:
                self.output += chunk
        await self.process.wait()
        self.exited.set()

    def status(self) -> TerminalExitStatus | None:
        code = self.process.returncode
        if code is None:
            return None
        if code < 0:
            return TerminalExitStatus(signal=signal.Signals(-code).name)
        return TerminalExitStatus(exit_code=code)


class Editor:
    """The client: what it was sent, and how it answers (see the module docs).

    Args:
        tg: where its terminals' readers run.
        fs: offer ``fs/read_text_file`` and ``fs/write_text_file``, from ``buffers``.
        terminal: offer terminals.
        elicitation: offer form elicitation.
    """

    def __init__(
        self,
        tg: anyio.abc.TaskGroup,
        *,
        fs: bool = False,
        terminal: bool = False,
        elicitation: bool = False,
        url_elicitation: bool = False,
    ) -> None:
        self.tg = tg
        self.fs, self.terminal, self.elicitation = fs, terminal, elicitation
        self.url_elicitation = url_elicitation
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.answer: Callable[[Any], str] = lambda call: "allow"
        self.buffers: dict[str, str] = {}  # open files, possibly unsaved
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.terminals: dict[str, Terminal] = {}
        self.elicitations: list[tuple[str, Any]] = []
        self.form_answer: dict[str, Any] | None = {"colour": "red"}
        self.seen = anyio.Event()
        self.watch: Callable[[Any], bool] | None = None  # sets ``seen`` when it says so

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=self.fs, write_text_file=self.fs),
            terminal=self.terminal,
            elicitation=ElicitationCapabilities(
                form=ElicitationFormCapabilities() if self.elicitation else None,
                url=ElicitationUrlCapabilities() if self.url_elicitation else None,
            )
            if self.elicitation or self.url_elicitation
            else None,
        )

    def take(self) -> list[Any]:
        taken, self.updates = self.updates, []
        return taken

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        if self.watch is not None and self.watch(update):
            self.seen.set()

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append(tool_call)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=self.answer(tool_call), outcome="selected")
        )

    # ---------------------------------------------------------------- fs

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path not in self.buffers:
            try:
                with open(path) as file:  # noqa: ASYNC230 - a test's small file
                    self.buffers[path] = file.read()
            except OSError as exc:
                raise acp.RequestError.resource_not_found(path) from exc
        lines = self.buffers[path].splitlines(keepends=True)
        start = (line or 1) - 1
        chosen = lines[start : start + limit] if limit is not None else lines[start:]
        return ReadTextFileResponse(content="".join(chosen))

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content  # the editor's buffer; saving is the user's business
        return WriteTextFileResponse()

    # ---------------------------------------------------------------- terminals

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        variables = {v.name: v.value for v in env or []}
        argv = [command, *(args or [])]
        process = await anyio.open_process(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env={**os.environ, **variables},
            start_new_session=True,
        )
        terminal_id = f"term-{len(self.terminals) + 1}"
        terminal = self.terminals[terminal_id] = Terminal(process, argv, cwd or "", variables)
        self.tg.start_soon(terminal.read)
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        return TerminalOutputResponse(
            output=terminal.output.decode(errors="replace"),
            truncated=False,
            exit_status=terminal.status(),
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        await terminal.exited.wait()
        status = terminal.status()
        assert status is not None
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        terminal = self.terminals[terminal_id]
        terminal.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(terminal.process.pid, signal.SIGKILL)
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        terminal = self.terminals[terminal_id]
        terminal.released = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(terminal.process.pid, signal.SIGKILL)
        return ReleaseTerminalResponse()

    # ---------------------------------------------------------------- elicitation

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.elicitations.append((message, mode))
        if self.form_answer is None:
            return DeclineElicitationResponse(action="decline")
        return AcceptElicitationResponse(action="accept", content=self.form_answer)


class Settled:
    """A client connection whose requests return once the client has handled every
    notification that came before their answer.

    The protocol package hands a client its notifications in tasks of their own (in some
    versions through a queue first), so an answer can be seen before the updates the agent
    sent ahead of it; the agent's order is the protocol's, the lag is the package's.
    """

    _SETTLING = frozenset(
        {"prompt", "new_session", "load_session", "set_config_option", "set_session_mode"}
    )

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._conn, name)
        if name not in self._SETTLING:
            return method

        async def settled(*args: Any, **kwargs: Any) -> Any:
            try:
                return await method(*args, **kwargs)
            finally:
                await wait_all_tasks_blocked()

        return settled


@contextlib.asynccontextmanager
async def connect(
    cli: Cli, editor: Editor, *, model: str, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[Any, Any, Any]]:
    """``agentloop acp`` in ``cli``'s workspace with ``model``, initialized by ``editor``;
    yields the connection, the process and the ``initialize`` answer."""
    environment = {**cli.env, "AGENTLOOP_MODEL": model, **(env or {})}
    async with spawn_agent_process(
        lambda _: cast("acp.Client", editor),
        AGENTLOOP,
        "acp",
        env=environment,
        cwd=str(cli.workspace),
        use_unstable_protocol=True,
    ) as (conn, process):
        init = await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities())
        yield Settled(conn), process, init


def script(cli: Cli, replies: list[dict[str, Any]], name: str = "model.json") -> str:
    """A scripted model's file in ``cli``'s home; its model string."""
    path: Path = cli.home / name
    path.write_text(json.dumps({"replies": replies}))
    return f"scripted:{path}"
