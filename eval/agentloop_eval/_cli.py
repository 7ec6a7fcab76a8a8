"""The command line: ``python -m agentloop_eval`` (``agentloop eval`` runs the same).

::

    agentloop eval run eval/suite --cassettes replay --json report.json --junit junit.xml
    agentloop eval run eval/suite --cassettes record          record every case's cassette
    agentloop eval report report.json --format markdown      render a saved report
    agentloop eval gate report.json --baseline main.json     exit 1 if it does not pass

Exit status: 0 done (and the gate passed, when asked), 1 the gate failed, 2 a usage error (a
malformed suite, case, cassette or report file; a bad option).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from agentloop import UnknownModel

from ._errors import EvalError
from ._gate import gate, thresholds_of
from ._limits import MAX_CONCURRENCY, MAX_REPEATS
from ._render import render_junit, render_markdown, render_table
from ._report import encode_report, load_report, save_report
from ._runner import run_suite
from ._suite import load_suite

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ._case import Thresholds
    from ._gate import GateResult
    from ._report import Report, RunResult

__all__ = ["main"]

EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE = 0, 1, 2
_MARKS = {"passed": ".", "failed": "F", "error": "E"}


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def _count(high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not 1 <= value <= high:
            raise argparse.ArgumentTypeError(f"{text} is not between 1 and {high}")
        return value

    return parse


def _named_rate(text: str) -> tuple[str, float]:
    name, sep, value = text.rpartition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=RATE, not {text!r}")
    return name, _rate(value)


def _gate_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("gate")
    group.add_argument("--baseline", type=Path, help="a report to compare with")
    group.add_argument("--threshold", type=_rate, help="the pass rate every case needs")
    group.add_argument(
        "--case-threshold", type=_named_rate, action="append", default=[], metavar="CASE=RATE"
    )
    group.add_argument(
        "--tag-threshold", type=_named_rate, action="append", default=[], metavar="TAG=RATE"
    )
    group.add_argument("--suite-threshold", type=_rate, metavar="RATE")
    group.add_argument("--max-error-rate", type=_rate, metavar="RATE")
    group.add_argument("--confidence", type=float, default=0.95, help="default: 0.95")
    group.add_argument("--margin", type=_rate, default=0.0, help="drops never regressions")


def build_parser(prog: str) -> argparse.ArgumentParser:
    """The parser of the evaluation command line."""
    parser = argparse.ArgumentParser(prog=prog, description="Evaluate agents: run, report, gate.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = commands.add_parser("run", help="run a suite")
    run.add_argument("suite", type=Path, help="the suite's folder or its suite.yaml")
    run.add_argument(
        "--cassettes",
        choices=["off", "record", "replay", "once"],
        default="off",
        help="off (default): call the models; record; replay (offline); once",
    )
    run.add_argument("-j", "--concurrency", type=_count(MAX_CONCURRENCY), help="runs at once")
    run.add_argument("--repeat", type=_count(MAX_REPEATS), help="runs per case, for every case")
    run.add_argument("-k", "--case", action="append", default=[], help="only this case")
    run.add_argument("-t", "--tag", action="append", default=[], help="only cases with this tag")
    run.add_argument("--json", type=Path, help="write the report as JSON here")
    run.add_argument("--markdown", type=Path, help="write the report as Markdown here")
    run.add_argument("--junit", type=Path, help="write the report as JUnit XML here")
    run.add_argument("--no-trajectories", action="store_true", help="leave them out of --json")
    run.add_argument("--gate", action="store_true", help="then gate the report (exit 1 if not)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress marks")
    run.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    _gate_options(run)

    report = commands.add_parser("report", help="render a saved report")
    report.add_argument("report", type=Path)
    report.add_argument("--format", choices=["table", "markdown", "junit", "json"], default="table")
    report.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    report.add_argument(
        "--pass-k", type=_count(MAX_REPEATS), default=3, metavar="K", help="pass@K column"
    )

    gate_parser = commands.add_parser("gate", help="exit 1 unless a report passes")
    gate_parser.add_argument("report", type=Path)
    gate_parser.add_argument("--markdown", type=Path, help="write report and decision here")
    _gate_options(gate_parser)
    return parser


def _thresholds(report: Report, args: argparse.Namespace) -> Thresholds:
    import msgspec

    limits = thresholds_of(report)
    cases = dict(limits.cases)
    if args.threshold is not None:
        cases = dict.fromkeys(cases, args.threshold)
    cases.update(dict(args.case_threshold))
    tags = {**limits.tags, **dict(args.tag_threshold)}
    suite = args.suite_threshold if args.suite_threshold is not None else limits.suite
    default = args.threshold if args.threshold is not None else limits.default
    return msgspec.structs.replace(limits, default=default, cases=cases, tags=tags, suite=suite)


def _gate(report: Report, args: argparse.Namespace) -> GateResult:
    baseline = load_report(args.baseline) if args.baseline is not None else None
    return gate(
        report,
        baseline=baseline,
        thresholds=_thresholds(report, args),
        max_error_rate=args.max_error_rate,
        confidence=args.confidence,
        margin=args.margin,
    )


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _progress(result: RunResult) -> None:
    print(_MARKS[result.status], end="", file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> int:
    suite = load_suite(args.suite).select(names=args.case, tags=args.tag)
    if not suite.cases:
        raise EvalError("no case selected")
    on_run: Any = None if args.quiet else _progress
    report = anyio.run(
        lambda: run_suite(
            suite,
            cassettes=args.cassettes,
            concurrency=args.concurrency,
            repeats=args.repeat,
            on_run=on_run,
        ),
        backend=args.backend,
    )
    if not args.quiet:
        print(file=sys.stderr)
    print(render_table(report))
    if args.json is not None:
        save_report(report.without_trajectories() if args.no_trajectories else report, args.json)
    if args.junit is not None:
        _write(args.junit, render_junit(report))
    decision = _gate(report, args) if args.gate else None
    if args.markdown is not None:
        _write(args.markdown, render_markdown(report, gate=decision))
    if decision is None:
        return EXIT_OK
    print(decision.summary())
    return EXIT_OK if decision.passed else EXIT_GATE_FAILED


def _report(args: argparse.Namespace) -> int:
    report = load_report(args.report)
    if args.format == "table":
        text = render_table(report, k=args.pass_k) + "\n"
    elif args.format == "markdown":
        text = render_markdown(report, k=args.pass_k)
    elif args.format == "junit":
        text = render_junit(report)
    else:
        text = encode_report(report).decode()
    if args.output is not None:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _gate_command(args: argparse.Namespace) -> int:
    report = load_report(args.report)
    decision = _gate(report, args)
    print(decision.summary())
    if args.markdown is not None:
        _write(args.markdown, render_markdown(report, gate=decision))
    return EXIT_OK if decision.passed else EXIT_GATE_FAILED


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m agentloop_eval") -> int:
    """Run the evaluation command line; returns the exit status."""
    parser = build_parser(prog)
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return EXIT_OK if exc.code in (0, None) else EXIT_USAGE
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "report":
            return _report(args)
        return _gate_command(args)
    except (EvalError, UnknownModel, ValueError, OSError) as exc:
        # One line, whatever the message holds (a YAML error spans several).
        print(f"{prog}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
