"""Eval cases and suite settings as data, read from YAML, TOML or JSON files with msgspec.

A case file holds one case (a mapping) or several (a list)::

    name: weather_in_paris
    prompt: What is the weather in Paris?
    tools: [get_weather]
    tags: [tools]
    repeats: 3
    expected:
      tools: [{name: get_weather, arguments: {city: Paris}}]
      match: exact
    criteria:
      contains: [Paris]
      regex: ['\\d+ ?C']
    budget: {max_turns: 3, max_tokens: 4000}

Unknown fields are errors, so a misspelt criterion cannot silently check nothing.
"""

from __future__ import annotations

import importlib.util
import re
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from agentloop import StreamOptions

from ._errors import SuiteError
from ._limits import (
    MAX_CONCURRENCY,
    MAX_NESTING,
    MAX_REPEATS,
    MAX_STEPS,
    MAX_SUITE_FILE,
    check_count,
    check_finite,
    line_of_offset,
    nesting_error,
    read_regular,
)
from ._matchers import ExpectedCall, MatchMode

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "BudgetSpec",
    "Criteria",
    "EfficiencySpec",
    "EvalCase",
    "JudgeSpec",
    "SuiteConfig",
    "Thresholds",
    "ToolExpectation",
    "decode_file",
]

T = TypeVar("T")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class _Spec(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    pass


class ToolExpectation(_Spec, frozen=True):
    """The golden tool path: calls by name (or name and arguments) and how to compare them."""

    tools: list[str | ExpectedCall]
    match: MatchMode = "exact"
    tree: bool = False


class JudgeSpec(_Spec, frozen=True):
    """An LLM judge: the rubric, and the judge's model (default: the suite's ``judge_model``,
    then the case's model)."""

    rubric: str
    model: str | None = None


class Criteria(_Spec, frozen=True):
    """What the answer must satisfy. ``checks`` names functions in the suite's registry."""

    contains: list[str] = msgspec.field(default_factory=list)
    not_contains: list[str] = msgspec.field(default_factory=list)
    ignore_case: bool = False
    regex: list[str] = msgspec.field(default_factory=list)
    json_schema: dict[str, Any] | None = None
    checks: list[str] = msgspec.field(default_factory=list)
    judge: JudgeSpec | None = None


class BudgetSpec(_Spec, frozen=True):
    """Limits on what one run may spend."""

    max_cost: float | None = None
    max_tokens: int | None = None
    max_turns: int | None = None
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        check_finite("max_cost", self.max_cost)
        check_count("max_tokens", self.max_tokens, low=0, high=2**62)
        check_count("max_turns", self.max_turns, low=0, high=MAX_STEPS)
        check_finite("max_seconds", self.max_seconds)


class EfficiencySpec(_Spec, frozen=True):
    """Efficiency limits: repeated calls, and calls made per call of the best path."""

    max_duplicate_ratio: float | None = None
    optimal_steps: int | None = None
    max_step_ratio: float = 1.0
    tree: bool = False

    def __post_init__(self) -> None:
        check_finite("max_duplicate_ratio", self.max_duplicate_ratio)
        check_count("optimal_steps", self.optimal_steps, low=0, high=MAX_STEPS)
        check_finite("max_step_ratio", self.max_step_ratio)


class EvalCase(_Spec, frozen=True):
    """One eval case.

    Attributes:
        name: unique in the suite; letters, digits, ``_``, ``.`` and ``-`` (it names files).
        prompt: what the agent is asked.
        model: a model string (default: the suite's).
        system_prompt: the agent's system prompt.
        tools: tool names from the suite's registry.
        agent: an agent factory from the registry, to build the agent in another way.
        options: stream options of the agent's model calls.
        output_schema: a JSON Schema the run's output must be given in (typed output).
        expected: the golden tool path.
        criteria: what the answer must satisfy.
        budget: limits on cost, tokens, turns and wall time.
        efficiency: limits on repeated calls and on calls beyond the best path.
        repeats: how many times to run the case (default: the suite's).
        timeout: seconds one run may take (default: the suite's).
        threshold: the pass rate the gate requires (default: the suite's thresholds).
        tags: labels for selecting cases and for per-tag thresholds.
        record_tools: whether cassettes keep tool results too (default: the suite's).
    """

    name: str
    prompt: str
    model: str | None = None
    system_prompt: str = ""
    tools: list[str] = msgspec.field(default_factory=list)
    agent: str | None = None
    options: StreamOptions | None = None
    output_schema: dict[str, Any] | None = None
    expected: ToolExpectation | None = None
    criteria: Criteria = msgspec.field(default_factory=Criteria)
    budget: BudgetSpec | None = None
    efficiency: EfficiencySpec | None = None
    repeats: int | None = None
    timeout: float | None = None
    threshold: float | None = None
    tags: list[str] = msgspec.field(default_factory=list)
    record_tools: bool | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"case name {self.name!r}: use letters, digits, '_', '.', '-'")
        check_count("repeats", self.repeats, low=1, high=MAX_REPEATS)
        check_finite("timeout", self.timeout, strict=True)
        if self.threshold is not None and not 0.0 <= self.threshold <= 1.0:
            raise ValueError("threshold must be between 0 and 1")


