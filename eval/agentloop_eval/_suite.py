"""A suite: its settings, its cases, and the registry of tools, agents and checks they name.

Case files name tools (``tools: [get_weather]``), agent factories (``agent: planner``) and
check functions (``criteria: {checks: [cites_a_source]}``); the suite's ``registry`` module
provides them::

    # registry.py, beside suite.yaml
    import agentloop as al
    from agentloop_eval import Registry

    registry = Registry()

    @registry.tool
    @al.tool
    async def get_weather(city: str) -> str:
        "The weather in a city."
        return f"Sunny, 21 C in {city}."

Factories get a ``Setup``: the case, the model and the ``StreamFn`` of this run (wrapped for
recording or replaying), so that sub-agents they build share the case's cassette.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ._budget import Budget, DuplicateCalls, Steps
from ._case import CASE_SUFFIXES, EvalCase, JudgeSpec, SuiteConfig, decode_file, read_cases
from ._errors import SuiteError
from ._matchers import Contains, Custom, JsonSchema, NotContains, Regex, ToolPath

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from agentloop import Agent, AgentTool, ModelSpec
    from agentloop.stream import StreamFn

    from ._matchers import CheckFunction, Matcher

__all__ = ["Registry", "Setup", "Suite", "build_matchers", "load_registry", "load_suite"]

F = TypeVar("F")
SUITE_FILES = ("suite.yaml", "suite.yml", "suite.toml", "suite.json")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Setup:
    """What a registry factory is given to build one run of a case.

    Attributes:
        case: the case.
        model: the case's model.
        stream_fn: the provider of this run (recording or replaying when cassettes are on).
        repeat: which repeat of the case this is (0-based).
    """

    case: EvalCase
    model: ModelSpec
    stream_fn: StreamFn
    repeat: int


class Registry:
    """The tools, agent factories and check functions a suite's cases name."""

    def __init__(self) -> None:
        self.tools: dict[str, AgentTool] = {}
        self.tool_factories: dict[str, Callable[[Setup], AgentTool]] = {}
        self.agents: dict[str, Callable[[Setup, list[AgentTool]], Agent[Any]]] = {}
        self.checks: dict[str, CheckFunction] = {}

    def tool(self, tool: AgentTool, /) -> AgentTool:
        """Register ``tool`` under its name (usable as a decorator over ``@agentloop.tool``)."""
        self.tools[tool.name] = tool
        return tool

    def tool_factory(self, name: str) -> Callable[[F], F]:
        """Register a function ``(setup) -> AgentTool`` that makes the tool ``name`` for each
        run (a sub-agent tool on the case's model, say)."""

        def register(factory: F) -> F:
            self.tool_factories[name] = factory  # type: ignore[assignment]
            return factory

        return register

    def agent(self, name: str) -> Callable[[F], F]:
        """Register a function ``(setup, tools) -> Agent`` that builds the agent of the cases
        saying ``agent: name``."""

        def register(factory: F) -> F:
            self.agents[name] = factory  # type: ignore[assignment]
            return factory

        return register

    def check(self, fn: F, /) -> F:
        """Register a check function ``(trajectory) -> bool | (bool, str) | Check`` under its
        name."""
        self.checks[getattr(fn, "__name__", repr(fn))] = fn  # type: ignore[assignment]
        return fn

    def has_tool(self, name: str) -> bool:
        """Whether a tool or tool factory is registered under ``name``."""
        return name in self.tools or name in self.tool_factories

    def make_tools(self, names: Iterable[str], setup: Setup) -> list[AgentTool]:
        """The tools ``names``, factories called for this run.

        Raises:
            SuiteError: a name is not registered.
        """
        made: list[AgentTool] = []
        for name in names:
            if name in self.tool_factories:
                made.append(self.tool_factories[name](setup))
            elif name in self.tools:
                made.append(self.tools[name])
            else:
                raise SuiteError(f"no tool named {name!r} in the registry")
        return made


@dataclasses.dataclass(kw_only=True)
class Suite:
    """Settings, cases and registry; ``root`` is the folder relative paths start from."""

    config: SuiteConfig
    cases: list[EvalCase]
    registry: Registry = dataclasses.field(default_factory=Registry)
    root: Path = dataclasses.field(default_factory=Path)

    @property
    def cassette_dir(self) -> Path:
        """Where the cassettes are."""
        return self.root / self.config.cassettes

    def model(self, case: EvalCase) -> str:
        """The model string of ``case``.

        Raises:
            SuiteError: neither the case nor the suite names a model.
        """
        model = case.model or self.config.model
        if not model:
            raise SuiteError(f"case {case.name!r}: no model, and the suite names none")
        return model

    def judge_model(self, case: EvalCase, judge: JudgeSpec) -> str:
        """The model string of ``case``'s judge."""
        return judge.model or self.config.judge_model or self.model(case)

    def repeats(self, case: EvalCase) -> int:
        """How many times ``case`` runs: its own ``repeats``, else the suite's."""
        return case.repeats or self.config.repeats

    def timeout(self, case: EvalCase) -> float:
        """Seconds one run of ``case`` may take: its own, else the suite's."""
        return case.timeout or self.config.timeout

    def threshold(self, case: EvalCase) -> float:
        """The pass rate the gate requires of ``case``."""
        if case.threshold is not None:
            return case.threshold
        return self.config.thresholds.cases.get(case.name, self.config.thresholds.default)

    def record_tools(self, case: EvalCase) -> bool:
        """Whether ``case``'s tool results are recorded in cassettes: its own setting, else the
        suite's.
        """
        return self.config.record_tools if case.record_tools is None else case.record_tools

    def select(self, *, names: Iterable[str] = (), tags: Iterable[str] = ()) -> Suite:
        """The suite with only the cases named, or carrying one of ``tags`` (all when both are
        empty)."""
        names, tags = set(names), set(tags)
        if not names and not tags:
            return self
        cases = [c for c in self.cases if c.name in names or tags.intersection(c.tags)]
        return dataclasses.replace(self, cases=cases)

    def validate(self) -> None:
        """Check that names are unique and everything a case names exists.

        Raises:
            SuiteError: the first problem found.
        """
        seen: set[str] = set()
        for case in self.cases:
            where = f"case {case.name!r}"
            if case.name in seen:
                raise SuiteError(f"{where} is defined twice")
            seen.add(case.name)
            self.model(case)
            for name in case.tools:
                if not self.registry.has_tool(name):
                    raise SuiteError(f"{where}: no tool named {name!r} in the registry")
            if case.agent is not None and case.agent not in self.registry.agents:
                raise SuiteError(f"{where}: no agent named {case.agent!r} in the registry")
            for name in case.criteria.checks:
                if name not in self.registry.checks:
                    raise SuiteError(f"{where}: no check named {name!r} in the registry")
            try:
                build_matchers(self, case, judge=lambda spec: Contains(""))
            except (ValueError, re.error) as exc:
                raise SuiteError(f"{where}: {exc}") from None


