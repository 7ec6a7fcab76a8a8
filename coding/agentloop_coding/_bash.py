"""The ``bash`` tool: run a shell command in the workspace, in a process group of its own.

A command runs with ``bash -c`` (``sh`` where there is no bash), standard input closed, in the
workspace root or the call's ``cwd``, under a deadline (``timeout`` per call, capped by
``max_timeout``), with stdout and stderr combined and capped (see ``_process``). Output streams
to the application as ``ToolExecutionUpdate`` events while the command runs.

**No orphans.** The command leads a new process group; when it finishes, times out or is
cancelled (abort, steering), everything still running in the group — grandchildren and
background jobs included — is killed. A server started with ``&`` therefore does not outlive
the call.

**Environment allow-list.** The command sees only the variables named in ``env_allow``
(names, or globs such as ``LC_*``) plus ``env``: API keys and other secrets of the agent's
process are not passed on unless listed.

**Resource limits** (optional, ``limits``): CPU seconds, memory, process count and file size,
set with ``setrlimit`` in the command's process before it starts (``_rlimit``, which also says
what they cannot stop).

**In an editor's terminal.** When the workspace's editor offers terminals (ACP), the command
runs there instead, shown live in the tool call, under the same deadline, output cap,
environment allow-list and limits; a cancelled call kills and releases the terminal.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import AgentToolResult

from ._base import NOT_PATH, CodingTool
from ._errors import ToolInputError, describe_os_error
from ._process import run_process

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from agentloop.abc import OnUpdate

    from ._config import ResourceLimits
    from ._workspace import Workspace

__all__ = ["DEFAULT_ENV_ALLOW", "Bash"]

DEFAULT_ENV_ALLOW: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TMPDIR",
    "TZ",
)
"""Variables a command sees by default (names or globs); everything else is withheld."""

_RLIMIT = str(Path(__file__).with_name("_rlimit.py"))


def allowed_environment(
    allow: Iterable[str], extra: Mapping[str, str], source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables of ``source`` (default: ``os.environ``) matching ``allow``, plus ``extra``."""
    patterns = list(allow)
    environ = os.environ if source is None else source
    env = {
        name: value
        for name, value in environ.items()
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
    }
    env.update(extra)
    return env


class Bash(CodingTool):
    """Run a shell command; see the module docs."""

    name = "bash"
    label = "Run"
    kind = "execute"
    read_only = False
    requires_approval = True
    description = (
        "Run a shell command (bash -c) in the workspace and return its combined output and "
        "exit code. Standard input is closed: use non-interactive flags. Anything the command "
        "leaves running in the background is stopped when it ends."
    )

    def __init__(
        self,
        workspace: Workspace,
        *,
        timeout: float = 120.0,
        max_timeout: float = 600.0,
        max_output: int = 30_000,
        env_allow: Iterable[str] = DEFAULT_ENV_ALLOW,
        env: Mapping[str, str] | None = None,
        shell: str | None = None,
        limits: ResourceLimits | None = None,
    ) -> None:
        super().__init__(workspace)
        self.timeout = timeout
        self.max_timeout = max_timeout
        self.max_output = max_output
        self.env_allow = tuple(env_allow)
        self.env = dict(env or {})
        self.shell = shell
        self.limits = limits
        self.parameters = {
            "type": "object",
            "properties": {
                "command": {**NOT_PATH, "description": "The command line to run."},
                "cwd": {
                    "type": "string",
                    "description": "Directory to run in (default: the workspace root).",
                },
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": max_timeout,
                    "description": f"Seconds before the command is killed (default {timeout:g}).",
                },
            },
            "required": ["command"],
            "additionalProperties": False,
        }

    def title(self, arguments: Any) -> str:
        command = arguments.get("command", "") if isinstance(arguments, dict) else ""
        first = str(command).strip().splitlines()[0] if str(command).strip() else ""
        return f"Run {first[:80]}"

    def argv(self, command: str) -> list[str]:
        """The program and arguments that run ``command``: ``shell -c command`` (bash when
        installed, else ``/bin/sh``), started by the limits' launcher when there are limits.
        """
        shell = self.shell or shutil.which("bash") or "/bin/sh"
        argv = [shell, "-c", command]
        if self.limits:
            limits = msgspec.json.encode(self.limits).decode()
            argv = [sys.executable, "-E", "-s", _RLIMIT, limits, "--", *argv]
        return argv

    def _directory(self, arguments: dict[str, Any]) -> Path:
        """The call's working directory (a real path beneath the workspace's roots)."""
        if not arguments.get("cwd"):
            return self.workspace.root
        path = self.workspace.resolve(arguments["cwd"])
        shown = self.workspace.display(path)
        try:
            fd, real = self.workspace.beneath.open_dir(path, shown)
        except OSError as exc:
            raise ToolInputError(describe_os_error(exc, shown)) from None
        os.close(fd)
        return real

    async def run(self, arguments: dict[str, Any], on_update: OnUpdate) -> AgentToolResult:
        command: str = arguments["command"]
        if not command.strip():
            raise ToolInputError("the command is empty")
        where = await self.in_thread(self._directory, arguments)
        timeout = min(float(arguments.get("timeout", self.timeout)), self.max_timeout)
        env = allowed_environment(self.env_allow, self.env)
        env["PWD"] = str(where)
        editor = self.workspace.editor
        if editor is not None and editor.can_run:
            outcome = await editor.run(
                self.argv(command),
                cwd=where,
                env=env,
                time_limit=timeout,
                max_output=self.max_output,
                on_terminal=on_update,
            )
        else:
            outcome = await run_process(
                self.argv(command),
                cwd=where,
                env=env,
                time_limit=timeout,
                max_output=self.max_output,
                on_output=on_update,
            )
        output = outcome.output.rstrip("\n") or "(no output)"
        if outcome.timed_out:
            status = (
                f"[timed out after {timeout:g} s; the command and everything it started "
                "were killed]"
            )
        else:
            status = f"[exit code {outcome.exit_code}]"
        details = {
            "command": command,
            "cwd": self.workspace.display(where),
            "exit_code": outcome.exit_code,
            "timed_out": outcome.timed_out,
            "omitted_bytes": outcome.omitted_bytes,
            "pid": outcome.pid,
        }
        failed = outcome.timed_out or outcome.exit_code != 0
        return AgentToolResult.text(f"{output}\n{status}", details=details, is_error=failed)