class Thresholds(_Spec, frozen=True):
    """The pass rates the gate requires: per case (``cases``, else ``default``), per tag over
    all runs of the tag's cases, and over the whole suite (``suite``)."""

    default: float = 1.0
    cases: dict[str, float] = msgspec.field(default_factory=dict)
    tags: dict[str, float] = msgspec.field(default_factory=dict)
    suite: float | None = None

    def __post_init__(self) -> None:
        rates = [self.default, *self.cases.values(), *self.tags.values()]
        if self.suite is not None:
            rates.append(self.suite)
        if any(not 0.0 <= r <= 1.0 for r in rates):
            raise ValueError("thresholds must be between 0 and 1")


class SuiteConfig(_Spec, frozen=True):
    """A suite's settings (``suite.yaml``, ``suite.toml`` or ``suite.json``).

    Attributes:
        name: the suite's name, in reports.
        model: the model of cases that name none.
        judge_model: the model of LLM judges that name none (default: the case's model).
        registry: where the suite's tools, agent factories and checks are: a Python file
            relative to the suite's folder (``registry.py``) or a module (``pkg.evals``),
            optionally with ``:attribute`` (default attribute: ``registry``).
        cases: files, folders or glob patterns of case files, relative to the suite's folder.
        cassettes: the folder of the cassettes, relative to the suite's folder.
        record_tools: whether cassettes keep tool results (replayed without running the tools).
        concurrency: how many runs at once.
        repeats: how many times each case runs, unless it says otherwise.
        timeout: seconds one run may take, unless its case says otherwise.
        thresholds: the pass rates the gate requires.
        max_error_rate: the share of runs that may end in an error before the gate fails.
    """

    name: str
    model: str | None = None
    judge_model: str | None = None
    registry: str | None = None
    cases: list[str] = msgspec.field(default_factory=lambda: ["cases"])
    cassettes: str = "cassettes"
    record_tools: bool = False
    concurrency: int = 4
    repeats: int = 1
    timeout: float = 120.0
    thresholds: Thresholds = msgspec.field(default_factory=Thresholds)
    max_error_rate: float = 0.0

    def __post_init__(self) -> None:
        check_count("concurrency", self.concurrency, low=1, high=MAX_CONCURRENCY)
        check_count("repeats", self.repeats, low=1, high=MAX_REPEATS)
        check_finite("timeout", self.timeout, strict=True)
        if not 0.0 <= self.max_error_rate <= 1.0:
            raise ValueError("max_error_rate must be between 0 and 1")


