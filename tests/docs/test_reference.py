"""The API reference renders every documented public method, inherited ones included.

mkdocstrings renders only the members a class defines itself unless a page lists inherited
ones. That is enough where the base class has its own entry in the reference (``Tool``,
``HttpProvider``: the page links to it); where the base is private (``Agent``'s mixins, the
session stores' threaded base) its methods would be missing from the reference altogether. The
site is built (``mkdocs build --strict``) and each page's anchors compared with the methods and
properties its module's classes inherit from the project's undocumented classes.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_COMPAT = {"AgentCompat"}  # the deprecated names: left out of the reference on purpose


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


def test_every_inherited_public_method_is_in_the_reference(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=300,
    )
    pages = {}
    for page in sorted((ROOT / "docs" / "reference").glob("*.md")):
        found = re.search(r"^::: (\S+)", page.read_text(), re.MULTILINE)
        assert found is not None, page
        module = importlib.import_module(found.group(1))
        classes = [getattr(module, name) for name in getattr(module, "__all__", ())]
        pages[page.stem] = [c for c in classes if inspect.isclass(c)]
    documented = {cls for classes in pages.values() for cls in classes}
    missing = []
    checked = 0
    for stem, classes in pages.items():
        html = (site / "reference" / stem / "index.html").read_text()
        anchors = set(re.findall(r'id="([\w.]+)"', html))
        for cls in classes:
            for member in _inherited_documented(cls, documented):
                checked += 1
                if not any(anchor.endswith(f".{cls.__name__}.{member}") for anchor in anchors):
                    missing.append(f"{stem}: {cls.__name__}.{member}")
    assert checked >= 13  # the check looked at something: Agent inherits 13 from its mixins
    assert missing == []
