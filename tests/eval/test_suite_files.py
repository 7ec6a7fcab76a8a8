"""Suites and cases from YAML, TOML and JSON files, checked when they are read."""

from __future__ import annotations

import json
import textwrap
from typing import TYPE_CHECKING

import pytest

from agentloop_eval import (
    BudgetSpec,
    Criteria,
    EvalCase,
    ExpectedCall,
    SuiteError,
    ToolExpectation,
    load_suite,
)
from agentloop_eval._case import decode_file

if TYPE_CHECKING:
    from pathlib import Path

REGISTRY = """
import agentloop as al
from agentloop_eval import Registry

registry = Registry()

@registry.tool
@al.tool
async def get_weather(city: str) -> str:
    "The weather."
    return "Sunny"

@registry.check
def short(trajectory) -> bool:
    return len(trajectory.text) < 80
"""

YAML_CASE = """
name: weather
prompt: Weather in Paris?
tools: [get_weather]
tags: [tools]
repeats: 3
expected:
  tools: [{name: get_weather, arguments: {city: Paris}}, get_weather]
  match: in_order
criteria:
  contains: [Paris]
  regex: ['\\d+']
  checks: [short]
budget: {max_turns: 3}
"""

TOML_CASE = """
name = "weather"
prompt = "Weather in Paris?"
tools = ["get_weather"]
tags = ["tools"]
repeats = 3

[expected]
tools = [{name = "get_weather", arguments = {city = "Paris"}}, "get_weather"]
match = "in_order"

[criteria]
contains = ["Paris"]
regex = ['\\d+']
checks = ["short"]

[budget]
max_turns = 3
"""

EXPECTED = EvalCase(
    name="weather",
    prompt="Weather in Paris?",
    tools=["get_weather"],
    tags=["tools"],
    repeats=3,
    expected=ToolExpectation(
        tools=[ExpectedCall(name="get_weather", arguments={"city": "Paris"}), "get_weather"],
        match="in_order",
    ),
    criteria=Criteria(contains=["Paris"], regex=[r"\d+"], checks=["short"]),
    budget=BudgetSpec(max_turns=3),
)


def write_suite(root: Path, case_file: str, case_text: str, config: str = "") -> Path:
    (root / "cases").mkdir(parents=True)
    (root / "cases" / case_file).write_text(textwrap.dedent(case_text))
    (root / "registry.py").write_text(REGISTRY)
    (root / "suite.yaml").write_text(
        "name: files\nmodel: scripted:demo\nregistry: registry.py\n" + config
    )
    return root


@pytest.mark.parametrize("form", ["yaml", "toml", "json"])
def test_a_case_reads_the_same_in_every_format(tmp_path: Path, form: str) -> None:
    text = {
        "yaml": YAML_CASE,
        "toml": TOML_CASE,
        "json": json.dumps(
            {
                "name": "weather",
                "prompt": "Weather in Paris?",
                "tools": ["get_weather"],
                "tags": ["tools"],
                "repeats": 3,
                "expected": {
                    "tools": [
                        {"name": "get_weather", "arguments": {"city": "Paris"}},
                        "get_weather",
                    ],
                    "match": "in_order",
                },
                "criteria": {"contains": ["Paris"], "regex": ["\\d+"], "checks": ["short"]},
                "budget": {"max_turns": 3},
            }
        ),
    }[form]
    suite = load_suite(write_suite(tmp_path, f"weather.{form}", text))
    assert suite.cases == [EXPECTED]
    assert suite.config.name == "files" and suite.model(EXPECTED) == "scripted:demo"
    assert set(suite.registry.tools) == {"get_weather"} and set(suite.registry.checks) == {"short"}
    assert suite.cassette_dir == tmp_path / "cassettes"


