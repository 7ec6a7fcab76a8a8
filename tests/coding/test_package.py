"""The package's public surface, its size, and what it may import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import agentloop_coding

PACKAGE = Path(agentloop_coding.__file__).parent
# The core, the providers, the policies and (for ACP's MCP servers) agentloop_mcp, and
# third-party libraries: nothing else of ours.
OURS_ALLOWED = {"agentloop", "agentloop_providers", "agentloop_policies", "agentloop_mcp"}
THIRD_PARTY = {"anyio", "msgspec", "acp", "keyring"}
ALLOWED = set(sys.stdlib_module_names) | OURS_ALLOWED | THIRD_PARTY


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order, as in agentloop's own __all__: constants, classes, the rest.
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def _imports(module: Path) -> list[str]:
    roots: list[str] = []
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Import):
            roots.extend(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.append(node.module.split(".")[0])
    return roots


def test_all_is_sorted_and_complete() -> None:
    exported = agentloop_coding.__all__
    assert exported == sorted(exported, key=_isort_key)
    # The package's names are found lazily (so that its command module imports fast): each
    # name of __all__ has a home, and resolves.
    assert set(agentloop_coding._WHERE) == set(exported)
    for name in exported:
        assert getattr(agentloop_coding, name) is not None


def test_imports_only_the_core_providers_policies_and_third_party_libraries() -> None:
    for module in PACKAGE.glob("*.py"):
        for root in _imports(module):
            assert root in ALLOWED, f"{module.name} imports {root}"
            assert root != "asyncio", f"{module.name} imports asyncio"
            assert root != "trio", f"{module.name} imports trio"


def test_only_the_acp_modules_import_the_protocol_package_and_mcp() -> None:
    users = {m.name for m in PACKAGE.glob("*.py") if "acp" in _imports(m)}
    assert users == {m.name for m in PACKAGE.glob("_acp*.py")} - {"_acp_transport.py"}
    mcp_users = {m.name for m in PACKAGE.glob("*.py") if "agentloop_mcp" in _imports(m)}
    assert mcp_users == {"_acp_mcp.py"}


def test_the_resource_limit_program_needs_only_the_standard_library() -> None:
    assert set(_imports(PACKAGE / "_rlimit.py")) <= set(sys.stdlib_module_names)


def test_the_grep_program_needs_only_the_standard_library() -> None:
    # It runs as ``python -E -s _scan.py``: no site-packages, no package around it.
    assert set(_imports(PACKAGE / "_scan.py")) <= set(sys.stdlib_module_names)


def test_importing_it_loads_no_protocol_package_httpx_or_trio() -> None:
    probe = "import agentloop_coding, sys; print(sorted({m.split('.')[0] for m in sys.modules}))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(ast.literal_eval(out.stdout))
    assert "agentloop_coding" in loaded
    assert loaded & {"acp", "pydantic", "httpx", "trio", "agentloop_mcp"} == set()


def test_modules_stay_small() -> None:
    for module in PACKAGE.glob("_*.py"):
        lines = len(module.read_text().splitlines())
        assert lines <= 450, f"{module.name} has {lines} lines"
