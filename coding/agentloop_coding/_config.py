"""Configuration: built-in defaults, TOML files, environment variables and flags, in that order.

Each later source wins over the earlier ones, key by key:

1. built-in defaults (the ``Config`` fields);
2. the user file: ``$AGENTLOOP_CONFIG``, else ``$XDG_CONFIG_HOME/agentloop/config.toml``, else
   ``~/.config/agentloop/config.toml``;
3. the project file: ``.agentloop.toml`` in the workspace or the nearest directory above it;
4. environment variables (``ENVIRONMENT`` below: ``AGENTLOOP_MODEL`` and so on);
5. the command line's flags (``overrides``).

A project file comes with the code being worked on, which may not be the user's own, so it
cannot loosen safety: it may make approval stricter but not looser, and the keys in
``USER_ONLY`` (trusted tools, extra roots, turning the sandbox off, the command environment,
where sessions go) are ignored there with a warning. **API keys never live in these files**:
a key that looks like a secret (``api_key``, ``token``, ``secret``, ``password``) is refused
with an error naming where keys do belong — the provider's environment variable or the system
keyring (see ``ApiKeys``). Nothing here ever writes a file.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from agentloop import AgentError

from ._bash import DEFAULT_ENV_ALLOW

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ENVIRONMENT",
    "USER_ONLY",
    "BashSettings",
    "Config",
    "ConfigError",
    "LoadedConfig",
    "ResourceLimits",
    "load_config",
    "project_config_path",
    "user_config_path",
]

ApprovalModeName = Literal["enabled", "smart", "bypassed"]
ThinkingName = Literal["off", "minimal", "low", "medium", "high", "extra_high"]


class ConfigError(AgentError, ValueError):
    """A configuration file or variable is invalid; the message says which and why."""


_Positive = Annotated[int, msgspec.Meta(ge=1)]


class ResourceLimits(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The ``[bash.limits]`` table: resource limits for each command (``setrlimit`` in the
    command's process; see ``_rlimit`` for what each does and cannot stop). Unset: no limit.

    Attributes:
        cpu_seconds: CPU time per process.
        memory_mb: address space per process, in MiB.
        processes: processes of the user (``RLIMIT_NPROC`` counts all of the user's).
        file_size_mb: the largest file a process may write, in MiB.
    """

    cpu_seconds: _Positive | None = None
    memory_mb: _Positive | None = None
    processes: _Positive | None = None
    file_size_mb: _Positive | None = None

    def __bool__(self) -> bool:
        return any(v is not None for v in msgspec.structs.astuple(self))


class BashSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The ``[bash]`` table: how the ``bash`` tool runs commands."""

    timeout: float = 120.0
    max_timeout: float = 600.0
    max_output: int = 30_000
    env_allow: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_ENV_ALLOW))
    env: dict[str, str] = msgspec.field(default_factory=dict)
    limits: ResourceLimits = msgspec.field(default_factory=ResourceLimits)


class Config(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The coding agent's settings (every field can be set in a TOML file).

    Attributes:
        model: ``"provider:model-id"``; unset, the first provider with an API key in the
            environment is used with its default model.
        approval: ``"enabled"`` (ask about every call), ``"smart"`` (ask about calls that
            change something) or ``"bypassed"`` (never ask).
        trusted_tools: tools whose calls run without asking, from the start of each session.
        trusted_commands: ``bash`` commands that run without asking: each a prefix of words,
            matching only a simple command (see ``agentloop_coding._trust``).
        plan: start sessions in plan mode (read-only tools, a plan as the answer).
        thinking: how much reasoning to ask of the model.
        sandbox: keep the file tools' paths inside the workspace (and ``roots``).
        roots: more directories the tools may use.
        sessions_dir: where sessions are kept (default ``$XDG_DATA_HOME/agentloop/sessions``).
        system_prompt: replaces the default system prompt.
        instructions: added to the system prompt (house rules, conventions).
        max_turns: the most turns one prompt may take.
        tool_timeout: seconds any one tool call may take.
        grep: ``"auto"`` (the built-in search in a confined workspace, ripgrep in one that
            is not), ``"rg"`` or ``"python"``.
        models: more models an editor (ACP) offers to switch to, beside the session's own.
        images: whether the model takes images in prompts; unset, its provider decides
            (see ``agentloop_coding._acp_content``).
        bash: the ``[bash]`` table.
    """

    model: str | None = None
    approval: ApprovalModeName = "smart"
    trusted_tools: list[str] = msgspec.field(default_factory=list)
    trusted_commands: list[str] = msgspec.field(default_factory=list)
    plan: bool = False
    thinking: ThinkingName | None = None
    sandbox: bool = True
    roots: list[str] = msgspec.field(default_factory=list)
    sessions_dir: str | None = None
    system_prompt: str | None = None
    instructions: str = ""
    max_turns: int = 50
    tool_timeout: float | None = None
    grep: Literal["auto", "rg", "python"] = "auto"
    models: list[str] = msgspec.field(default_factory=list)
    images: bool | None = None
    bash: BashSettings = msgspec.field(default_factory=BashSettings)

    def sessions_path(self, environ: Mapping[str, str] | None = None) -> Path:
        """Where sessions are kept."""
        if self.sessions_dir:
            return Path(os.path.expanduser(self.sessions_dir))
        env = os.environ if environ is None else environ
        data = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        return Path(data) / "agentloop" / "sessions"


ENVIRONMENT: dict[str, str] = {
    "AGENTLOOP_MODEL": "model",
    "AGENTLOOP_APPROVAL": "approval",
    "AGENTLOOP_PLAN": "plan",
    "AGENTLOOP_THINKING": "thinking",
    "AGENTLOOP_SANDBOX": "sandbox",
    "AGENTLOOP_SESSIONS_DIR": "sessions_dir",
    "AGENTLOOP_MAX_TURNS": "max_turns",
    "AGENTLOOP_GREP": "grep",
}
"""Environment variables and the keys they set."""

USER_ONLY = frozenset(
    {
        "trusted_tools",
        "trusted_commands",
        "roots",
        "sandbox",
        "sessions_dir",
        "bash.env_allow",
        "bash.env",
    }
)
"""Keys a project file may not set (they would loosen safety, or move the user's data)."""