def test_a_file_may_hold_several_cases_and_settings_fill_in(tmp_path: Path) -> None:
    cases = """
    - {name: a, prompt: one, threshold: 0.5}
    - {name: b, prompt: two, model: other:m, tags: [slow], timeout: 5, repeats: 2}
    """
    config = (
        "repeats: 4\ntimeout: 30\nthresholds: {default: 0.9, cases: {b: 0.7}, tags: {slow: 0.8}}\n"
    )
    suite = load_suite(write_suite(tmp_path, "two.yml", cases, config) / "suite.yaml")
    a, b = suite.cases
    assert (suite.repeats(a), suite.repeats(b)) == (4, 2)
    assert (suite.timeout(a), suite.timeout(b)) == (30.0, 5.0)
    assert (suite.threshold(a), suite.threshold(b)) == (0.5, 0.7)
    assert (suite.model(a), suite.model(b)) == ("scripted:demo", "other:m")
    assert [c.name for c in suite.select(tags=["slow"]).cases] == ["b"]
    assert [c.name for c in suite.select(names=["a"]).cases] == ["a"]
    assert suite.select() is suite


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("name: x\nprompt: p\ncriteria: {contain: [a]}\n", "unknown field `contain`"),
        ("name: x\n", "missing required field `prompt`"),
        ("name: ../x\nprompt: p\n", "case name '../x'"),
        ("name: x\nprompt: p\nrepeats: 0\n", "line 3: repeats must be between 1 and 10000, not 0"),
        ("name: x\nprompt: p\nthreshold: 2\n", "threshold must be between 0 and 1"),
        ("name: x\nprompt: p\ntools: [nope]\n", "no tool named 'nope'"),
        ("name: x\nprompt: p\nagent: nope\n", "no agent named 'nope'"),
        ("name: x\nprompt: p\ncriteria: {checks: [nope]}\n", "no check named 'nope'"),
        ("name: x\nprompt: p\ncriteria: {regex: ['(']}\n", "case 'x': missing \\)"),
        ("name: x\nprompt: p\ncriteria: {json_schema: {type: 5}}\n", "invalid JSON Schema"),
        (
            "name: x\nprompt: p\nexpected: {tools: [a], match: sorted}\n",
            "Invalid enum value 'sorted'",
        ),
        ("- {name: x, prompt: p}\n- {name: x, prompt: q}\n", "case 'x' is defined twice"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)
def test_mistakes_are_found_when_reading(tmp_path: Path, case: str, message: str) -> None:
    write_suite(tmp_path, "bad.yaml", case)
    with pytest.raises(SuiteError, match=message):
        load_suite(tmp_path)


def test_settings_mistakes(tmp_path: Path) -> None:
    write_suite(tmp_path, "a.yaml", "name: a\nprompt: p\n", "concurrency: 0\n")
    with pytest.raises(
        SuiteError, match="suite.yaml, line 4: concurrency must be between 1 and 1000, not 0"
    ):
        load_suite(tmp_path)
    (tmp_path / "suite.yaml").write_text("name: s\nregistry: registry.py\n")
    with pytest.raises(SuiteError, match="case 'a': no model, and the suite names none"):
        load_suite(tmp_path)
    (tmp_path / "suite.yaml").write_text("name: s\nmodel: m:m\nregistry: nothing.py\n")
    with pytest.raises(SuiteError, match="nothing.py does not exist"):
        load_suite(tmp_path)
    (tmp_path / "suite.yaml").write_text("name: s\nmodel: m:m\nregistry: 'registry.py:other'\n")
    with pytest.raises(SuiteError, match="no Registry named 'other'"):
        load_suite(tmp_path)
    (tmp_path / "suite.yaml").write_text("name: s\nmodel: m:m\ncases: [elsewhere]\n")
    with pytest.raises(SuiteError, match="no case file or folder"):
        load_suite(tmp_path)
    (tmp_path / "suite.yaml").unlink()
    with pytest.raises(SuiteError, match="no suite.yaml or suite.yml"):
        load_suite(tmp_path)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(SuiteError, match="unknown file type"):
        decode_file(tmp_path / "notes.txt", EvalCase)


def test_a_registry_by_module_name(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"name": "a", "prompt": "p", "tools": ["get_weather"]}')
    (tmp_path / "suite.json").write_text(
        json.dumps(
            {
                "name": "s",
                "model": "m:m",
                "registry": "tests.eval._registry_module:tools",
                "cases": ["*.json"],
            }
        )
    )
    suite = load_suite(tmp_path / "suite.json")
    assert [c.name for c in suite.cases] == ["a"]
    assert "get_weather" in suite.registry.tools
    (tmp_path / "suite.json").write_text('{"name": "s", "registry": "no.such.module"}')
    with pytest.raises(SuiteError, match="cannot import the registry module 'no.such.module'"):
        load_suite(tmp_path / "suite.json")


def test_yaml_without_pyyaml_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "yaml" else real(name, *a)
    )
    (tmp_path / "a.yaml").write_text("name: a\nprompt: p\n")
    with pytest.raises(SuiteError, match=r"needs PyYAML: pip install 'anyio-agentloop\[eval\]'"):
        decode_file(tmp_path / "a.yaml", EvalCase)
