"""The editor's file system and terminals, for the tools, over ACP.

When the client says in ``initialize`` that it offers ``fs.readTextFile``,
``fs.writeTextFile`` or ``terminal``, each ACP session's workspace gets a ``ClientEditor``
(``Workspace.editor``): ``read_file`` and ``edit_file`` read through ``fs/read_text_file``
(so an unsaved buffer is what the model sees), ``write_file`` and ``edit_file`` write through
``fs/write_text_file``, and ``bash`` runs its command in a terminal of the editor:

1. ``terminal/create`` (the command, its arguments, working directory, the allow-listed
   environment, the output cap), and the terminal embedded in the tool call at once, so the
   editor shows the output live;
2. ``terminal/wait_for_exit`` under the call's deadline; past it, ``terminal/kill``;
3. ``terminal/output`` for what the model reads;
4. ``terminal/release``, always: a cancelled call (abort, steering, a tool timeout) kills and
   releases its terminal before it ends (shielded, bounded).

What the client does not offer stays local. The confinement is checked here before the
editor is asked: a path is walked beneath the workspace's roots (links followed only while
they stay inside) and the editor is given the real path; what the editor then does with it
is the editor's (it follows its own links). Errors the client answers with become error
results the model reads.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any

import anyio
from acp import RequestError
from acp.schema import EnvVariable

from agentloop import AgentToolResult

from ._errors import ToolInputError
from ._process import ProcessOutcome

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

__all__ = ["ClientEditor", "TERMINAL_KEY"]

TERMINAL_KEY = "terminal_id"
"""The key of a ``bash`` update's ``details`` that names the editor's terminal running it."""

_RELEASE_TIMEOUT = 5.0


def _failure(exc: BaseException, what: str) -> ToolInputError:
    if isinstance(exc, RequestError):
        detail = exc.data.get("details") if isinstance(exc.data, dict) else exc.data
        return ToolInputError(f"the editor could not {what}: {detail or exc}")
    return ToolInputError(f"the editor could not {what}: the connection to it was lost")


def _exit_code(status: Any) -> int | None:
    if status is None:
        return None
    if status.exit_code is not None:
        return int(status.exit_code)
    name = str(status.signal or "")
    try:
        return -int(signal.Signals[name if name.startswith("SIG") else f"SIG{name}"])
    except KeyError:
        return -1


class ClientEditor:
    """An ``Editor`` (see ``Workspace``) on one ACP session of a client connection.

    Args:
        conn: the agent side's connection to the client.
        session_id: the ACP session.
        can_read: the client offers ``fs/read_text_file``.
        can_write: the client offers ``fs/write_text_file``.
        can_run: the client offers the ``terminal/*`` methods.
    """

    def __init__(
        self, conn: Any, session_id: str, *, can_read: bool, can_write: bool, can_run: bool
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.can_read = can_read
        self.can_write = can_write
        self.can_run = can_run

    async def read_text(
        self, path: Path, *, line: int | None = None, limit: int | None = None
    ) -> str:
        """The editor's text of ``path`` (its buffer when open), or ``limit`` lines from
        ``line``.

        Raises:
            ToolInputError: the editor refused or the connection is gone.
        """
        try:
            response = await self.conn.read_text_file(
                session_id=self.session_id, path=str(path), line=line, limit=limit
            )
        except (RequestError, ConnectionError) as exc:
            raise _failure(exc, f"read {path}") from None
        return str(response.content)

    async def write_text(self, path: Path, text: str) -> None:
        """Have the editor write ``text`` to ``path``.

        Raises:
            ToolInputError: the editor refused or the connection is gone.
        """
        try:
            await self.conn.write_text_file(
                session_id=self.session_id, path=str(path), content=text
            )
        except (RequestError, ConnectionError) as exc:
            raise _failure(exc, f"write {path}") from None

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        time_limit: float,
        max_output: int,
        on_terminal: Any,
    ) -> ProcessOutcome:
        """Run ``argv`` in a terminal of the editor (module docs).

        Raises:
            ToolInputError: the editor refused to start it, or the connection is gone.
        """
        conn, sid = self.conn, self.session_id
        try:
            created = await conn.create_terminal(
                session_id=sid,
                command=argv[0],
                args=list(argv[1:]),
                cwd=str(cwd),
                env=[EnvVariable(name=k, value=v) for k, v in env.items()],
                output_byte_limit=max_output,
            )
        except (RequestError, ConnectionError) as exc:
            raise _failure(exc, "start a terminal") from None
        terminal = created.terminal_id
        settled = False  # the command ended, or was killed
        try:
            on_terminal(AgentToolResult(content=[], details={TERMINAL_KEY: terminal}))
            with anyio.move_on_after(time_limit) as deadline:
                await conn.wait_for_terminal_exit(session_id=sid, terminal_id=terminal)
                settled = True
            if not settled:
                await conn.kill_terminal(session_id=sid, terminal_id=terminal)
            settled = True
            output = await conn.terminal_output(session_id=sid, terminal_id=terminal)
        except (RequestError, ConnectionError) as exc:
            raise _failure(exc, "run the command") from None
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_RELEASE_TIMEOUT):
                try:
                    if not settled:  # cancelled: the command must not outlive its call
                        await conn.kill_terminal(session_id=sid, terminal_id=terminal)
                    await conn.release_terminal(session_id=sid, terminal_id=terminal)
                except (RequestError, ConnectionError):
                    pass  # the client is gone, and its terminals with it
        text = str(output.output)
        if output.truncated:
            text = f"[... the start of the output was cut by the editor ...]\n{text}"
        timed_out = deadline.cancelled_caught
        return ProcessOutcome(
            output=text,
            exit_code=None if timed_out else _exit_code(output.exit_status),
            timed_out=timed_out,
            omitted_bytes=0,
            pid=0,
        )
