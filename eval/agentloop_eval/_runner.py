"""The runner: every repeat of every case as a child task, at most ``concurrency`` at once.

Each run builds its agent afresh (tools from the registry, the case's model resolved, or
replayed from its cassette), collects its trajectory, and checks it. A run's timeout is a
``fail_after`` inside the run's own task, started once the run has its slot, so waiting for a
slot never counts against it.
"""

from __future__ import annotations

import datetime
import time
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio
import msgspec

from agentloop import (
    Aborted,
    Agent,
    AgentError,
    AgentResult,
    ErrorKind,
    HookFailed,
    ModelError,
    StopReason,
    StructuredOutputFailed,
)
from agentloop.models import resolve_model
from agentloop.multi import PipelineTool, SubAgentTool

from ._budget import BudgetGuard
from ._cassette import Cassette, RecordingStream, RecordingTool, ReplayStream, ReplayTool
from ._judge import LlmJudge
from ._matchers import Check
from ._report import CaseResult, Report, RunResult, Status
from ._suite import Setup, Suite, build_matchers
from ._trajectory import TrajectoryCollector

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from agentloop import AgentTool, ModelSpec
    from agentloop.stream import StreamFn

    from ._case import EvalCase, JudgeSpec

__all__ = ["INFRASTRUCTURE_ERRORS", "CassetteMode", "run_suite"]

CassetteMode: TypeAlias = Literal["off", "record", "replay", "once"]
"""``off``: call the models. ``record``: call them and write each case's cassette.
``replay``: answer from the cassettes only (offline). ``once``: replay the cases that have a
cassette, record the others."""

INFRASTRUCTURE_ERRORS = frozenset({ErrorKind.THROTTLED, ErrorKind.NETWORK, ErrorKind.AUTH})
"""Model failures that say nothing about the agent: its runs are errors, not failures."""


class _Infrastructure(Exception):
    """The run could not be judged (kept out of pass rates)."""


class _Models:
    """The models of one run: resolved (and recorded), or replayed from the cassette."""

    def __init__(
        self, mode: CassetteMode, cassette: Cassette | None, repeat: int, *, tools: bool
    ) -> None:
        self.mode = mode
        self.cassette = cassette
        self.repeat = repeat
        self.tools = tools
        self.replay = (
            ReplayStream(cassette, repeat=repeat) if mode == "replay" and cassette else None
        )
        self.replay_tools: list[ReplayTool] = []
        self.opened: list[Any] = []

    def get(self, model: str) -> tuple[ModelSpec, StreamFn]:
        if self.replay is not None:
            assert self.cassette is not None
            spec = self.cassette.models.get(model)
            if spec is None:
                raise _Infrastructure(f"the cassette has no model {model!r}")
            return spec, self.replay
        spec, stream_fn = resolve_model(model)
        self.opened.append(stream_fn)
        if self.mode == "record" and self.cassette is not None:
            self.cassette.models[model] = spec
            return spec, RecordingStream(stream_fn, self.cassette, repeat=self.repeat)
        return spec, stream_fn

    def wrap(self, tool: AgentTool) -> AgentTool:
        if not self.tools or self.cassette is None or isinstance(tool, SubAgentTool | PipelineTool):
            return tool  # a sub-agent runs; its model calls are on the cassette
        if self.replay is not None:
            replaying = ReplayTool(tool, self.cassette, repeat=self.repeat)
            self.replay_tools.append(replaying)
            return replaying
        return RecordingTool(tool, self.cassette, repeat=self.repeat)

    def misses(self) -> list[str]:
        found = [] if self.replay is None else list(self.replay.misses)
        for tool in self.replay_tools:
            found += tool.misses
        return [f"{m.what} (key {m.key})" for m in found]

    async def aclose(self) -> None:
        for stream_fn in self.opened:
            close = getattr(stream_fn, "aclose", None)
            if close is not None:
                with anyio.move_on_after(5, shield=True):
                    await close()


def _failure_of(result: AgentResult[Any]) -> tuple[Status, str] | None:
    if result.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
        return None
    message = result.error or f"the run ended: {result.stop_reason}"
    if result.stop_reason is StopReason.ABORTED or result.error_kind in INFRASTRUCTURE_ERRORS:
        return "error", message
    return "failed", message


