"""The API reference omits nothing: every public name is rendered, with a docstring.

mkdocstrings leaves out an object without a docstring (``show_if_no_docstring: false``) and
renders only the members a class defines itself unless a page lists inherited ones. Both used to
hide public API silently (57 of 77 top-level names once; ``TextStart``, which the provider guide
uses, was absent from ``agentloop.stream``). The site is built once (``mkdocs build --strict``)
and its anchors compared with every ``__all__`` of every public module of every package, and with
the methods public classes inherit from the project's undocumented classes.

Docstrings must also read the same in every griffe version mkdocstrings may bring: an ``Args:``
entry naming several parameters (``a, b: ...``) broke the strict build with griffe 2.4.1, so no
docstring in the packages has one.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import griffe
import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
# Each package and the directory it lives in (mkdocs.yml's mkdocstrings ``paths`` list them too).
PACKAGES = {
    "agentloop": ".",
    "agentloop_providers": "providers",
    "agentloop_policies": "policies",
    "agentloop_mcp": "integrations",
    "agentloop_otel": "integrations",
    "agentloop_temporal": "integrations",
    "agentloop_eval": "eval",
    "agentloop_local": "local",
    "agentloop_coding": "coding",
    "agentloop_tui": "tui",
    "agentloop_cli": "cli",
}
# Public modules that are programs rather than APIs: they have no ``__all__`` on purpose.
PROGRAMS = {"agentloop_mcp.demo_server": "a demo MCP server run with python -m"}
_COMPAT = {"AgentCompat"}  # the deprecated names: left out of the reference on purpose


def public_modules() -> list[ModuleType]:
    """Every package and each of its modules whose dotted name has no part starting with ``_``."""
    modules = []
    for name in PACKAGES:
        package = importlib.import_module(name)
        modules.append(package)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if any(part.startswith("_") for part in info.name.split(".")):
                continue
            if info.name not in PROGRAMS:
                modules.append(importlib.import_module(info.name))
    return modules


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("docs") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=600,
    )
    return site


def _anchors(html: str) -> set[str]:
    return set(re.findall(r'id="([\w.]+)"', html))


def _reference_anchors(site: Path) -> set[str]:
    anchors: set[str] = set()
    for page in (site / "reference").rglob("index.html"):
        anchors |= _anchors(page.read_text())
    return anchors


def _all_pages(site: Path) -> str:
    return "".join(p.read_text() for p in (site / "reference").rglob("index.html"))


def test_every_public_module_declares_its_names() -> None:
    missing = [m.__name__ for m in public_modules() if not hasattr(m, "__all__")]
    assert missing == []


def test_every_public_name_is_in_the_reference(site: Path) -> None:
    anchors = _reference_anchors(site)
    modules = public_modules()
    # Where each object is rendered: a re-exported object (``agentloop_providers.anthropic.
    # AnthropicProvider`` is ``agentloop_providers.AnthropicProvider``) needs one entry.
    rendered: set[int] = set()
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if f"{module.__name__}.{name}" in anchors and (inspect.isclass(obj) or callable(obj)):
                rendered.add(id(obj))
    missing = []
    checked = 0
    for module in modules:
        for name in module.__all__:
            checked += 1
            obj = getattr(module, name)
            if isinstance(obj, ModuleType):
                found = obj.__name__ in anchors
            else:
                found = f"{module.__name__}.{name}" in anchors or id(obj) in rendered
            if not found:
                missing.append(f"{module.__name__}.{name}")
    assert checked >= 500  # the walk found the packages' modules
    assert missing == []


def _griffe_objects() -> Iterator[tuple[str, griffe.Object | griffe.Alias]]:
    """Every public name as griffe reads it, with the extensions mkdocs.yml loads."""
    found = re.search(r"^\s*extensions: \[(.*?)\]", (ROOT / "mkdocs.yml").read_text(), re.M)
    extensions = [name.strip() for name in found.group(1).split(",")] if found else []
    loader = griffe.GriffeLoader(
        search_paths=[str(ROOT / path) for path in dict.fromkeys(PACKAGES.values())],
        extensions=griffe.load_extensions(*extensions),
    )
    for package in PACKAGES:
        loader.load(package)
    loader.resolve_aliases(external=False)
    for module in public_modules():
        for name in module.__all__:
            path = f"{module.__name__}.{name}"
            yield path, loader.modules_collection[path]


def test_every_public_name_has_a_docstring() -> None:
    # What mkdocstrings renders is what griffe reads: a type alias or a constant is documented
    # by the string literal after its assignment, which ``__doc__`` does not show.
    undocumented = [path for path, obj in _griffe_objects() if not obj.docstring]
    assert undocumented == []


_TEXTUAL_HOOK = re.compile(r"^(compose|on_\w+|action_\w+)$")


def _is_textual(path: str) -> bool:
    """Whether the public name ``path`` is a Textual app or widget."""
    module, _, name = path.rpartition(".")
    obj = getattr(importlib.import_module(module), name)
    return any(base.__module__.startswith("textual.") for base in inspect.getmro(obj))


def _public_members(cls: griffe.Object | griffe.Alias, path: str) -> list[str]:
    """The methods and properties a class declares (not inherits) under a public name.

    A Textual app's ``compose``, ``on_*`` and ``action_*`` methods are left out: Textual calls
    them (its bindings say what the actions do), an application does not.
    """
    textual = _is_textual(path)
    return [
        name
        for name, member in cls.members.items()
        if not name.startswith("_")
        and not member.is_alias
        and (member.is_function or "property" in member.labels)
        and not (textual and _TEXTUAL_HOOK.match(name))
    ]


def test_every_public_method_is_in_the_reference_with_a_docstring(site: Path) -> None:
    # A method without a docstring is left out of the reference as silently as a class was:
    # ``Agent.set_tools``, ``Agent.set_thinking_level`` and 98 others once were.
    anchors = _reference_anchors(site)
    classes: dict[str, tuple[griffe.Object | griffe.Alias, list[str]]] = {}
    for path, obj in _griffe_objects():
        target = obj.final_target if isinstance(obj, griffe.Alias) else obj
        if target.is_class:
            classes.setdefault(target.path, (target, []))[1].append(path)
    undocumented = []
    unrendered = []
    checked = 0
    for cls, paths in classes.values():
        # Where the class is rendered: under any of its public names.
        where = [p for p in paths if p in anchors]
        for name in _public_members(cls, paths[0]):
            checked += 1
            if not cls.members[name].docstring:
                undocumented.append(f"{paths[0]}.{name}")
            elif not any(f"{prefix}.{name}" in anchors for prefix in where):
                unrendered.append(f"{paths[0]}.{name}")
    assert checked >= 300
    assert undocumented == []
    assert unrendered == []


# Google-style sections whose entries each name one parameter or attribute.
_NAMED_SECTIONS = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters"
    r"|Attributes|Raises|Exceptions):\s*$"
)
_ONE_NAME = re.compile(r"^\*{0,2}[A-Za-z_][\w.]*(\s*\([^)]*\))?:(\s|$)")


def multi_name_entries(docstring: str) -> list[str]:
    """The entries of ``docstring``'s named sections that do not name exactly one thing."""
    lines = docstring.expandtabs().splitlines()
    bad = []
    section_indent: int | None = None
    entry_indent: int | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if _NAMED_SECTIONS.match(stripped):
            section_indent, entry_indent = indent, None
            continue
        if section_indent is None or not stripped:
            continue
        if indent <= section_indent:
            section_indent = None  # the section ended
            continue
        if entry_indent is None:
            entry_indent = indent
        if indent == entry_indent and not _ONE_NAME.match(stripped):
            bad.append(stripped)
    return bad


