"""The package's public surface and its one-way dependency on agentloop."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import agentloop_policies

PACKAGE = Path(agentloop_policies.__file__).parent


def _isort_key(name: str) -> tuple[int, str]:
    # The order ruff's RUF022 uses, as in agentloop's own __all__: constants, classes, others.
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def test_all_is_sorted_and_complete() -> None:
    exported = agentloop_policies.__all__
    assert exported == sorted(exported, key=_isort_key)
    # Found lazily (start-up time): each name has a home, and resolves.
    assert set(agentloop_policies._WHERE) == set(exported)
    for name in exported:
        assert getattr(agentloop_policies, name) is not None


def test_imports_only_agentloop_the_standard_library_and_anyio() -> None:
    # anyio is the one exception: agentloop's own foundation, needed for the approval timeout.
    allowed = set(sys.stdlib_module_names) | {"agentloop", "anyio"}
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
                assert root in allowed, f"{module.name} imports {root}"


def test_modules_stay_small() -> None:
    for module in PACKAGE.glob("_*.py"):
        lines = len(module.read_text().splitlines())
        assert lines <= 450, f"{module.name} has {lines} lines"
