"""The package's public surface, its size, and what it may import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import agentloop_mcp

PACKAGE = Path(agentloop_mcp.__file__).parent
# The core, and third-party libraries only: never another package of this project.
ALLOWED = set(sys.stdlib_module_names) | {
    "agentloop",
    "anyio",
    "fastjsonschema",
    "httpx2",
    "mcp",
    "mcp_types",  # the SDK's own protocol types (shipped with it)
    "msgspec",
    "pydantic",  # the SDK's models, whose validation errors a malformed answer raises
    "uvicorn",
}


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order, as in agentloop's own __all__: constants, classes, the rest.
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def test_all_is_sorted_and_complete() -> None:
    exported = agentloop_mcp.__all__
    assert exported == sorted(exported, key=_isort_key)
    public = {
        name
        for name in vars(agentloop_mcp)
        if not name.startswith("_") and not isinstance(getattr(agentloop_mcp, name), type(sys))
    }
    assert public == set(exported)


def test_imports_only_the_core_and_third_party_libraries() -> None:
    for module in PACKAGE.glob("*.py"):
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = [node.module.split(".")[0]]
            else:
                continue
            for root in roots:
                assert root in ALLOWED, f"{module.name} imports {root}"
                assert root != "asyncio", f"{module.name} imports asyncio"


def test_importing_it_loads_no_other_package_of_this_project() -> None:
    probe = "import agentloop_mcp, sys; print(sorted({m.split('.')[0] for m in sys.modules}))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(ast.literal_eval(out.stdout))
    assert "agentloop_mcp" in loaded
    assert loaded & {"agentloop_providers", "agentloop_policies", "trio"} == set()


def test_modules_stay_small() -> None:
    for module in PACKAGE.glob("_*.py"):
        lines = len(module.read_text().splitlines())
        assert lines <= 450, f"{module.name} has {lines} lines"
