"""The package's public surface and what it may import."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import agentloop_temporal

PACKAGE = Path(agentloop_temporal.__file__).parent
# The core, Temporal's SDK, anyio and msgspec, and the standard library: never another package
# of ours.
ALLOWED = set(sys.stdlib_module_names) | {"agentloop", "anyio", "msgspec", "temporalio"}


def test_all_is_sorted_and_complete() -> None:
    exported = agentloop_temporal.__all__
    assert exported == sorted(exported)
    public = {
        name
        for name in vars(agentloop_temporal)
        if not name.startswith("_") and not isinstance(getattr(agentloop_temporal, name), type(sys))
    }
    assert public == set(exported)


def test_imports_only_the_core_temporal_anyio_and_msgspec() -> None:
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
                assert name.split(".")[0] in ALLOWED, f"{module.name} imports {name}"


def test_activity_and_workflow_names_are_stable() -> None:
    # Histories recorded by one deployment name these: renaming one breaks every run in flight.
    assert agentloop_temporal.WORKFLOW_NAME == "agentloop.run"
    assert [
        agentloop_temporal.MODEL_ACTIVITY,
        agentloop_temporal.TOOL_ACTIVITY,
        agentloop_temporal.DESCRIBE_ACTIVITY,
        agentloop_temporal.PUBLISH_ACTIVITY,
    ] == [
        "agentloop.model_call",
        "agentloop.tool_call",
        "agentloop.describe_tools",
        "agentloop.publish",
    ]


def test_modules_stay_small() -> None:
    for module in PACKAGE.glob("*.py"):
        assert len(module.read_text().splitlines()) <= 450, module.name
