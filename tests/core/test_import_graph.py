"""The core's modules import one another without cycles.

Every import counts, a deferred one inside a function included (a cycle broken by deferring an
import is still two modules that cannot be understood one without the other); only imports under
``if TYPE_CHECKING:`` are left out, since they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import agentloop

PACKAGE = Path(agentloop.__file__).parent


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path) -> set[str]:
    """The agentloop modules ``path`` imports at run time (``agentloop.x`` names)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for other in node.orelse:
                visit(other)
            return
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = f"agentloop.{node.module}" if node.module else "agentloop"
                if node.module is None:
                    found.update(f"agentloop.{alias.name}" for alias in node.names)
                else:
                    found.add(base)
            elif node.level == 0 and node.module and node.module.startswith("agentloop"):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("agentloop"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def graph() -> dict[str, set[str]]:
    modules = {
        f"agentloop.{p.stem}" if p.stem != "__init__" else "agentloop": p
        for p in PACKAGE.glob("*.py")
    }
    out: dict[str, set[str]] = {}
    for name, path in modules.items():
        if name == "agentloop":
            continue  # the package re-exports everything; it is the root, not a node
        out[name] = {m for m in _imports(path) if m in modules and m not in (name, "agentloop")}
    return out


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = dfs(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = dfs(node)
            if found:
                return found
    return None


def test_the_core_has_no_import_cycles() -> None:
    cycle = _cycle(graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_checker_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
