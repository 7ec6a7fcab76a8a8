"""agentloop_eval: evaluate agents — trajectories, golden paths, budgets, cassettes, a CI gate.

=========================  ============================================================
name                       what it is
=========================  ============================================================
``TrajectoryCollector``    an event subscriber recording a run as a ``Trajectory``
``ToolPath`` ...           matchers: golden tool paths, response criteria, LLM judge,
                           efficiency and budgets; each gives a ``Check``
``EvalCase``, ``Suite``    cases and suites, from YAML, TOML or JSON files (``load_suite``)
``run_suite``              runs every case concurrently, repeats and timeouts, cassettes
``Cassette``               model answers recorded once, replayed offline event for event
``Report``                 the results; ``render_table``/``_markdown``/``_junit``
``gate``                   thresholds per case, tag and suite; baseline comparison
=========================  ============================================================

The command line is ``python -m agentloop_eval run|report|gate`` (``agentloop eval`` when the
coding agent is installed). Install with ``pip install 'anyio-agentloop[eval]'`` (PyPI's
PyYAML, for YAML files). Imports ``agentloop`` and nothing else of this project; runs on
asyncio and trio.
"""

from __future__ import annotations

import importlib
from importlib.util import find_spec as _find_spec
from typing import TYPE_CHECKING, Any


# Checked without importing anything heavy, so that ``import agentloop_eval.cli`` (the
# ``agentloop`` command listing its subcommands) stays fast.
def _installed(module: str) -> bool:
    try:
        return _find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install, or a finder that refuses it
        return False


for _module in ("yaml",):
    if not _installed(_module):
        from agentloop import MissingExtra

        raise MissingExtra("agentloop_eval", "eval", missing=_module)

if TYPE_CHECKING:
    from ._budget import (
        Budget as Budget,
        BudgetGuard as BudgetGuard,
        DuplicateCalls as DuplicateCalls,
        Steps as Steps,
        duplicate_call_ratio as duplicate_call_ratio,
        step_ratio as step_ratio,
    )
    from ._case import (
        BudgetSpec as BudgetSpec,
        Criteria as Criteria,
        EfficiencySpec as EfficiencySpec,
        EvalCase as EvalCase,
        JudgeSpec as JudgeSpec,
        SuiteConfig as SuiteConfig,
        Thresholds as Thresholds,
        ToolExpectation as ToolExpectation,
    )
    from ._cassette import (
        Cassette as Cassette,
        RecordingStream as RecordingStream,
        ReplayStream as ReplayStream,
        request_key as request_key,
    )
    from ._cli import main as main
    from ._errors import (
        CassetteError as CassetteError,
        EvalError as EvalError,
        ReportError as ReportError,
        SuiteError as SuiteError,
    )
    from ._gate import Comparison as Comparison, GateResult as GateResult, gate as gate
    from ._judge import LlmJudge as LlmJudge
    from ._matchers import (
        Check as Check,
        Contains as Contains,
        Custom as Custom,
        ExpectedCall as ExpectedCall,
        JsonSchema as JsonSchema,
        Matcher as Matcher,
        MatchMode as MatchMode,
        NotContains as NotContains,
        Regex as Regex,
        ToolPath as ToolPath,
    )
    from ._render import (
        render_junit as render_junit,
        render_markdown as render_markdown,
        render_table as render_table,
    )
    from ._report import (
        CaseResult as CaseResult,
        Report as Report,
        RunResult as RunResult,
        Status as Status,
        load_report as load_report,
        save_report as save_report,
    )
    from ._runner import CassetteMode as CassetteMode, run_suite as run_suite
    from ._stats import pass_at_k as pass_at_k, rate_difference as rate_difference, wilson as wilson
    from ._suite import (
        Registry as Registry,
        Setup as Setup,
        Suite as Suite,
        load_suite as load_suite,
    )
    from ._trajectory import (
        ToolStep as ToolStep,
        Trajectory as Trajectory,
        TrajectoryCollector as TrajectoryCollector,
        Turn as Turn,
    )

__all__ = [
    "Budget",
    "BudgetGuard",
    "BudgetSpec",
    "CaseResult",
    "Cassette",
    "CassetteError",
    "CassetteMode",
    "Check",
    "Comparison",
    "Contains",
    "Criteria",
    "Custom",
    "DuplicateCalls",
    "EfficiencySpec",
    "EvalCase",
    "EvalError",
    "ExpectedCall",
    "GateResult",
    "JsonSchema",
    "JudgeSpec",
    "LlmJudge",
    "MatchMode",
    "Matcher",
    "NotContains",
    "RecordingStream",
    "Regex",
    "Registry",
    "ReplayStream",
    "Report",
    "ReportError",
    "RunResult",
    "Setup",
    "Status",
    "Steps",
    "Suite",
    "SuiteConfig",
    "SuiteError",
    "Thresholds",
    "ToolExpectation",
    "ToolPath",
    "ToolStep",
    "Trajectory",
    "TrajectoryCollector",
    "Turn",
    "duplicate_call_ratio",
    "gate",
    "load_report",
    "load_suite",
    "main",
    "pass_at_k",
    "rate_difference",
    "render_junit",
    "render_markdown",
    "render_table",
    "request_key",
    "run_suite",
    "save_report",
    "step_ratio",
    "wilson",
]

_WHERE: dict[str, str] = {
    "Budget": "._budget",
    "BudgetGuard": "._budget",
    "DuplicateCalls": "._budget",
    "Steps": "._budget",
    "duplicate_call_ratio": "._budget",
    "step_ratio": "._budget",
    "BudgetSpec": "._case",
    "Criteria": "._case",
    "EfficiencySpec": "._case",
    "EvalCase": "._case",
    "JudgeSpec": "._case",
    "SuiteConfig": "._case",
    "Thresholds": "._case",
    "ToolExpectation": "._case",
    "Cassette": "._cassette",
    "RecordingStream": "._cassette",
    "ReplayStream": "._cassette",
    "request_key": "._cassette",
    "main": "._cli",
    "CassetteError": "._errors",
    "EvalError": "._errors",
    "ReportError": "._errors",
    "SuiteError": "._errors",
    "Comparison": "._gate",
    "GateResult": "._gate",
    "gate": "._gate",
    "LlmJudge": "._judge",
    "Check": "._matchers",
    "Contains": "._matchers",
    "Custom": "._matchers",
    "ExpectedCall": "._matchers",
    "JsonSchema": "._matchers",
    "Matcher": "._matchers",
    "MatchMode": "._matchers",
    "NotContains": "._matchers",
    "Regex": "._matchers",
    "ToolPath": "._matchers",
    "render_junit": "._render",
    "render_markdown": "._render",
    "render_table": "._render",
    "CaseResult": "._report",
    "Report": "._report",
    "RunResult": "._report",
    "Status": "._report",
    "load_report": "._report",
    "save_report": "._report",
    "CassetteMode": "._runner",
    "run_suite": "._runner",
    "pass_at_k": "._stats",
    "rate_difference": "._stats",
    "wilson": "._stats",
    "Registry": "._suite",
    "Setup": "._suite",
    "Suite": "._suite",
    "load_suite": "._suite",
    "ToolStep": "._trajectory",
    "Trajectory": "._trajectory",
    "TrajectoryCollector": "._trajectory",
    "Turn": "._trajectory",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
