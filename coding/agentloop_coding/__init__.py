"""agentloop_coding: the coding agent built on agentloop — file and shell tools, configuration,
plan mode, approval modes, the ``agentloop`` command and an ACP server for editors.

==========================  =========================================================
name                        what it is
==========================  =========================================================
``coding_tools``            the built-in tools for one workspace (read_file, list_dir,
                            glob, grep, write_file, edit_file, bash)
``Workspace``               the root the tools work in, and the sandbox guarding it
``CodingSession``           one conversation: agent, tools, plan mode, approval modes
                            with session trust, the session store; shared by the
                            command, the ACP server and the terminal UI
``Config``, ``load_config`` settings from defaults, TOML files, environment, flags
``ApiKeys``                 API keys from the environment or the system keyring
``system_prompt``           the default coding system prompt, assembled
``TextRenderer``            a run's events as plain text for a terminal, as data
==========================  =========================================================

The ``agentloop`` command (``agentloop run``, ``agentloop acp``, ``agentloop config``) lives in
``agentloop_coding._cli``; the ACP server needs the ``[coding]`` extra
(``agent-client-protocol``). This package imports ``agentloop``, ``agentloop_providers`` and
``agentloop_policies``, nothing else of this project.
"""

from ._base import NOT_PATH as NOT_PATH, CodingTool as CodingTool, ToolKind as ToolKind
from ._bash import DEFAULT_ENV_ALLOW as DEFAULT_ENV_ALLOW, Bash as Bash
from ._config import (
    ENVIRONMENT as ENVIRONMENT,
    USER_ONLY as USER_ONLY,
    BashSettings as BashSettings,
    Config as Config,
    ConfigError as ConfigError,
    LoadedConfig as LoadedConfig,
    load_config as load_config,
    project_config_path as project_config_path,
    user_config_path as user_config_path,
)
from ._edit import EditFile as EditFile, WriteFile as WriteFile, unified_diff as unified_diff
from ._keys import ApiKeys as ApiKeys, default_model as default_model
from ._process import ProcessOutcome as ProcessOutcome, run_process as run_process
from ._prompt import DEFAULT_SYSTEM_PROMPT as DEFAULT_SYSTEM_PROMPT, system_prompt as system_prompt
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
from ._workspace import ToolInputError as ToolInputError, Workspace as Workspace

__all__ = [
    "DEFAULT_ENV_ALLOW",
    "DEFAULT_SYSTEM_PROMPT",
    "ENVIRONMENT",
    "NOT_PATH",
    "NO_APPROVER",
    "USER_ONLY",
    "ApiKeys",
    "Bash",
    "BashSettings",
    "CodingSession",
    "CodingTool",
    "Config",
    "ConfigError",
    "EditFile",
    "Glob",
    "Grep",
    "ListDir",
    "LoadedConfig",
    "Mode",
    "ProcessOutcome",
    "ReadFile",
    "ScriptError",
    "TextRenderer",
    "ToolInputError",
    "ToolKind",
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
