"""The package's public surface, its size, what it may import, and how it is installed."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import agentloop_eval

PACKAGE = Path(agentloop_eval.__file__).parent
ROOT = PACKAGE.parents[1]
# The core and the core's own dependencies, and the standard library; never another package
# of this project (not even the coding agent, whose command dispatches to this one).
ALLOWED = set(sys.stdlib_module_names) | {"agentloop", "anyio", "msgspec", "fastjsonschema"}


def test_all_is_sorted_and_complete() -> None:
    exported = agentloop_eval.__all__
    assert exported == sorted(exported)
    # Found lazily (so that its command module imports fast): each name has a home and resolves.
    assert set(agentloop_eval._WHERE) == set(exported)
    for name in exported:
        assert getattr(agentloop_eval, name) is not None


def test_imports_only_the_core() -> None:
    for module in PACKAGE.glob("*.py"):
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                root = name.split(".")[0]
                assert root in ALLOWED, f"{module.name} imports {name}"
                assert root != "asyncio", f"{module.name} imports asyncio"


def test_importing_it_loads_nothing_else_of_ours_nor_yaml() -> None:
    probe = "import agentloop_eval, sys; print(sorted({m.split('.')[0] for m in sys.modules}))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    roots = set(ast.literal_eval(out.stdout))
    assert "agentloop_eval" in roots
    ours = {"agentloop_providers", "agentloop_policies", "agentloop_coding", "agentloop_tui"}
    assert roots & (ours | {"yaml", "trio"}) == set()


def test_modules_stay_small() -> None:
    for module in PACKAGE.glob("_*.py"):
        lines = len(module.read_text().splitlines())
        assert lines <= 450, f"{module.name} has {lines} lines"


def test_the_extra_and_the_wheel() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert any(
        dep.startswith("pyyaml") for dep in project["project"]["optional-dependencies"]["eval"]
    )
    assert (
        "eval/agentloop_eval" in project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    )
    assert (PACKAGE / "py.typed").exists()


def test_python_dash_m() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentloop_eval", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and "usage: python -m agentloop_eval" in done.stdout
