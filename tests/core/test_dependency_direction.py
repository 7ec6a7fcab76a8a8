"""The one-way dependencies, toward the core: each package may import only the ones below it.

    agentloop                      nothing of ours
    providers, policies, mcp,      the core
    otel, eval, temporal
    coding                         the core, providers, policies, mcp (for ACP's MCP servers)
    tui                            the core, providers, policies, coding (and what it brings)
    cli (the agentloop command)    nothing of ours: it finds each subcommand by entry point


Checked twice: by importing in a clean interpreter and looking at ``sys.modules`` (what really
loads), and by reading the source (imports hidden inside functions, which load only later).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_ALL_DIRS = {
    "agentloop": ROOT / "agentloop",
    "agentloop_providers": ROOT / "providers" / "agentloop_providers",
    "agentloop_policies": ROOT / "policies" / "agentloop_policies",
    "agentloop_mcp": ROOT / "integrations" / "agentloop_mcp",
    "agentloop_otel": ROOT / "integrations" / "agentloop_otel",
    "agentloop_temporal": ROOT / "integrations" / "agentloop_temporal",
    "agentloop_eval": ROOT / "eval" / "agentloop_eval",
    "agentloop_local": ROOT / "local" / "agentloop_local",
    "agentloop_coding": ROOT / "coding" / "agentloop_coding",
    "agentloop_tui": ROOT / "tui" / "agentloop_tui",
    "agentloop_cli": ROOT / "cli" / "agentloop_cli",
}
PACKAGE_DIRS = {name: path for name, path in _ALL_DIRS.items() if path.is_dir()}
OURS = set(_ALL_DIRS)
CORE_ONLY = {"agentloop"}
MAY_IMPORT = {
    "agentloop": set(),
    "agentloop_providers": CORE_ONLY,
    "agentloop_policies": CORE_ONLY,
    "agentloop_mcp": CORE_ONLY,
    "agentloop_otel": CORE_ONLY,
    "agentloop_temporal": CORE_ONLY,
    "agentloop_eval": CORE_ONLY,
    "agentloop_local": CORE_ONLY,
    "agentloop_coding": {"agentloop", "agentloop_providers", "agentloop_policies", "agentloop_mcp"},
    "agentloop_tui": {
        "agentloop",
        "agentloop_providers",
        "agentloop_policies",
        "agentloop_mcp",
        "agentloop_local",  # the first-run wizard and /model offer the in-process model
        "agentloop_coding",
    },
    "agentloop_cli": set(),
}
# Layers built on asyncio-only libraries choose anyio's asyncio backend explicitly (Textual,
# Temporal's workflow loop, the ACP SDK); everything else never imports asyncio.
ASYNCIO_ALLOWED = {"agentloop_tui", "agentloop_temporal"}

_PROBE = """
import importlib, json, pkgutil, sys
targets = json.loads(sys.argv[1])
walk = sys.argv[2] == "walk"
for name in targets:
    module = importlib.import_module(name)
    if walk and hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, name + "."):
            importlib.import_module(info.name)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def loaded_after_importing(*modules: str, walk: bool = False) -> set[str]:
    """Top-level package names in ``sys.modules`` after importing ``modules`` afresh."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(modules), "walk" if walk else "top"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout))


def test_importing_the_core_loads_no_httpx_trio_or_sibling_packages() -> None:
    loaded = loaded_after_importing("agentloop", "agentloop.testing")
    assert "agentloop" in loaded
    forbidden = {"httpx", "trio", "agentloop_providers", "agentloop_policies"}
    assert loaded & forbidden == set()


def test_importing_the_core_defers_fastjsonschema() -> None:
    # Slow to import and needed only by schema tools: loaded on first use.
    assert "fastjsonschema" not in loaded_after_importing("agentloop", "agentloop.testing")


def test_no_core_module_loads_httpx_or_sibling_packages() -> None:
    loaded = loaded_after_importing("agentloop", walk=True)
    assert loaded & {"httpx", "agentloop_providers", "agentloop_policies"} == set()


def test_policies_load_no_httpx_and_no_providers() -> None:
    loaded = loaded_after_importing("agentloop_policies", walk=True)
    assert "agentloop_policies" in loaded
    assert loaded & {"httpx", "agentloop_providers"} == set()


def test_providers_load_no_policies() -> None:
    loaded = loaded_after_importing("agentloop_providers", walk=True)
    assert "agentloop_providers" in loaded
    assert "agentloop_policies" not in loaded


def test_the_probe_would_notice_a_forbidden_import() -> None:
    # Guard against a probe that can never fail: importing httpx must show up.
    assert "httpx" in loaded_after_importing("httpx")


# --------------------------------------------------------------------------- static scan


# The demo script ships inside the core package but is no part of the library: it may use a
# provider when one is installed, behind ``except ImportError``. Nothing else in the core may.
OPTIONAL_IMPORTS_ALLOWED = {Path("agentloop/demo.py")}
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


def _guarded_by_import_error(tree: ast.AST) -> set[int]:
    """Ids of the import statements inside ``try:`` blocks that catch ``ImportError``."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        names: set[str] = set()
        for handler in node.handlers:
            caught = handler.type
            elements = caught.elts if isinstance(caught, ast.Tuple) else [caught]
            names.update(e.id for e in elements if isinstance(e, ast.Name))
        if names & _IMPORT_ERRORS:
            for statement in node.body:
                guarded.update(id(n) for n in ast.walk(statement))
    return guarded


