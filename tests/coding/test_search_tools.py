"""glob and grep on real trees: the matcher, the pure-Python search as a killable process, rg."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from agentloop_coding import Glob, Grep, Workspace
from agentloop_coding._scan import GlobMatcher, expand_braces
from tests._programs import require

from ._helpers import call, text_of

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        "README.md": "# demo\nTODO: write docs\n",
        "src/app.py": "import os\n\ndef main():\n    return 'Hello'  # TODO\n",
        "src/util/helpers.py": "def helper():\n    return 42\n",
        "src/web/app.ts": "export const hello = 1;\n",
        "tests/test_app.py": "def test_main():\n    assert True\n",
        "node_modules/lib/index.js": "// TODO in a dependency\n",
        ".git/config": "[core] TODO\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "src" / "logo.png").write_bytes(b"\x89PNG\x00\x00TODO")
    return tmp_path


# --------------------------------------------------------------------------- the matcher


def test_glob_matcher() -> None:
    cases = [
        ("*.py", ("a.py",), True),
        ("*.py", ("src", "a.py"), False),
        ("**/*.py", ("a.py",), True),
        ("**/*.py", ("src", "x", "a.py"), True),
        ("src/**", ("src", "x", "y"), True),
        ("src/**/test_*.py", ("src", "test_a.py"), True),
        ("src/**/test_*.py", ("src", "a", "b", "test_a.py"), True),
        ("src/**/test_*.py", ("lib", "test_a.py"), False),
        ("src/*.{js,ts}", ("src", "a.ts"), True),
        ("src/*.{js,ts}", ("src", "a.py"), False),
        ("?.txt", ("a.txt",), True),
        ("[ab].txt", ("c.txt",), False),
        ("./docs/*.md", ("docs", "x.md"), True),
    ]
    for pattern, parts, expected in cases:
        assert GlobMatcher(pattern).match(parts) is expected, (pattern, parts)
    assert GlobMatcher("*.py").max_depth == 1
    assert GlobMatcher("**/x").max_depth is None
    assert expand_braces("{a,b}/{c,d}") == ["a/c", "a/d", "b/c", "b/d"]
    for bad in ("", "/etc/*", "{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}"):
        with pytest.raises(ValueError, match="."):
            GlobMatcher(bad)


def test_glob_matching_does_not_backtrack_catastrophically() -> None:
    pattern = GlobMatcher("**/" + "*a" * 12 + "*b/**/" + "*a" * 12 + "*b")
    parts = ("a" * 200,) * 30
    started = time.perf_counter()
    assert not pattern.match(parts)
    assert time.perf_counter() - started < 2.0


# --------------------------------------------------------------------------- glob


async def test_glob_finds_files_and_skips_noise(tree: Path) -> None:
    space = Workspace(tree)
    result = await call(Glob(space), pattern="**/*.py")
    assert text_of(result).splitlines() == [
        "src/app.py",
        "src/util/helpers.py",
        "tests/test_app.py",
    ]
    top = await call(Glob(space), pattern="*.md")
    assert text_of(top) == "README.md"
    under = await call(Glob(space), pattern="*.py", path="src")
    assert text_of(under) == "src/app.py"
    js = await call(Glob(space), pattern="**/*.js")
    assert text_of(js) == "(no files match)"
    named = await call(Glob(space), pattern="node_modules/**/*.js")
    assert text_of(named) == "node_modules/lib/index.js"


async def test_glob_caps_results_and_reports_bad_input(tree: Path) -> None:
    space = Workspace(tree)
    capped = await call(Glob(space, max_results=2), pattern="**/*")
    assert len(text_of(capped).splitlines()) == 3 and capped.details["truncated"] is True
    bad = await call(Glob(space), pattern="/etc/*")
    assert bad.is_error and "relative" in text_of(bad)
    not_dir = await call(Glob(space), pattern="*", path="README.md")
    assert not_dir.is_error


# --------------------------------------------------------------------------- grep


async def test_grep_python_search(tree: Path) -> None:
    space = Workspace(tree)
    grep = Grep(space, backend="python")
    result = await call(grep, pattern="TODO")
    assert text_of(result).splitlines() == [
        "README.md:2:TODO: write docs",
        "src/app.py:4:    return 'Hello'  # TODO",
    ]  # not the binary file, not .git, not node_modules
    assert result.details["backend"] == "python"
    folded = await call(grep, pattern="hello", ignore_case=True, glob="*.ts")
    assert text_of(folded) == "src/web/app.ts:1:export const hello = 1;"
    one_file = await call(grep, pattern="def", path="src/util/helpers.py")
    assert text_of(one_file) == "src/util/helpers.py:1:def helper():"
    none = await call(grep, pattern="no such text")
    assert not none.is_error and text_of(none) == "(no matches)"
    capped = await call(grep, pattern=".", max_results=3)
    assert len(text_of(capped).splitlines()) == 4 and capped.details["truncated"] is True


async def test_grep_reports_bad_input(tree: Path) -> None:
    grep = Grep(Workspace(tree), backend="python")
    invalid = await call(grep, pattern="(unclosed")
    assert invalid.is_error and "invalid regular expression" in text_of(invalid)
    missing = await call(grep, pattern="x", path="nope")
    assert missing.is_error and "does not exist" in text_of(missing)


async def test_a_runaway_regular_expression_is_stopped_at_the_deadline(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 40 + "b\n")
    grep = Grep(Workspace(tmp_path), backend="python", timeout=1.0)
    started = time.perf_counter()
    result = await call(grep, pattern="^(a+)+$")
    assert result.is_error and "longer than 1 s" in text_of(result)
    assert time.perf_counter() - started < 10


async def test_grep_with_ripgrep(tree: Path) -> None:
    require("rg", "apt-get install ripgrep")  # ``.ci/run`` installs it
    grep = Grep(Workspace(tree), backend="rg")
    result = await call(grep, pattern="TODO", glob="*.py")
    assert result.details["backend"] == "rg"
    assert text_of(result).splitlines() == ["src/app.py:4:    return 'Hello'  # TODO"]
    invalid = await call(grep, pattern="(unclosed")
    assert invalid.is_error


async def test_asking_for_ripgrep_without_it_is_an_error(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tree))
    result = await call(Grep(Workspace(tree), backend="rg"), pattern="x")
    assert result.is_error and "not installed" in text_of(result)
