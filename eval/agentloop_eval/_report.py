"""Reports: what a suite run found, as data that round-trips through JSON.

Every run of a case has a status: ``passed`` (every check passed), ``failed`` (the agent did
something wrong: a check failed, or its run ended in a model error of its own making), or
``error`` (it could not be judged: a timeout, throttling, a network or authentication failure,
a cassette with no answer for a request, an exception in the harness, the setup, a check or the
judge). Pass rates count passed and failed runs only; errors are kept out of the denominator
and counted on their own (the gate has a limit for them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import msgspec

from agentloop.secrets import redact, redact_bytes

from ._case import Thresholds
from ._errors import ReportError
from ._limits import MAX_REPORT_BYTES, MAX_REPORT_TEXT, read_regular
from ._matchers import Check
from ._stats import pass_at_k
from ._trajectory import Trajectory

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "CaseResult",
    "Report",
    "RunResult",
    "Status",
    "bounded",
    "clip_text",
    "load_report",
    "save_report",
]

Status: TypeAlias = Literal["passed", "failed", "error"]
"""How one run of a case ended: it ``passed`` or ``failed`` its checks, or was an ``error``
that says nothing of the agent (an abort, a timeout, an authentication, network or throttling
failure): error runs are left out of the pass rate."""


class RunResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One run of a case: its status, checks, measures, and (when kept) its trajectory."""

    case: str
    repeat: int
    status: Status
    checks: list[Check] = msgspec.field(default_factory=list)
    error: str | None = None
    duration: float = 0.0
    tokens: int = 0
    cost: float = 0.0
    turns: int = 0
    tool_calls: int = 0
    trajectory: Trajectory | None = None


class CaseResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Every run of one case, and the pass rate the gate requires of it."""

    name: str
    runs: list[RunResult]
    tags: list[str] = msgspec.field(default_factory=list)
    threshold: float = 1.0

    @property
    def passed(self) -> int:
        """Runs that passed."""
        return sum(1 for r in self.runs if r.status == "passed")

    @property
    def failed(self) -> int:
        """Runs that failed."""
        return sum(1 for r in self.runs if r.status == "failed")

    @property
    def errors(self) -> int:
        """Runs that ended in an error (not scored)."""
        return sum(1 for r in self.runs if r.status == "error")

    @property
    def scored(self) -> int:
        """Runs that count toward the pass rate (passed or failed, not errors)."""
        return self.passed + self.failed

    @property
    def pass_rate(self) -> float | None:
        """Passed over scored runs; ``None`` when no run could be scored."""
        return self.passed / self.scored if self.scored else None

    def pass_at(self, k: int) -> float | None:
        """pass@k over the scored runs; ``None`` with fewer than ``k`` of them."""
        if not 1 <= k <= self.scored:
            return None
        return pass_at_k(self.scored, self.passed, k)

    def mean(self, field: str) -> float:
        """The mean of a run measure (``tokens``, ``cost``, ``duration``, ``turns``, ...) over
        the runs that were not errors (0 when there are none)."""
        values = [getattr(r, field) for r in self.runs if r.status != "error"]
        return sum(values) / len(values) if values else 0.0


class Report(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A suite run: settings that matter to the gate, and every case's runs."""

    suite: str
    cases: list[CaseResult]
    created: str = ""
    cassettes: str = "off"
    duration: float = 0.0
    thresholds: Thresholds = msgspec.field(default_factory=Thresholds)
    max_error_rate: float = 0.0

    @property
    def runs(self) -> int:
        """Runs over every case."""
        return sum(len(c.runs) for c in self.cases)

    @property
    def passed(self) -> int:
        """Runs that passed, over every case."""
        return sum(c.passed for c in self.cases)

    @property
    def failed(self) -> int:
        """Runs that failed, over every case."""
        return sum(c.failed for c in self.cases)

    @property
    def errors(self) -> int:
        """Runs that ended in an error, over every case."""
        return sum(c.errors for c in self.cases)

    @property
    def pass_rate(self) -> float | None:
        """Passed over scored runs of every case; ``None`` when no run could be scored."""
        scored = self.passed + self.failed
        return self.passed / scored if scored else None

    def tags(self) -> list[str]:
        """Every tag of the report's cases, sorted."""
        return sorted({tag for case in self.cases for tag in case.tags})

    def tag_counts(self, tag: str) -> tuple[int, int]:
        """(passed, scored) over every run of the cases carrying ``tag``."""
        cases = [c for c in self.cases if tag in c.tags]
        return sum(c.passed for c in cases), sum(c.scored for c in cases)

    def case(self, name: str) -> CaseResult | None:
        """The case named ``name``, if the report has it."""
        return next((c for c in self.cases if c.name == name), None)

    def without_trajectories(self) -> Report:
        """The same report, trajectories left out (a smaller file)."""
        cases = [
            msgspec.structs.replace(
                c, runs=[msgspec.structs.replace(r, trajectory=None) for r in c.runs]
            )
            for c in self.cases
        ]
        return msgspec.structs.replace(self, cases=cases)