_STRICTNESS = {"bypassed": 0, "smart": 1, "enabled": 2}
_SECRET = re.compile(r"api[_-]?key|(?:^|[_-])(?:token|secret|password|passwd)$", re.IGNORECASE)
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class LoadedConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The effective configuration and where each setting came from.

    Attributes:
        config: the settings.
        sources: for each key set by something other than the defaults, where it came from
            (a file path, ``env AGENTLOOP_MODEL``, ``command line``).
        files: the configuration files that were read.
        warnings: settings that were ignored, and why.
        looked_for: every configuration file looked for, read or not (the user's, then the
            project's), so that a person can see where settings may come from.
    """

    config: Config
    sources: dict[str, str]
    files: list[str]
    warnings: list[str]
    looked_for: list[str] = msgspec.field(default_factory=list)


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the user's configuration file is (whether or not it exists)."""
    env = os.environ if environ is None else environ
    explicit = env.get("AGENTLOOP_CONFIG")
    if explicit:
        return Path(os.path.expanduser(explicit))
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "agentloop" / "config.toml"


def project_config_path(workspace: str | os.PathLike[str]) -> Path | None:
    """The ``.agentloop.toml`` of ``workspace`` or of the nearest directory above it."""
    here = Path(os.path.realpath(os.fspath(workspace)))
    for directory in (here, *here.parents):
        candidate = directory / ".agentloop.toml"
        if candidate.is_file():
            return candidate
    return None


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and name == "bash":
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _check_secrets(table: Mapping[str, Any], where: str) -> None:
    for key, value in table.items():
        if _SECRET.search(key):
            raise ConfigError(
                f"{where}: {key!r} looks like a secret; configuration files never hold API keys. "
                "Put the key in the provider's environment variable (ANTHROPIC_API_KEY, "
                "OPENAI_API_KEY, ...) or in the system keyring (service 'agentloop', user = the "
                "provider's name)."
            )
        if isinstance(value, dict):
            _check_secrets(value, where)


def _read_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            table = tomllib.load(file)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    _check_secrets(table, str(path))
    return _flatten(table)


def _from_environment(environ: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    out: dict[str, tuple[Any, str]] = {}
    for variable, key in ENVIRONMENT.items():
        raw = environ.get(variable)
        if raw is None or raw == "":
            continue
        value: Any = raw
        if key in ("plan", "sandbox"):
            lowered = raw.strip().lower()
            if lowered not in _TRUE | _FALSE:
                raise ConfigError(f"{variable}={raw!r}: expected true or false")
            value = lowered in _TRUE
        elif key == "max_turns":
            try:
                value = int(raw)
            except ValueError:
                raise ConfigError(f"{variable}={raw!r}: expected a whole number") from None
        out[key] = (value, f"env {variable}")
    return out


def _build(values: dict[str, Any], where: str) -> Config:
    nested: dict[str, Any] = {}
    for key, value in values.items():
        if key.startswith("bash."):
            nested.setdefault("bash", {})[key[5:]] = value
        else:
            nested[key] = value
    try:
        return msgspec.convert(nested, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def load_config(
    workspace: str | os.PathLike[str] = ".",
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    user_file: str | os.PathLike[str] | None = None,
    read_project: bool = True,
) -> LoadedConfig:
    """The effective configuration for ``workspace`` (see the module docs for the order).

    Args:
        workspace: the directory the agent works in (where the project file is looked for).
        environ: the environment (default ``os.environ``).
        overrides: settings from the command line, by key (``"bash.timeout"`` for a table's).
        user_file: the user file to read instead of the usual one.
        read_project: read the project's ``.agentloop.toml``.

    Raises:
        ConfigError: a file is not valid TOML, holds a secret or an unknown or mistyped key,
            or an environment variable has an invalid value.
    """
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    files: list[str] = []
    warnings: list[str] = []

    user = Path(user_file) if user_file is not None else user_config_path(env)
    looked_for = [str(user)]
    if user.is_file():
        for key, value in _read_file(user).items():
            values[key], sources[key] = value, str(user)
        files.append(str(user))
        _build(values, str(user))  # name the file in the error, not a later source

    project = project_config_path(workspace) if read_project else None
    if project is not None and project != user:
        looked_for.append(str(project))
    elif project is None and read_project:
        here = os.path.realpath(os.fspath(workspace))
        looked_for.append(os.path.join(here, ".agentloop.toml") + " (and in each directory above)")
    if project is not None and project != user and project.is_file():
        table = _read_file(project)
        files.append(str(project))
        for key, value in table.items():
            if key in USER_ONLY:
                warnings.append(
                    f"{project}: {key!r} is ignored: only the user's own configuration or the "
                    "environment may set it"
                )
                continue
            if key == "approval" and isinstance(value, str):
                current = values.get("approval", "smart")
                if _STRICTNESS.get(value, 3) < _STRICTNESS.get(current, 1):
                    warnings.append(
                        f"{project}: approval {value!r} is ignored: a project may make approval "
                        f"stricter than {current!r}, not looser"
                    )
                    continue
            values[key], sources[key] = value, str(project)
        _build(values, str(project))

    for key, (value, source) in _from_environment(env).items():
        values[key], sources[key] = value, source
    _build(values, "the environment")

    for key, value in (overrides or {}).items():
        if value is not None:
            values[key], sources[key] = value, "command line"
    config = _build(values, "the command line")
    return LoadedConfig(
        config=config, sources=sources, files=files, warnings=warnings, looked_for=looked_for
    )