class _SuiteRun:
    def __init__(
        self,
        suite: Suite,
        *,
        mode: CassetteMode,
        concurrency: int,
        repeats: int | None,
        keep_trajectories: bool,
        on_run: Callable[[RunResult], object] | None,
    ) -> None:
        self.suite = suite
        self.mode = mode
        self.limiter = anyio.CapacityLimiter(concurrency)
        self.repeats = repeats
        self.keep = keep_trajectories
        self.on_run = on_run
        self.results: dict[str, CaseResult] = {}

    async def case(self, case: EvalCase) -> None:
        path = cassette_path(self.suite, case)
        mode = self.mode
        if mode == "once":
            mode = "replay" if await anyio.Path(path).exists() else "record"
        cassette: Cassette | None = None
        problem: str | None = None
        if mode == "record":
            cassette = Cassette(case.name)
        elif mode == "replay":
            try:
                cassette = await anyio.to_thread.run_sync(Cassette.load, path)
            except AgentError as exc:
                problem = f"{exc} (record it with cassettes 'record' or 'once')"
        n = self.repeats or self.suite.repeats(case)
        runs: list[RunResult | None] = [None] * n
        async with anyio.create_task_group() as tg:
            for repeat in range(n):
                tg.start_soon(self.run, case, repeat, mode, cassette, problem, runs)
        if mode == "record" and cassette is not None:
            await anyio.to_thread.run_sync(cassette.save, path)
        done = [r for r in runs if r is not None]
        self.results[case.name] = CaseResult(
            name=case.name, runs=done, tags=list(case.tags), threshold=self.suite.threshold(case)
        )

    async def run(
        self,
        case: EvalCase,
        repeat: int,
        mode: CassetteMode,
        cassette: Cassette | None,
        problem: str | None,
        runs: list[RunResult | None],
    ) -> None:
        async with self.limiter:
            if problem is None and mode == "replay" and cassette and repeat >= cassette.repeats:
                problem = f"the cassette holds {cassette.repeats} repeats; this is repeat {repeat}"
            if problem is not None:
                result = RunResult(case=case.name, repeat=repeat, status="error", error=problem)
            else:
                tools = self.suite.record_tools(case)
                models = _Models(mode, cassette, repeat, tools=tools)
                try:
                    result = await self._judged(case, repeat, models)
                finally:
                    await models.aclose()
        runs[repeat] = result
        if self.on_run is not None:
            self.on_run(result)

    async def _judged(self, case: EvalCase, repeat: int, models: _Models) -> RunResult:
        timeout = self.suite.timeout(case)
        try:
            agent, matchers = self._build(case, repeat, models)
        except Exception as exc:  # the registry, the setup: not the agent
            detail = str(exc) if isinstance(exc, _Infrastructure | AgentError) else repr(exc)
            return RunResult(case=case.name, repeat=repeat, status="error", error=detail)
        collector = TrajectoryCollector(agent=agent.name)
        agent.subscribe(collector)
        status: Status = "passed"
        error: str | None = None
        outcome: AgentResult[Any] | None = None
        try:
            with anyio.fail_after(timeout):
                outcome = await agent.prompt(case.prompt)
        except TimeoutError:
            status, error = "error", f"timed out after {timeout:g}s"
        except (StructuredOutputFailed, HookFailed) as exc:
            status, error = "failed", str(exc)
        except Aborted as exc:
            status, error = "error", str(exc)
        except ModelError as exc:
            status = "error" if exc.kind in INFRASTRUCTURE_ERRORS else "failed"
            error = str(exc)
        except Exception as exc:
            status, error = "error", repr(exc)
        trajectory = collector.trajectory()
        if outcome is not None:
            if not isinstance(outcome.output, str):
                trajectory = msgspec.structs.replace(trajectory, output=outcome.output)
            failure = _failure_of(outcome)
            if failure is not None:
                status, error = failure
        misses = models.misses()
        if misses:
            status, error = "error", f"cassette miss: {'; '.join(misses)}"
        checks: list[Check] = []
        if status == "failed":
            checks.append(Check(name="run", passed=False, detail=error or ""))
        if status != "error":
            try:
                with anyio.fail_after(timeout):
                    for matcher in matchers:
                        checks.append(await matcher.check(trajectory))
            except TimeoutError:
                status, error = "error", f"the checks timed out after {timeout:g}s"
            except Exception as exc:  # a check or the judge: not the agent
                status, error = "error", f"check {matcher.name!r}: {exc!r}"
        if status == "passed" and not all(c.passed for c in checks):
            status = "failed"
        return RunResult(
            case=case.name,
            repeat=repeat,
            status=status,
            checks=checks,
            error=error,
            duration=trajectory.duration,
            tokens=trajectory.total_tokens,
            cost=trajectory.cost.total,
            turns=len(trajectory.turns),
            tool_calls=len(trajectory.tool_calls),
            trajectory=trajectory if self.keep else None,
        )

    def _build(self, case: EvalCase, repeat: int, models: _Models) -> tuple[Agent[Any], list[Any]]:
        spec, stream_fn = models.get(self.suite.model(case))
        setup = Setup(case=case, model=spec, stream_fn=stream_fn, repeat=repeat)
        registry = self.suite.registry
        tools = [models.wrap(tool) for tool in registry.make_tools(case.tools, setup)]
        if case.agent is not None:
            agent = registry.agents[case.agent](setup, tools)
        else:
            agent = Agent(
                model=spec,
                stream_fn=stream_fn,
                system_prompt=case.system_prompt,
                tools=tools,
                stream_options=case.options,
                output_type=case.output_schema,
            )
        budget = case.budget
        if budget is not None and (budget.max_turns or budget.max_tokens or budget.max_cost):
            guard = BudgetGuard(
                max_cost=budget.max_cost, max_tokens=budget.max_tokens, max_turns=budget.max_turns
            )
            agent.post_turn_policies.append(guard)

        def judge(spec: JudgeSpec) -> LlmJudge:
            model, judge_fn = models.get(self.suite.judge_model(case, spec))
            return LlmJudge(model, rubric=spec.rubric, stream_fn=judge_fn)

        return agent, build_matchers(self.suite, case, judge=judge)