def build_matchers(
    suite: Suite, case: EvalCase, *, judge: Callable[[JudgeSpec], Matcher]
) -> list[Matcher]:
    """The matchers a case's file asks for, in report order; ``judge`` makes the LLM judge.

    Raises:
        ValueError: an invalid JSON Schema or tool path mode.
        re.error: an invalid regular expression.
        KeyError: a check not in the registry.
    """
    matchers: list[Matcher] = []
    if case.expected is not None:
        e = case.expected
        matchers.append(ToolPath(e.tools, mode=e.match, tree=e.tree))
    c = case.criteria
    matchers += [Contains(text, ignore_case=c.ignore_case) for text in c.contains]
    matchers += [NotContains(text, ignore_case=c.ignore_case) for text in c.not_contains]
    matchers += [Regex(pattern) for pattern in c.regex]
    if c.json_schema is not None:
        matchers.append(JsonSchema(c.json_schema))
    matchers += [Custom(suite.registry.checks[name], name=name) for name in c.checks]
    if c.judge is not None:
        matchers.append(judge(c.judge))
    if case.efficiency is not None:
        f = case.efficiency
        if f.max_duplicate_ratio is not None:
            matchers.append(DuplicateCalls(f.max_duplicate_ratio, tree=f.tree))
        if f.optimal_steps is not None:
            matchers.append(Steps(f.optimal_steps, max_ratio=f.max_step_ratio, tree=f.tree))
    if case.budget is not None:
        b = case.budget
        matchers.append(
            Budget(
                max_cost=b.max_cost,
                max_tokens=b.max_tokens,
                max_turns=b.max_turns,
                max_seconds=b.max_seconds,
            )
        )
    return matchers


def load_registry(ref: str, root: Path) -> Registry:
    """The ``Registry`` that ``ref`` names: ``file.py[:attr]`` relative to ``root``, or
    ``package.module[:attr]``; the attribute defaults to ``registry``.

    Raises:
        SuiteError: the module cannot be found, or has no such ``Registry``.
    """
    module_ref, _, attribute = ref.partition(":")
    attribute = attribute or "registry"
    if module_ref.endswith(".py"):
        path = (root / module_ref).resolve()
        if not path.is_file():
            raise SuiteError(f"registry file {path} does not exist")
        name = "_agentloop_eval_registry_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # so that its classes can find their module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
    else:
        try:
            module = importlib.import_module(module_ref)
        except ImportError as exc:
            raise SuiteError(f"cannot import the registry module {module_ref!r}: {exc}") from exc
    registry = getattr(module, attribute, None)
    if not isinstance(registry, Registry):
        raise SuiteError(f"{module_ref} has no Registry named {attribute!r}")
    return registry


def _case_files(root: Path, entry: str) -> list[Path]:
    path = root / entry
    if any(ch in entry for ch in "*?["):
        return sorted(p for p in root.glob(entry) if p.suffix.lower() in CASE_SUFFIXES)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix.lower() in CASE_SUFFIXES)
    if path.is_file():
        return [path]
    raise SuiteError(f"no case file or folder {path}")


def load_suite(path: str | Path) -> Suite:
    """Read a suite: a folder holding ``suite.yaml`` (or ``.yml``, ``.toml``, ``.json``), or
    that file itself; its cases and registry with it.

    Raises:
        SuiteError: a file is missing or malformed, or a case names something that does not
            exist.
    """
    path = Path(path)
    if not path.exists():
        raise SuiteError(f"no suite at {path}")
    if path.is_dir():
        found = [path / name for name in SUITE_FILES if (path / name).is_file()]
        if not found:
            raise SuiteError(f"no {' or '.join(SUITE_FILES)} in {path}")
        path = found[0]
    config = decode_file(path, SuiteConfig)
    root = path.parent
    registry = Registry() if config.registry is None else load_registry(config.registry, root)
    files = [f for entry in config.cases for f in _case_files(root, entry) if f != path]
    cases = [case for f in files for case in read_cases(f)]
    suite = Suite(config=config, cases=cases, registry=registry, root=root)
    suite.validate()
    return suite
