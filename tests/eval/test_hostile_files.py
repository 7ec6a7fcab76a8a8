"""Hostile suites, cases, cassettes and reports, read by ``python -m agentloop_eval`` run as a
user runs it: each ends in one line on stderr naming the file, the line and the limit, and exit
status 2, without a traceback, a hang or a memory blow-up (the command runs with its address
space capped, so a regression fails here instead of swapping the machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and rlimits are POSIX")

REGISTRY = """
import agentloop as al
from agentloop.models import ResolvedModel, register_provider
from agentloop.testing import FunctionStream, reply_text
from agentloop_eval import Registry

def answer(context):
    asked = context.messages[-1].text
    return reply_text("x" * 2_000_000 if "huge" in asked else "It is Paris.")

def factory(model_id):
    spec = al.ModelSpec(provider="hostiletest", model_id=model_id)
    return ResolvedModel(spec, FunctionStream(answer))

register_provider("hostiletest", factory, replace=True)
registry = Registry()
"""
SUITE = "name: hostile\nmodel: hostiletest:m\nregistry: registry.py\n"
MEMORY_CAP = 3 * 1024**3  # bytes of address space the command may use


def _cap_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_cli(*args: str | Path) -> tuple[int, str]:
    """Run the command; its exit status and its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "agentloop_eval", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,  # a hang (a FIFO opened for reading) fails the test instead of the run
        preexec_fn=_cap_memory,
        env={**os.environ, "PYTHONFAULTHANDLER": ""},
    )
    return done.returncode, done.stderr


def assert_one_line(code: int, err: str, *parts: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2, err[-2000:]
    assert len(lines) == 1, err[-2000:]
    for part in parts:
        assert part in lines[0], lines[0]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    (root / "cases").mkdir(parents=True)
    (root / "registry.py").write_text(REGISTRY)
    (root / "suite.yaml").write_text(SUITE)
    return root


def test_a_huge_repeat_count_is_refused_with_its_line_and_limit(suite: Path) -> None:
    (suite / "cases" / "c.yaml").write_text("- name: a\n  prompt: hi\n  repeats: 1000000000\n")
    code, err = run_cli("run", suite, "-q")
    assert_one_line(code, err, "c.yaml, line 3", "repeats must be between 1 and 10000")


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("concurrency: 100000000000", "concurrency must be between 1 and 1000"),
        ("repeats: 1000000000", "repeats must be between 1 and 10000"),
        ("timeout: .nan", "timeout must be a finite number more than 0"),
    ],
)
def test_suite_counts_are_capped(suite: Path, setting: str, message: str) -> None:
    (suite / "cases" / "c.yaml").write_text("- {name: a, prompt: hi}\n")
    (suite / "suite.yaml").write_text(SUITE + setting + "\n")
    code, err = run_cli("run", suite, "-q")
    assert_one_line(code, err, "suite.yaml, line 4", message)


def test_the_runs_of_a_suite_are_capped(suite: Path) -> None:
    cases = "".join(f"- {{name: c{i}, prompt: hi, repeats: 10000}}\n" for i in range(11))
    (suite / "cases" / "c.yaml").write_text(cases)
    code, err = run_cli("run", suite, "-q")
    assert_one_line(code, err, "110000 runs, more than the limit of 100000")


@pytest.mark.parametrize("option", ["--repeat", "-j"])
def test_count_options_are_capped(suite: Path, option: str) -> None:
    (suite / "cases" / "c.yaml").write_text("- {name: a, prompt: hi}\n")
    code, err = run_cli("run", suite, "-q", option, "1000000000")
    assert code == 2
    assert "is not between 1 and" in err