async def run_suite(
    suite: Suite,
    *,
    cassettes: CassetteMode = "off",
    concurrency: int | None = None,
    repeats: int | None = None,
    keep_trajectories: bool = True,
    on_run: Callable[[RunResult], object] | None = None,
) -> Report:
    """Run every case of ``suite`` and report.

    Args:
        suite: the suite (``load_suite``, or built in Python).
        cassettes: ``"off"``, ``"record"``, ``"replay"`` or ``"once"`` (see ``CassetteMode``).
        concurrency: runs at once (default: the suite's).
        repeats: runs per case, for every case (default: each case's own).
        keep_trajectories: keep each run's trajectory in the report.
        on_run: called with each run's result as it finishes.

    Raises:
        SuiteError: the suite is inconsistent (see ``Suite.validate``).
        CassetteError: a recorded cassette cannot be written.
    """
    suite.validate()
    if concurrency is not None and concurrency < 1:
        raise ValueError("concurrency must be 1 or more")
    run = _SuiteRun(
        suite,
        mode=cassettes,
        concurrency=concurrency or suite.config.concurrency,
        repeats=repeats,
        keep_trajectories=keep_trajectories,
        on_run=on_run,
    )
    started = time.perf_counter()
    try:
        async with anyio.create_task_group() as tg:
            for case in suite.cases:
                tg.start_soon(run.case, case)
    except BaseExceptionGroup as group:
        raise _single(group) from None
    return Report(
        suite=suite.config.name,
        cases=[run.results[c.name] for c in suite.cases],
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        cassettes=cassettes,
        duration=time.perf_counter() - started,
        thresholds=suite.config.thresholds,
        max_error_rate=suite.config.max_error_rate,
    )


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one real failure of the runner's task group, unwrapped."""
    cancelled = anyio.get_cancelled_exc_class()
    errors = [e for e in group.exceptions if not isinstance(e, cancelled)]
    if len(errors) == 1:
        error = errors[0]
        return _single(error) if isinstance(error, BaseExceptionGroup) else error
    return group if errors else group.exceptions[0]


def cassette_path(suite: Suite, case: EvalCase) -> Path:
    """Where the cassette of ``case`` is."""
    return suite.cassette_dir / f"{case.name}.jsonl"
