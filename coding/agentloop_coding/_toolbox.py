"""The set of built-in tools, made for one workspace."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._bash import Bash
from ._config import BashSettings
from ._edit import EditFile, WriteFile
from ._read import ListDir, ReadFile
from ._search import Glob, Grep
from ._workspace import Workspace

if TYPE_CHECKING:
    import os
    from typing import Literal

    from agentloop_policies import Sandbox

    from ._base import CodingTool

__all__ = ["TOOL_NAMES", "coding_tools"]

TOOL_NAMES = frozenset(
    {"read_file", "list_dir", "glob", "grep", "write_file", "edit_file", "bash"}
)  # the built-in tools' names, for checking settings that name them (``--trust``)


def coding_tools(
    workspace: Workspace | str | os.PathLike[str],
    *,
    sandbox: Sandbox | None = None,
    confine: bool = True,
    bash: BashSettings | None = None,
    grep: Literal["auto", "rg", "python"] = "auto",
    shell: bool = True,
) -> list[CodingTool]:
    """The built-in tools working in ``workspace``: read_file, list_dir, glob, grep (read-only)
    and write_file, edit_file, bash.

    The file tools are confined to the workspace (or to the roots of ``sandbox``): a path
    outside is an error result, and a symbolic link cannot lead outside (see ``Workspace``).
    ``confine=False`` lets them use any path the process can; it warns.

    Args:
        workspace: a ``Workspace``, or its root directory.
        sandbox: with a directory for ``workspace``, the sandbox whose roots the tools are
            confined to (default: the directory alone).
        confine: ``False`` lifts the confinement of a directory given as ``workspace``.
        bash: how ``bash`` runs commands.
        grep: ``grep``'s search program: ``"auto"`` (ripgrep when installed), ``"rg"``,
            ``"python"``.
        shell: include ``bash``.

    Raises:
        ValueError: the workspace root is not a directory.
    """
    if not isinstance(workspace, Workspace):
        workspace = Workspace(workspace, sandbox=sandbox, confined=confine)
    settings = bash or BashSettings()
    tools: list[CodingTool] = [
        ReadFile(workspace),
        ListDir(workspace),
        Glob(workspace),
        Grep(workspace, backend=grep),
        WriteFile(workspace),
        EditFile(workspace),
    ]
    if shell:
        tools.append(
            Bash(
                workspace,
                timeout=settings.timeout,
                max_timeout=settings.max_timeout,
                max_output=settings.max_output,
                env_allow=settings.env_allow,
                env=settings.env,
                limits=settings.limits,
            )
        )
    return tools