BILLION_LAUGHS = """\
- name: p
  prompt: hi
  expected:
    tools:
      - name: t
        arguments:
          a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
          b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
          c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
          d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
          e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
          f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
          g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
          h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
          i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_yaml_aliases_are_refused(suite: Path) -> None:
    (suite / "cases" / "c.yaml").write_text(BILLION_LAUGHS)
    code, err = run_cli("run", suite, "-q")
    assert_one_line(code, err, "c.yaml, line 7", "YAML anchors and aliases are not allowed")


@pytest.mark.parametrize("form", ["toml", "json", "yaml"])
def test_deep_nesting_is_refused_with_its_line(suite: Path, form: str) -> None:
    deep = "[" * 5000 + "]" * 5000
    (suite / "cases" / "c.yaml").write_text("- {name: a, prompt: hi}\n")
    (suite / "suite.yaml").unlink()
    if form == "toml":
        text = f'name = "x"\nmodel = "hostiletest:m"\nregistry = "registry.py"\nrepeats = {deep}\n'
    elif form == "json":
        text = json.dumps({"name": "x", "model": "hostiletest:m"})[:-1] + f',\n"repeats": {deep}}}'
    else:
        text = SUITE + f"repeats: {deep}\n"
    (suite / f"suite.{form}").write_text(text)
    code, err = run_cli("run", suite, "-q")
    expected = "nested deeper than 100 levels" if form != "yaml" else "nesting depth"
    line = "line 4" if form != "json" else "line 2"
    assert_one_line(code, err, f"suite.{form}", line, expected)


def _record(suite: Path, case: str = "- {name: a, prompt: hi}\n") -> Path:
    (suite / "cases" / "c.yaml").write_text(case)
    code, err = run_cli("run", suite, "-q", "--cassettes", "record")
    assert code == 0, err
    return suite / "cassettes" / "a.jsonl"


def test_a_fifo_cassette_is_refused_without_blocking(suite: Path) -> None:
    cassette = _record(suite)
    cassette.unlink()
    os.mkfifo(cassette)
    code, err = run_cli("run", suite, "-q", "--cassettes", "replay")
    assert_one_line(code, err, "a.jsonl: not a regular file")


def test_fifo_case_and_report_files_are_refused_without_blocking(suite: Path) -> None:
    (suite / "cases" / "c.yaml").write_text("- {name: a, prompt: hi}\n")
    os.mkfifo(suite / "cases" / "trap.yaml")
    code, err = run_cli("run", suite, "-q")
    assert_one_line(code, err, "trap.yaml: not a regular file")
    os.mkfifo(suite / "report.json")
    code, err = run_cli("report", suite / "report.json")
    assert_one_line(code, err, "report.json: not a regular file")


def _cassette_lines(cassette: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in cassette.read_text().splitlines()]


def test_a_huge_cassette_line_is_refused_with_its_line_and_limit(suite: Path) -> None:
    cassette = _record(suite)
    lines = _cassette_lines(cassette)
    call = next(i for i, line in enumerate(lines) if line["kind"] == "call")
    events = lines[call]["events"]
    assert isinstance(events, list)
    delta = next(e for e in events if e["type"] == "text_delta")
    delta["delta"] = "x" * 100_000_000
    cassette.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, err = run_cli("run", suite, "-q", "--cassettes", "replay")
    limit = "more than the limit of 16777216 bytes per line"
    assert_one_line(code, err, f"a.jsonl, line {call + 1}: 100000", limit)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"kind":"call","repeat":1000000000000,"key":"k","events":[]}', "repeat 1000000000000"),
        ('{"kind":"tool","repeat":0,"key":"k","name":"t","result":{"content":[],"details":'
         + "[" * 100_000 + "]" * 100_000 + "}}",
         "nested deeper than the decoder's limit"),
    ],
    ids=["repeat", "nesting"],
)  # fmt: skip
def test_hostile_cassette_lines_end_in_one_error(suite: Path, line: str, message: str) -> None:
    cassette = _record(suite)
    with cassette.open("a") as f:
        f.write(line + "\n")
    number = len(cassette.read_text().splitlines())
    code, err = run_cli("run", suite, "-q", "--cassettes", "replay")
    assert_one_line(code, err, f"a.jsonl, line {number}: ", message)


def test_a_report_keeps_a_bounded_copy_of_a_huge_answer(suite: Path) -> None:
    case = "- {name: a, prompt: a huge answer, criteria: {contains: [xxx]}}\n"
    _record(suite, textwrap.dedent(case))
    report = suite / "r.json"
    code, err = run_cli("run", suite, "-q", "--cassettes", "replay", "--json", report)
    assert code == 0, err
    assert report.stat().st_size < 1_000_000  # was 3 copies of the 2 MB answer
    run = json.loads(report.read_text())["cases"][0]["runs"][0]
    assert run["status"] == "passed"  # the checks saw the whole answer
    assert run["trajectory"]["text"].endswith("[1934464 more characters not kept in the report]")
