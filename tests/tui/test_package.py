"""The package's surface, its size and the one-way dependency on the coding agent."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import agentloop_tui

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(agentloop_tui.__file__).parent
OURS = {"agentloop", "agentloop_providers", "agentloop_policies", "agentloop_coding"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_all_is_complete_and_sorted() -> None:
    exported = agentloop_tui.__all__
    assert exported == sorted(exported)
    # Found lazily (so that its command module imports fast): each name has a home and resolves.
    assert set(agentloop_tui._WHERE) == set(exported)
    for name in exported:
        assert getattr(agentloop_tui, name) is not None


def test_it_imports_the_coding_agent_and_below_textual_rich_and_the_standard_library() -> None:
    # MCP servers and in-process models are wired when their extras are installed.
    optional = {"agentloop_mcp", "agentloop_local"}
    allowed = OURS | optional | {"textual", "rich", "anyio", "msgspec", "keyring"}
    allowed |= sys.stdlib_module_names
    for module in PACKAGE.glob("*.py"):
        assert _imports(module) <= allowed, module.name


def test_no_other_package_of_ours_imports_it() -> None:
    for folder in ("agentloop", "providers", "policies", "integrations", "coding"):
        for module in (ROOT / folder).rglob("*.py"):
            assert "agentloop_tui" not in _imports(module), module


def test_importing_the_coding_agent_loads_neither_the_tui_nor_textual() -> None:
    probe = (
        "import agentloop_coding.cli, sys; print(sorted({m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(ast.literal_eval(out.stdout))
    assert "agentloop_coding" in loaded and not loaded & {"agentloop_tui", "textual"}


def test_without_textual_the_command_names_the_extra() -> None:
    probe = (
        "import sys; sys.modules['textual'] = None\n"
        "from agentloop_cli import main\n"
        "sys.exit(main([]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert "[tui] extra" in done.stderr and "pip install" in done.stderr


def test_modules_stay_small() -> None:
    for module in PACKAGE.glob("_*.py"):
        lines = len(module.read_text().splitlines())
        assert lines <= 450, f"{module.name} has {lines} lines"