def test_the_multi_name_check_catches_what_broke_the_build() -> None:
    # TemporalAgent's docstring, as it was when griffe 2.4.1 failed the strict build.
    docstring = """Run agents on Temporal.

    Args:
        client: a connected Temporal client.
        approval, approval_timeout, steering_mode: see
            ``RunInput``.
        id_prefix: what the workflow id starts with.

    Raises:
        ValueError: never.
    """
    assert multi_name_entries(inspect.cleandoc(docstring)) == [
        "approval, approval_timeout, steering_mode: see"
    ]
    assert multi_name_entries(docstring) == ["approval, approval_timeout, steering_mode: see"]


def _docstrings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=True)
            if docstring:
                yield getattr(node, "lineno", 1), docstring


def test_no_docstring_names_several_parameters_in_one_entry() -> None:
    bad = []
    for package, path in PACKAGES.items():
        for source in sorted((ROOT / path / package).rglob("*.py")):
            tree = ast.parse(source.read_text(), str(source))
            for line, docstring in _docstrings(tree):
                for entry in multi_name_entries(docstring):
                    bad.append(f"{source.relative_to(ROOT)}:{line}: {entry}")
    assert bad == []


def _inherited_documented(cls: type, documented: set[type]) -> list[str]:
    """Public methods and properties ``cls`` inherits from the project's own classes that have
    no entry of their own (not in ``documented``), with a docstring (mkdocstrings leaves out
    members without one)."""
    names = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or owner is cls or owner in documented or owner.__name__ in _COMPAT:
            continue
        if not owner.__module__.startswith("agentloop"):
            continue
        member: Any = vars(owner)[name]
        function = member.fget if isinstance(member, property) else member
        function = getattr(function, "__func__", function)  # class and static methods
        if (callable(function) or isinstance(member, property)) and function.__doc__:
            names.append(name)
    return names


