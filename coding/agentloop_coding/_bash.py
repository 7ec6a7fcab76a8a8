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
"""

from __future__ import annotations

import fnmatch
import os
import shutil
from typing import TYPE_CHECKING, Any

from agentloop import AgentToolResult

from ._base import NOT_PATH, CodingTool
from ._process import run_process
from ._workspace import ToolInputError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from agentloop.abc import OnUpdate

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
    ) -> None:
        super().__init__(workspace)
        self.timeout = timeout
        self.max_timeout = max_timeout
        self.max_output = max_output
        self.env_allow = tuple(env_allow)
        self.env = dict(env or {})
        self.shell = shell
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
        installed, else ``/bin/sh``).
        """
        shell = self.shell or shutil.which("bash") or "/bin/sh"
        return [shell, "-c", command]

    async def run(self, arguments: dict[str, Any], on_update: OnUpdate) -> AgentToolResult:
        command: str = arguments["command"]
        if not command.strip():
            raise ToolInputError("the command is empty")
        cwd = self.workspace.resolve(arguments["cwd"]) if arguments.get("cwd") else None
        where = cwd or self.workspace.root
        if not where.is_dir():
            raise ToolInputError(f"{self.workspace.display(where)} is not a directory")
        timeout = min(float(arguments.get("timeout", self.timeout)), self.max_timeout)
        env = allowed_environment(self.env_allow, self.env)
        env["PWD"] = str(where)
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