def decode_file(path: Path, type: type[T]) -> T:  # noqa: A002
    """Read ``path`` (``.yaml``/``.yml``, ``.toml`` or ``.json``) as a ``type``.

    The file is read as hostile (see ``_limits``): a regular file of at most
    ``MAX_SUITE_FILE`` bytes, nested at most ``MAX_NESTING`` deep, and in YAML without anchors
    or aliases (an alias can expand a few hundred bytes into gigabytes). Errors name the line
    where the format lets us find it.

    Raises:
        SuiteError: the file cannot be read, its format is unknown, or its content does not fit.
    """
    suffix = path.suffix.lower()
    if suffix not in CASE_SUFFIXES:
        raise SuiteError(f"{path}: unknown file type (use .yaml, .yml, .toml or .json)")
    data = read_regular(path, limit=MAX_SUITE_FILE, error=SuiteError, what="suite file")
    if suffix in (".yaml", ".yml"):
        if importlib.util.find_spec("yaml") is None:  # msgspec.yaml needs PyYAML
            raise SuiteError(
                f"{path}: reading YAML needs PyYAML: pip install 'anyio-agentloop[eval]'"
            )
        _check_yaml(data, path)
    else:
        line = nesting_error(data)
        if line is not None:
            raise SuiteError(f"{path}, line {line}: nested deeper than {MAX_NESTING} levels")
    try:
        if suffix == ".toml":
            return msgspec.toml.decode(data, type=type)
        if suffix == ".json":
            return msgspec.json.decode(data, type=type)
        return msgspec.yaml.decode(data, type=type)
    except msgspec.ValidationError as exc:
        message, _, where = str(exc).partition(" - at `")
        where = where.rstrip("`") or "$"  # msgspec names no path for the top level
        line = _yaml_line(data, where, message) if suffix in (".yaml", ".yml") else None
        at = f", line {line}" if line is not None else ""
        field = f" (at {where})" if where != "$" else ""
        raise SuiteError(f"{path}{at}: {message}{field}") from None
    except msgspec.DecodeError as exc:
        text = str(exc)
        byte = _BYTE.search(text)
        at = f", line {line_of_offset(data, int(byte.group(1)))}" if byte else ""
        raise SuiteError(f"{path}{at}: not valid {suffix[1:].upper()}: {text}") from None
    except RecursionError:  # a nesting our scan did not see: still one line, never a traceback
        raise SuiteError(f"{path}: nested deeper than {MAX_NESTING} levels") from None


_BYTE = re.compile(r"\(byte (\d+)\)")
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def _yaml_loader() -> Any:
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_yaml(data: bytes, path: Path) -> None:
    """Refuse anchors, aliases and nesting past ``MAX_NESTING``, from the parser's events (a
    stream: nothing is built, so nothing can expand).

    Raises:
        SuiteError: the first one found, with its line; or the YAML is malformed.
    """
    import yaml

    depth = 0
    try:
        for event in yaml.parse(data, Loader=_yaml_loader()):
            line = event.start_mark.line + 1
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise SuiteError(
                    f"{path}, line {line}: YAML anchors and aliases are not allowed in suites "
                    "(an alias can expand without bound)"
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_NESTING:
                    raise SuiteError(
                        f"{path}, line {line}: nested deeper than {MAX_NESTING} levels"
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        raise SuiteError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None


def _yaml_line(data: bytes, where: str, message: str) -> int | None:
    """The line of the YAML node at msgspec's path ``where`` (``$[0].repeats``); for a message
    about one field of a mapping (``repeats must be ...``), that field's line."""
    import yaml

    node = yaml.compose(data, Loader=_yaml_loader())  # checked: bounded depth, no aliases
    if node is None or not where.startswith("$"):
        return None
    for match in _STEP.finditer(where):
        key, index = match.groups()
        if key is not None and isinstance(node, yaml.MappingNode):
            found = [v for k, v in node.value if k.value == key]
            if not found:
                break
            node = found[0]
        elif index is not None and isinstance(node, yaml.SequenceNode):
            if int(index) >= len(node.value):
                break
            node = node.value[int(index)]
        else:
            break
    if isinstance(node, yaml.MappingNode):
        named = message.split(" ", 1)[0]
        for key_node, _ in node.value:
            if key_node.value == named:
                return int(key_node.start_mark.line) + 1
    return int(node.start_mark.line) + 1


CASE_SUFFIXES = (".yaml", ".yml", ".toml", ".json")


def read_cases(path: Path) -> list[EvalCase]:
    """The cases in one file: a single case, or a list of them.

    Raises:
        SuiteError: as ``decode_file``.
    """
    found = decode_file(path, EvalCase | list[EvalCase])  # type: ignore[arg-type]
    return found if isinstance(found, list) else [found]