def test_every_inherited_public_method_is_in_the_reference(site: Path) -> None:
    pages: dict[str, list[type]] = {}
    for page in sorted((ROOT / "docs" / "reference").glob("*.md")):
        found = re.findall(r"^::: (\S+)", page.read_text(), re.MULTILINE)
        assert found, page
        classes = []
        for module_name in found:
            module = importlib.import_module(module_name)
            classes += [getattr(module, name) for name in getattr(module, "__all__", ())]
        pages[page.stem] = [c for c in classes if inspect.isclass(c)]
    documented = {cls for classes in pages.values() for cls in classes}
    missing = []
    checked = 0
    for stem, classes in pages.items():
        anchors = _anchors((site / "reference" / stem / "index.html").read_text())
        for cls in classes:
            for member in _inherited_documented(cls, documented):
                checked += 1
                if not any(anchor.endswith(f".{cls.__name__}.{member}") for anchor in anchors):
                    missing.append(f"{stem}: {cls.__name__}.{member}")
    assert checked >= 13  # the check looked at something: Agent inherits 13 from its mixins
    assert missing == []


def test_the_changelog_page_is_changelog_md(site: Path) -> None:
    # One source: docs/changelog.md includes CHANGELOG.md; every release and section of it
    # must be on the page (a broken include would leave the page with its title alone).
    html = (site / "changelog" / "index.html").read_text()
    headings = re.findall(r"^#{2,3} (.+)$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert len(headings) >= 10
    rendered = re.sub(r"<[^>]+>", "", html)
    missing = [h for h in headings if re.sub(r"[`*]", "", h) not in rendered]
    assert missing == []


def test_signature_types_link_to_their_entries(site: Path) -> None:
    # ``signature_crossrefs``: a type in a signature is a link to its entry, on its page or
    # another (``Agent(model: str | ModelSpec, ...)`` links ``ModelSpec``).
    html = (site / "reference" / "agentloop" / "index.html").read_text()
    start = html.index('id="agentloop.Agent"')
    signature = html[start : html.index("</div>", html.index('class="doc-signature', start))]
    assert 'href="#agentloop.ModelSpec"' in signature
    linked = re.findall(
        r'<a class="autorefs autorefs-internal"[^>]*href="\.\./(\w+)/#', _all_pages(site)
    )
    assert {"stream", "abc", "loop"} <= set(linked)  # links across pages too