_decoder = msgspec.json.Decoder(Report)
_sizer = msgspec.json.Encoder()


def clip_text(text: str, limit: int = MAX_REPORT_TEXT) -> str:
    """``text``, or its first ``limit`` characters and a note of how many were left out;
    either way with every secret the process knows redacted (``agentloop.secrets``)."""
    if len(text) > limit:
        text = f"{text[:limit]}... [{len(text) - limit} more characters not kept in the report]"
    return redact(text)


def _clip_value(value: Any) -> Any:
    """A value (tool arguments, a typed output) as a report keeps it: itself (redacted), or a
    note when its JSON is longer than ``MAX_REPORT_TEXT``."""
    if isinstance(value, str):
        return clip_text(value)
    try:
        data = _sizer.encode(value)
    except (TypeError, ValueError, RecursionError):
        return "[a value the report cannot encode]"
    if len(data) > MAX_REPORT_TEXT:
        return f"[{len(data)} bytes of JSON, more than the {MAX_REPORT_TEXT} a report keeps]"
    clean = redact_bytes(data)
    return value if clean is data else msgspec.json.decode(clean)


def _clip_trajectory(t: Trajectory) -> Trajectory:
    replace = msgspec.structs.replace
    steps = [
        replace(
            s,
            arguments=_clip_value(s.arguments),
            result=clip_text(s.result),
            sub_agent=None if s.sub_agent is None else _clip_trajectory(s.sub_agent),
        )
        for s in t.tool_calls
    ]
    turns = [
        replace(
            turn,
            text=clip_text(turn.text),
            thinking=clip_text(turn.thinking),
            error=None if turn.error is None else clip_text(turn.error),
        )
        for turn in t.turns
    ]
    return replace(
        t,
        prompt=clip_text(t.prompt),
        text=clip_text(t.text),
        output=_clip_value(t.output),
        error=None if t.error is None else clip_text(t.error),
        turns=turns,
        tool_calls=steps,
    )


def bounded(run: RunResult) -> RunResult:
    """``run`` as a report keeps it: every text at most ``MAX_REPORT_TEXT`` characters, so an
    answer of a hundred megabytes costs the report kilobytes (the checks saw all of it)."""
    return msgspec.structs.replace(
        run,
        error=None if run.error is None else clip_text(run.error),
        checks=[msgspec.structs.replace(c, detail=clip_text(c.detail)) for c in run.checks],
        trajectory=None if run.trajectory is None else _clip_trajectory(run.trajectory),
    )


def encode_report(report: Report) -> bytes:
    """The report as indented JSON, every secret the process knows redacted."""
    return redact_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")


def decode_report(data: bytes, *, source: str = "report") -> Report:
    """Read a report from its JSON.

    Raises:
        ReportError: it is not a report.
    """
    try:
        return _decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise ReportError(f"{source}: not a report: {exc}") from None
    except RecursionError:
        raise ReportError(
            f"{source}: not a report: nested deeper than the decoder's limit"
        ) from None


def save_report(report: Report, path: Path) -> None:
    """Write ``report`` to ``path`` as JSON.

    Raises:
        ReportError: it cannot be written.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode_report(report))
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {exc}") from exc


def load_report(path: Path) -> Report:
    """Read the JSON report at ``path``.

    Raises:
        ReportError: it cannot be read, is not a regular file of at most ``MAX_REPORT_BYTES``,
            or is not a report.
    """
    data = read_regular(path, limit=MAX_REPORT_BYTES, error=ReportError, what="report")
    return decode_report(data, source=str(path))
