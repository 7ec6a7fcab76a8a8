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
from ._suite import Registry as Registry, Setup as Setup, Suite as Suite, load_suite as load_suite
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
