"""Without an extra, each entry point says which extra to install, in one line.

Each case runs in a fresh interpreter where the extra's third-party modules cannot be imported
(a finder that refuses them, as if they were not installed), so it sees what a user of a
wheel installed without that extra sees.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

BLOCK = textwrap.dedent(
    """
    import importlib.abc, sys

    class _NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    BLOCKED = set(sys.argv[1].split(","))
    sys.meta_path.insert(0, _NotInstalled())
    """
)


def _run(blocked: str, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK + textwrap.dedent(code), blocked],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _one_line_naming(stderr: str, extra: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    wanted = f'pip install "anyio-agentloop[{extra}]"'
    naming = [line for line in lines if wanted in line]
    assert len(naming) == 1, stderr
    return naming[0]


@pytest.mark.parametrize(
    ("package", "blocked", "extra"),
    [
        ("agentloop_providers", "httpx", "providers"),
        ("agentloop_mcp", "mcp", "mcp"),
        ("agentloop_otel", "opentelemetry", "otel"),
        ("agentloop_temporal", "temporalio", "temporal"),
        ("agentloop_eval", "yaml", "eval"),
        ("agentloop_coding", "httpx", "coding"),
        ("agentloop_tui", "textual", "tui"),
    ],
)
def test_importing_a_package_without_its_extra_names_it(
    package: str, blocked: str, extra: str
) -> None:
    done = _run(
        blocked,
        f"""
        import agentloop
        try:
            import {package}
        except agentloop.MissingExtra as exc:
            assert isinstance(exc, ModuleNotFoundError)
            print(exc)
        else:
            raise SystemExit("imported")
        """,
    )
    assert done.returncode == 0, done.stderr
    assert f"{package} needs the [{extra}] extra" in done.stdout
    assert f'pip install "anyio-agentloop[{extra}]"' in done.stdout


def test_a_model_string_without_providers_is_an_unknown_model_naming_the_extra() -> None:
    done = _run(
        "httpx",
        """
        import agentloop as al
        try:
            al.Agent(model="anthropic:claude-sonnet-4-5")
        except al.UnknownModel as exc:
            print(exc)
        """,
    )
    assert done.returncode == 0, done.stderr
    assert "[providers] extra" in done.stdout
    assert 'pip install "anyio-agentloop[providers]"' in done.stdout


def test_local_models_without_their_extra_name_it_and_still_list_the_presets() -> None:
    # agentloop_local imports without llama-cpp-python on purpose: a first-run wizard lists
    # the presets (and whether the runtime is there) before anything is installed.
    done = _run(
        "llama_cpp",
        """
        import os, tempfile
        import agentloop as al, agentloop_local
        assert agentloop_local.runtime_available() is False
        assert agentloop_local.available_models()
        try:
            al.Agent(model="local:smollm2")
        except al.UnknownModel as exc:
            print(exc)
        model = os.path.join(tempfile.mkdtemp(), "m.gguf")
        open(model, "wb").close()
        try:
            agentloop_local.load_model_sync(model)
        except al.MissingExtra as exc:
            print(exc)
        """,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    assert all('pip install "anyio-agentloop[local]"' in line for line in lines)


def test_the_trio_backend_without_trio_names_the_extra() -> None:
    done = _run(
        "trio",
        """
        import agentloop as al
        from agentloop.testing import ScriptedStream, reply_text
        agent = al.Agent(
            model=al.ModelSpec(provider="x", model_id="y"),
            stream_fn=ScriptedStream([reply_text("hi")]),
        )
        try:
            agent.prompt_sync("hi", backend="trio")
        except al.MissingExtra as exc:
            print(exc)
        """,
    )
    assert done.returncode == 0, done.stderr
    assert 'pip install "anyio-agentloop[trio]"' in done.stdout


@pytest.mark.parametrize(
    ("argv", "blocked", "extra"),
    [
        (["run", "hello"], "httpx", "coding"),
        (["acp"], "acp", "coding"),
        (["config"], "httpx", "coding"),
        (["tui"], "textual", "tui"),
        ([], "textual", "tui"),
        (["--inline"], "textual", "tui"),
        (["eval", "run", "suite"], "yaml", "eval"),
    ],
)
def test_each_command_without_its_extra_says_so_in_one_line(
    argv: list[str], blocked: str, extra: str
) -> None:
    done = _run(
        blocked,
        f"""
        from agentloop_cli import main
        sys.exit(main({argv!r}))
        """,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    line = _one_line_naming(done.stderr, extra)
    assert line.startswith("agentloop: ")


def test_help_lists_a_command_whose_extra_is_missing() -> None:
    done = _run(
        "textual",
        """
        from agentloop_cli import main
        sys.exit(main(["--help"]))
        """,
    )
    assert done.returncode == 0, done.stderr
    [tui] = [line for line in done.stdout.splitlines() if line.strip().startswith("tui ")]
    assert "[tui] extra" in tui
    assert any(line.strip().startswith("run ") for line in done.stdout.splitlines())
