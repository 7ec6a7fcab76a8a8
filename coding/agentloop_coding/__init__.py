"""agentloop_coding: the coding agent built on agentloop — file and shell tools, configuration,
plan mode, approval modes, the ``agentloop`` command and an ACP server for editors.

==========================  =========================================================
name                        what it is
==========================  =========================================================
``coding_tools``            the built-in tools for one workspace (read_file, list_dir,
                            glob, grep, write_file, edit_file, bash)
``Workspace``               the root the tools work in, confined to it by default, and
                            the editor (ACP) they may work through
``CodingSession``           one conversation: agent, tools, plan mode, approval modes
                            with session trust, the session store; shared by the
                            command, the ACP server and the terminal UI
``Config``, ``load_config`` settings from defaults, TOML files, environment, flags
``ApiKeys``                 API keys from the environment or the system keyring
``system_prompt``           the default coding system prompt, assembled
``TextRenderer``            a run's events as plain text for a terminal, as data
==========================  =========================================================

The ``agentloop`` command (``agentloop run``, ``agentloop acp``, ``agentloop config``) lives in
``agentloop_coding.cli``; the ACP server needs the ``[coding]`` extra
(``agent-client-protocol``, and ``mcp`` for the editor's MCP servers). This package imports
``agentloop``, ``agentloop_providers``, ``agentloop_policies`` and (for ACP's MCP servers)
``agentloop_mcp``, nothing else of this project.
"""

from __future__ import annotations

import importlib
from importlib.util import find_spec as _find_spec
from typing import TYPE_CHECKING, Any


# Checked without importing anything heavy, so that ``import agentloop_coding.cli`` (the
# ``agentloop`` command listing its subcommands) stays fast.
def _installed(module: str) -> bool:
    try:
        return _find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install, or a finder that refuses it
        return False


for _module in ("httpx",):
    if not _installed(_module):
        from agentloop import MissingExtra

        raise MissingExtra("agentloop_coding", "coding", missing=_module)

if TYPE_CHECKING:
    from ._base import NOT_PATH as NOT_PATH, CodingTool as CodingTool, ToolKind as ToolKind
    from ._bash import DEFAULT_ENV_ALLOW as DEFAULT_ENV_ALLOW, Bash as Bash
    from ._config import (
        ENVIRONMENT as ENVIRONMENT,
        USER_ONLY as USER_ONLY,
        BashSettings as BashSettings,
        Config as Config,
        ConfigError as ConfigError,
        LoadedConfig as LoadedConfig,
        ResourceLimits as ResourceLimits,
        load_config as load_config,
        project_config_path as project_config_path,
        user_config_path as user_config_path,
    )
    from ._edit import EditFile as EditFile, WriteFile as WriteFile, unified_diff as unified_diff
    from ._errors import ToolInputError as ToolInputError
    from ._keys import (
        PREFERRED_PROVIDERS as PREFERRED_PROVIDERS,
        ApiKeys as ApiKeys,
        default_model as default_model,
    )
    from ._process import ProcessOutcome as ProcessOutcome, run_process as run_process
    from ._prompt import (
        DEFAULT_SYSTEM_PROMPT as DEFAULT_SYSTEM_PROMPT,
        system_prompt as system_prompt,
    )
    from ._read import ListDir as ListDir, ReadFile as ReadFile
    from ._render import TextRenderer as TextRenderer
    from ._scripted import (
        ScriptError as ScriptError,
        load_script as load_script,
        register_scripted as register_scripted,
    )
    from ._search import Glob as Glob, Grep as Grep
    from ._session import (
        NO_APPROVER as NO_APPROVER,
        CodingSession as CodingSession,
        Mode as Mode,
        list_sessions as list_sessions,
        open_store as open_store,
    )
    from ._toolbox import coding_tools as coding_tools
    from ._trust import CommandTrust as CommandTrust
    from ._waiting import WaitingNotice as WaitingNotice
    from ._workspace import Editor as Editor, Workspace as Workspace

__all__ = [
    "DEFAULT_ENV_ALLOW",
    "DEFAULT_SYSTEM_PROMPT",
    "ENVIRONMENT",
    "NOT_PATH",
    "NO_APPROVER",
    "PREFERRED_PROVIDERS",
    "USER_ONLY",
    "ApiKeys",
    "Bash",
    "BashSettings",
    "CodingSession",
    "CodingTool",
    "CommandTrust",
    "Config",
    "ConfigError",
    "EditFile",
    "Editor",
    "Glob",
    "Grep",
    "ListDir",
    "LoadedConfig",
    "Mode",
    "ProcessOutcome",
    "ReadFile",
    "ResourceLimits",
    "ScriptError",
    "TextRenderer",
    "ToolInputError",
    "ToolKind",
    "WaitingNotice",
    "Workspace",
    "WriteFile",
    "coding_tools",
    "default_model",
    "list_sessions",
    "load_config",
    "load_script",
    "open_store",
    "project_config_path",
    "register_scripted",
    "run_process",
    "system_prompt",
    "unified_diff",
    "user_config_path",
]

_WHERE: dict[str, str] = {
    "NOT_PATH": "._base",
    "CodingTool": "._base",
    "ToolKind": "._base",
    "DEFAULT_ENV_ALLOW": "._bash",
    "Bash": "._bash",
    "ENVIRONMENT": "._config",
    "USER_ONLY": "._config",
    "BashSettings": "._config",
    "Config": "._config",
    "ConfigError": "._config",
    "LoadedConfig": "._config",
    "ResourceLimits": "._config",
    "load_config": "._config",
    "project_config_path": "._config",
    "user_config_path": "._config",
    "EditFile": "._edit",
    "WriteFile": "._edit",
    "unified_diff": "._edit",
    "ApiKeys": "._keys",
    "PREFERRED_PROVIDERS": "._keys",
    "default_model": "._keys",
    "ProcessOutcome": "._process",
    "run_process": "._process",
    "DEFAULT_SYSTEM_PROMPT": "._prompt",
    "system_prompt": "._prompt",
    "ListDir": "._read",
    "ReadFile": "._read",
    "TextRenderer": "._render",
    "ScriptError": "._scripted",
    "load_script": "._scripted",
    "register_scripted": "._scripted",
    "Glob": "._search",
    "Grep": "._search",
    "NO_APPROVER": "._session",
    "CodingSession": "._session",
    "Mode": "._session",
    "list_sessions": "._session",
    "open_store": "._session",
    "coding_tools": "._toolbox",
    "CommandTrust": "._trust",
    "ToolInputError": "._errors",
    "WaitingNotice": "._waiting",
    "Editor": "._workspace",
    "Workspace": "._workspace",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
