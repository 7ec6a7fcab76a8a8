"""The ``agentloop`` command's dispatcher: what it finds, how it routes, and what each command
imports (start-up time is what a person feels on every invocation)."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentloop
from agentloop_cli import _main

ROOT = Path(__file__).resolve().parents[2]


def test_its_reader_finds_what_importlib_metadata_finds() -> None:
    ours = _main._entry_points()
    theirs = {e.name: e for e in importlib.metadata.entry_points(group=_main.ENTRY_POINT_GROUP)}
    assert set(ours) == set(theirs) >= {"run", "acp", "config", "sessions", "tui", "eval"}
    for name, entry in ours.items():
        assert f"{entry.module}:{entry.attribute}" == theirs[name].value.split(" [")[0]
        assert list(entry.extras) == theirs[name].extras


def test_the_parser_reads_the_specification_s_forms() -> None:
    text = (
        "[console_scripts]\nx = a:b\n\n"
        "[agentloop.commands]\n# a comment\nrun = pkg.cli:RUN [coding]\n"
        "plain=pkg.mod:obj.attr\nmany = m:o [a, b]\n"
    )
    assert _main._parse(text) == [
        _main.EntryPoint("run", "pkg.cli", "RUN", ("coding",)),
        _main.EntryPoint("plain", "pkg.mod", "obj.attr", ()),
        _main.EntryPoint("many", "m", "o", ("a", "b")),
    ]


def test_one_version_everywhere() -> None:
    # The distribution's metadata, the package and the command say the same.
    assert importlib.metadata.version("anyio-agentloop") == agentloop.__version__
    assert _main._version() == agentloop.__version__
    done = subprocess.run(
        [sys.executable, "-m", "agentloop_cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == f"agentloop {agentloop.__version__}"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject  # no second place to write it


def test_an_unknown_command_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main.main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "no command 'frobnicate'" in err and "run" in err


def _loaded(argv: list[str]) -> set[str]:
    """Top-level modules loaded by ``agentloop *argv`` (run in-process in a fresh interpreter,
    stopping just before the command would do its work)."""
    probe = (
        "import sys, json\n"
        "from agentloop_cli import _main\n"
        "argv = json.loads(sys.argv[1])\n"
        "entries = _main._entry_points()\n"
        "command = _main._load(argv[0], entries[argv[0]]) if argv else None\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    import json

    done = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "PYTHONPATH": ""},
    )
    return set(ast.literal_eval(done.stdout))


HEAVY = {"agentloop", "httpx", "textual", "rich", "mcp", "temporalio", "opentelemetry", "yaml"}


def test_listing_the_commands_imports_none_of_their_work() -> None:
    # ``agentloop --help`` loads every command object: none may pull in agentloop or a
    # library the command needs only when it runs.
    loaded = _loaded([])
    assert not loaded & HEAVY, loaded & HEAVY
    for argv in (["run"], ["acp"], ["config"], ["sessions"], ["tui"], ["eval"]):
        loaded = _loaded(argv)
        assert not loaded & HEAVY, (argv, loaded & HEAVY)


def test_the_help_reads_no_package_metadata_library() -> None:
    probe = (
        "import sys\nfrom agentloop_cli import main\nmain(['--help'])\n"
        "print('importlib.metadata' in sys.modules, 'email' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines()[-1] == "False False"


@pytest.mark.parametrize(
    ("command", "forbidden"),
    [
        # What each command imports once it runs (``--help`` of each, which parses and stops):
        # never the TUI's or the optional integrations' libraries.
        ("run", {"textual", "mcp", "temporalio", "opentelemetry", "yaml", "llama_cpp"}),
        ("config", {"httpx", "textual", "mcp", "temporalio", "opentelemetry", "llama_cpp"}),
        ("sessions", {"httpx", "textual", "mcp", "temporalio", "opentelemetry", "llama_cpp"}),
    ],
)
def test_each_command_pins_what_it_imports(command: str, forbidden: set[str]) -> None:
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['agentloop', {command!r}, '--help']\n"
        "try:\n    runpy.run_module('agentloop_cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(ast.literal_eval(done.stdout.splitlines()[-1]))
    assert not loaded & forbidden, loaded & forbidden


def _agentloop() -> str:
    import shutil

    found = shutil.which("agentloop", path=os.path.dirname(sys.executable))
    assert found is not None
    return found


def test_a_reader_that_leaves_early_is_no_traceback(tmp_path: Path) -> None:
    # ``agentloop config | head -1``: here the reader is gone before a byte is written.
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_DATA_HOME": str(tmp_path)}
    process = subprocess.Popen(
        [_agentloop(), "config"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader leaves
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=60) == 141  # 128 + SIGPIPE, as a shell would report it
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_config_says_which_files_it_looked_for_and_read(tmp_path: Path) -> None:
    config_home = tmp_path / "c"
    (config_home / "agentloop").mkdir(parents=True)
    user_file = config_home / "agentloop" / "config.toml"
    user_file.write_text('approval = "enabled"\n')
    workspace = tmp_path / "w"
    workspace.mkdir()
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home), "XDG_DATA_HOME": str(tmp_path)}
    done = subprocess.run(
        [_agentloop(), "config"],
        capture_output=True,
        text=True,
        env=env,
        cwd=workspace,
        timeout=60,
        check=True,
    )
    assert f"# {user_file}: read" in done.stdout
    assert f"# {workspace / '.agentloop.toml'} (and in each directory above): not found" in (
        done.stdout
    )
    assert f'approval = "enabled"  # {user_file}' in done.stdout