def imported_modules(path: Path, *, skip_guarded: bool = False) -> list[tuple[int, str]]:
    """Every absolute module an ``import`` statement in ``path`` names, wherever it sits.

    With ``skip_guarded``, imports inside ``try: ... except ImportError`` are left out.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    guarded = _guarded_by_import_error(tree) if skip_guarded else set()
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def offending_imports(package: str, forbidden: set[str]) -> list[str]:
    hits = []
    for path in sorted(PACKAGE_DIRS[package].rglob("*.py")):
        relative = path.relative_to(ROOT)
        optional_ok = relative in OPTIONAL_IMPORTS_ALLOWED
        for line, module in imported_modules(path, skip_guarded=optional_ok):
            if module.split(".")[0] in forbidden:
                hits.append(f"{relative}:{line}: {module}")
    return hits


@pytest.mark.parametrize("package", sorted(set(PACKAGE_DIRS) - ASYNCIO_ALLOWED))
def test_no_library_module_imports_asyncio(package: str) -> None:
    assert offending_imports(package, {"asyncio"}) == []


@pytest.mark.parametrize("package", sorted(PACKAGE_DIRS))
def test_each_package_imports_only_the_packages_below_it(package: str) -> None:
    forbidden = OURS - MAY_IMPORT[package] - {package}
    assert offending_imports(package, forbidden) == []


def test_every_package_of_the_distribution_is_checked() -> None:
    import tomllib

    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    packages = {Path(p).name for p in wheel["targets"]["wheel"]["packages"]}
    assert packages <= set(PACKAGE_DIRS)
    assert packages == set(PACKAGE_DIRS)


def test_core_source_never_imports_httpx_trio_or_siblings() -> None:
    forbidden = {"httpx", "httpx_sse", "trio", "agentloop_providers", "agentloop_policies"}
    assert offending_imports("agentloop", forbidden) == []


def test_policies_source_never_imports_httpx_or_providers() -> None:
    assert offending_imports("agentloop_policies", {"httpx", "agentloop_providers"}) == []


def test_providers_source_never_imports_policies() -> None:
    assert offending_imports("agentloop_providers", {"agentloop_policies"}) == []


def test_the_scan_sees_imports_inside_functions(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\n"
        "def f():\n"
        "    import asyncio.events\n"
        "    from asyncio import sleep\n"
        "    from . import sibling\n",
        encoding="utf-8",
    )
    assert imported_modules(sample) == [(1, "os"), (3, "asyncio.events"), (4, "asyncio")]


def test_the_scan_skips_only_imports_guarded_by_import_error(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "try:\n"
        "    import httpx\n"
        "except ImportError:\n"
        "    pass\n"
        "try:\n"
        "    import trio\n"
        "except (ValueError, ModuleNotFoundError):\n"
        "    pass\n"
        "try:\n"
        "    import asyncio\n"
        "except ValueError:\n"
        "    pass\n",
        encoding="utf-8",
    )
    assert imported_modules(sample, skip_guarded=True) == [(10, "asyncio")]
    assert [m for _, m in imported_modules(sample)] == ["httpx", "trio", "asyncio"]
