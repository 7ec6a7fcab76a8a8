"""The pages a newcomer looks for stay complete as the project grows: every extra is on the
install page, every provider preset and model-string provider on a provider page, every
provider page in the overview."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

from agentloop.models import ENTRY_POINT_GROUP

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_every_extra_is_on_the_install_page() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    table = (DOCS / "install.md").read_text()
    missing = [name for name in extras if f"| `[{name}]` |" not in table]
    assert len(extras) >= 10
    assert missing == []


def test_every_model_string_provider_has_a_page() -> None:
    # Every name a model string may start with (the presets and the in-process models, as
    # the distribution registers them), as ``name:`` in a code span of a provider page, and in
    # the overview's table.
    names = sorted(entry.name for entry in entry_points(group=ENTRY_POINT_GROUP))
    pages = {p.name: p.read_text() for p in (DOCS / "providers").glob("*.md")}
    overview = pages["index.md"]
    found = {name for text in pages.values() for name in re.findall(r"`(\w+):", text)}
    assert len(names) >= 17
    assert sorted(set(names) - found) == []
    assert sorted(n for n in names if f"`{n}:" not in overview) == []


def test_every_provider_page_is_in_the_overview_and_the_nav() -> None:
    overview = (DOCS / "providers" / "index.md").read_text()
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(p.name for p in (DOCS / "providers").glob("*.md") if p.name != "index.md")
    assert len(pages) >= 13
    assert [p for p in pages if f"]({p}" not in overview] == []
    assert [p for p in pages if f"providers/{p}" not in nav] == []
