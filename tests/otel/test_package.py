"""The package's public surface, its size, and what it may import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import agentloop_otel

PACKAGE = Path(agentloop_otel.__file__).parent
# The core, the OpenTelemetry API, and the standard library: never another package of ours,
# never the OpenTelemetry SDK (the application chooses and sets up its own).
ALLOWED = set(sys.stdlib_module_names) | {"agentloop", "anyio", "msgspec", "opentelemetry"}


def test_all_is_sorted_and_complete() -> None:
    exported = agentloop_otel.__all__
    assert exported == sorted(exported)
    public = {
        name
        for name in vars(agentloop_otel)
        if not name.startswith("_") and not isinstance(getattr(agentloop_otel, name), type(sys))
    }
    assert public == set(exported)


def test_imports_only_the_core_and_the_opentelemetry_api() -> None:
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
                assert not name.startswith("opentelemetry.sdk"), f"{module.name} imports {name}"


def test_importing_it_loads_no_other_package_of_this_project_nor_the_sdk() -> None:
    probe = "import agentloop_otel, sys; print(sorted(m for m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(ast.literal_eval(out.stdout))
    roots = {m.split(".")[0] for m in loaded}
    assert "agentloop_otel" in roots
    assert roots & {"agentloop_providers", "agentloop_policies", "agentloop_mcp", "trio"} == set()
    assert not any(m.startswith("opentelemetry.sdk") for m in loaded)


def test_modules_stay_small() -> None:
    for module in PACKAGE.glob("_*.py"):
        lines = len(module.read_text().splitlines())
        assert lines <= 450, f"{module.name} has {lines} lines"
