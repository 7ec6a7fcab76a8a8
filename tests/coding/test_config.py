"""Configuration sources and their order, the safety rules for project files, API keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentloop_coding import (
    ApiKeys,
    Config,
    ConfigError,
    ResourceLimits,
    default_model,
    load_config,
    project_config_path,
    user_config_path,
)

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    work = tmp_path / "project" / "sub"
    work.mkdir(parents=True)
    return work, tmp_path / "user.toml"


def test_defaults_without_any_source(dirs: tuple[Path, Path]) -> None:
    work, user = dirs
    loaded = load_config(work, environ={}, user_file=user)
    assert loaded.config == Config()
    assert loaded.sources == {} and loaded.files == [] and loaded.warnings == []


def test_each_source_wins_over_the_one_before(dirs: tuple[Path, Path]) -> None:
    work, user = dirs
    user.write_text(
        'model = "a:user"\nmax_turns = 7\ngrep = "python"\n[bash]\ntimeout = 5.0\n'
        'env_allow = ["PATH"]\n'
    )
    (work.parent / ".agentloop.toml").write_text(
        'model = "a:project"\ninstructions = "Use tabs."\n[bash]\ntimeout = 9.0\n'
    )
    environ = {"AGENTLOOP_MODEL": "a:env", "AGENTLOOP_PLAN": "yes"}
    loaded = load_config(work, environ=environ, user_file=user, overrides={"plan": False})
    config = loaded.config
    assert config.model == "a:env"
    assert config.max_turns == 7 and config.grep == "python"
    assert config.instructions == "Use tabs."
    assert config.bash.timeout == 9.0 and config.bash.env_allow == ["PATH"]
    assert config.plan is False
    project = str(work.parent / ".agentloop.toml")
    assert loaded.sources == {
        "model": "env AGENTLOOP_MODEL",
        "max_turns": str(user),
        "grep": str(user),
        "bash.timeout": project,
        "bash.env_allow": str(user),
        "instructions": project,
        "plan": "command line",
    }
    assert loaded.files == [str(user), project]


def test_a_project_file_cannot_loosen_safety(dirs: tuple[Path, Path]) -> None:
    work, user = dirs
    (work / ".agentloop.toml").write_text(
        'approval = "bypassed"\nsandbox = false\ntrusted_tools = ["bash"]\nroots = ["/"]\n'
        'trusted_commands = ["rm"]\n[bash]\nenv_allow = ["*"]\n'
    )
    loaded = load_config(work, environ={}, user_file=user)
    assert loaded.config == Config()
    assert len(loaded.warnings) == 6
    assert all("ignored" in w for w in loaded.warnings)
    # Stricter is fine.
    (work / ".agentloop.toml").write_text('approval = "enabled"\n')
    assert load_config(work, environ={}, user_file=user).config.approval == "enabled"
    # The user may loosen it in their own file.
    user.write_text('approval = "bypassed"\ntrusted_tools = ["bash"]\n')
    (work / ".agentloop.toml").write_text("")
    mine = load_config(work, environ={}, user_file=user).config
    assert mine.approval == "bypassed" and mine.trusted_tools == ["bash"]


@pytest.mark.parametrize(
    "text",
    [
        'api_key = "sk-1"',
        'openai_api_key = "sk-1"',
        '[bash]\nenv = {GITHUB_TOKEN = "ghp_1"}',
        'client_secret = "x"',
    ],
)
def test_secrets_are_refused_in_files(dirs: tuple[Path, Path], text: str) -> None:
    work, user = dirs
    user.write_text(text + "\n")
    with pytest.raises(ConfigError, match="never hold API keys") as caught:
        load_config(work, environ={}, user_file=user)
    assert "sk-1" not in str(caught.value) and "ghp_1" not in str(caught.value)


def test_invalid_sources_are_named_in_the_error(dirs: tuple[Path, Path]) -> None:
    work, user = dirs
    user.write_text("model = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(work, environ={}, user_file=user)
    user.write_text('modle = "typo"\n')
    with pytest.raises(ConfigError, match=f"{user}.*modle"):
        load_config(work, environ={}, user_file=user)
    user.write_text('approval = "sometimes"\n')
    with pytest.raises(ConfigError, match="approval"):
        load_config(work, environ={}, user_file=user)
    user.unlink()
    for variable, value in (("AGENTLOOP_PLAN", "maybe"), ("AGENTLOOP_MAX_TURNS", "many")):
        with pytest.raises(ConfigError, match=variable):
            load_config(work, environ={variable: value}, user_file=user)
    with pytest.raises(ConfigError, match="environment"):
        load_config(work, environ={"AGENTLOOP_APPROVAL": "sometimes"}, user_file=user)


def test_where_files_and_sessions_are(tmp_path: Path) -> None:
    assert user_config_path({"XDG_CONFIG_HOME": "/x"}).as_posix() == "/x/agentloop/config.toml"
    assert (
        user_config_path({"AGENTLOOP_CONFIG": "/y.toml", "XDG_CONFIG_HOME": "/x"}).as_posix()
        == "/y.toml"
    )
    assert Config().sessions_path({"XDG_DATA_HOME": "/d"}).as_posix() == "/d/agentloop/sessions"
    assert Config(sessions_dir="/s").sessions_path().as_posix() == "/s"
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert project_config_path(deep) is None
    (tmp_path / "a" / ".agentloop.toml").write_text("")
    assert project_config_path(deep) == tmp_path / "a" / ".agentloop.toml"


def test_the_default_model_is_the_first_provider_with_a_key() -> None:
    assert default_model({}) is None
    assert default_model({"OPENAI_API_KEY": "k", "GEMINI_API_KEY": "k"}) == "openai:gpt-4.1"
    both = default_model({"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
    assert both is not None and both.startswith("anthropic:")


@pytest.mark.anyio
async def test_api_keys_come_from_the_environment_or_the_keyring() -> None:
    looked_up: list[tuple[str, str]] = []

    def keyring_get(service: str, user: str) -> str | None:
        looked_up.append((service, user))
        return {"anthropic": " sk-from-keyring \n"}.get(user)

    keys = ApiKeys(environ={"OPENAI_API_KEY": "sk-env"}, keyring_get=keyring_get)
    assert await keys("openai") is None  # the provider reads its variable itself
    assert await keys("anthropic") == "sk-from-keyring"
    assert await keys("gemini") is None
    assert looked_up == [("agentloop", "anthropic"), ("agentloop", "gemini")]

    def broken(service: str, user: str) -> str | None:
        raise RuntimeError("no keyring daemon")

    assert await ApiKeys(environ={}, keyring_get=broken)("anthropic") is None


def test_resource_limits_come_from_the_bash_limits_table(dirs: tuple[Path, Path]) -> None:
    project, user = dirs
    user.write_text("[bash.limits]\ncpu_seconds = 60\nmemory_mb = 2048\n")
    limits = load_config(project, environ={}, user_file=user).config.bash.limits
    assert (limits.cpu_seconds, limits.memory_mb, limits.processes) == (60, 2048, None)
    assert limits and not ResourceLimits()
    user.write_text("[bash.limits]\ncpu_seconds = 0\n")
    with pytest.raises(ConfigError, match="cpu_seconds"):
        load_config(project, environ={}, user_file=user)
    user.write_text("[bash.limits]\nwall_seconds = 5\n")
    with pytest.raises(ConfigError, match="wall_seconds"):
        load_config(project, environ={}, user_file=user)
