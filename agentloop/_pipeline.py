"""Pipelines of agents: in sequence, in parallel, in a loop — and as a tool.

A step is an ``Agent`` (one run at a time), a function making a fresh agent per run (what a
step run in parallel with itself needs), or another pipeline. ``Sequential`` feeds each step's
output to the next; ``Parallel`` runs its steps at once in a task group and merges their outputs
(``"concatenate"``, ``"first"``: the first to finish wins and the others are cancelled,
``FastestN(n)``: the first ``n``, or any function of the results); ``Loop`` runs a step again on
its own output until a condition holds or ``max_iterations``. ``pipeline.as_tool(...)`` makes a
tool of it, whose agents' events are relayed into the calling run like a sub-agent's.

Definitions serialise: ``pipeline.spec()`` (for pipelines whose steps are named, ``Named``) is a
msgspec struct that encodes to JSON, and ``build_pipeline(spec, agents)`` builds it again from a
mapping of names to agent factories.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio
import msgspec

from ._events import AgentToolResult
from ._subagent import _TASK_SCHEMA, run_child
from ._tools import current_tool_context
from ._types import Cost, StopReason, Usage

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from ._abc import OnUpdate
    from ._agent import Agent
    from ._tools import RunLink
    from ._types import AgentResult

__all__ = [
    "AgentRef",
    "FastestN",
    "Loop",
    "LoopSpec",
    "Named",
    "Parallel",
    "ParallelSpec",
    "Pipeline",
    "PipelineResult",
    "PipelineSpec",
    "PipelineTool",
    "Sequential",
    "SequentialSpec",
    "build_pipeline",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class PipelineResult:
    """What a pipeline produced.

    Attributes:
        output: the merged output.
        results: every agent run's result, in the order they ended.
        usage: summed over every agent run.
        cost: summed over every agent run.
        stop_reason: ``stop``, or how the first failed or aborted run ended.
    """

    output: str
    results: list[AgentResult[Any]]
    usage: Usage
    cost: Cost
    stop_reason: StopReason = StopReason.STOP


def _combine(output: str, parts: Sequence[PipelineResult]) -> PipelineResult:
    results: list[AgentResult[Any]] = []
    stop = StopReason.STOP
    for part in parts:
        results.extend(part.results)
        if stop is StopReason.STOP and part.stop_reason is not StopReason.STOP:
            stop = part.stop_reason
    # Usage is counted by the pipeline's run as a whole (cancelled steps' spending included).
    return PipelineResult(
        output=output, results=results, usage=Usage(), cost=Cost(), stop_reason=stop
    )


class _Context:
    """Where a pipeline runs: the calling run's link (as a tool), the call id, and what every
    agent run of the pipeline spent so far, finished or cancelled."""

    def __init__(self, link: RunLink | None, call_id: str) -> None:
        self.link = link
        self.call_id = call_id
        self.usage = Usage()
        self.cost = Cost()

    def spent(self, usage: Usage, cost: Cost) -> None:
        self.usage = self.usage + usage
        self.cost = self.cost + cost


Step: TypeAlias = "Agent[Any] | Callable[[], Agent[Any]] | Pipeline | Named"


class Pipeline(abc.ABC):
    """Base of the pipelines: ``run``, ``spec`` and ``as_tool``."""

    async def run(self, prompt: str) -> PipelineResult:
        """Run the pipeline on ``prompt``; usage and cost sum every agent run it made."""
        where = _Context(None, "")
        result = await self._run(prompt, where)
        return dataclasses.replace(result, usage=where.usage, cost=where.cost)

    @abc.abstractmethod
    async def _run(self, prompt: str, where: _Context) -> PipelineResult: ...

    @abc.abstractmethod
    def spec(self) -> PipelineSpec:
        """The pipeline as a serialisable definition.

        Raises:
            TypeError: a step is not ``Named`` (or a pipeline), or a ``Loop`` has a function
                for a condition.
        """

    def as_tool(self, *, name: str, description: str, read_only: bool = False) -> PipelineTool:
        """A tool running this pipeline on a ``task``."""
        return PipelineTool(self, name=name, description=description, read_only=read_only)


@dataclasses.dataclass(frozen=True)
class Named:
    """A step by name: ``factory`` makes its agent; ``name`` is what a spec calls it."""

    name: str
    factory: Callable[[], Agent[Any]]


async def _run_step(step: Any, prompt: str, where: _Context) -> PipelineResult:
    if isinstance(step, Pipeline):
        return await step._run(prompt, where)
    if isinstance(step, Named):
        step = step.factory
    agent: Agent[Any] = step() if callable(step) else step  # a factory, or an Agent
    result = await run_child(
        agent, prompt, link=where.link, call_id=where.call_id, on_spent=where.spent
    )
    return PipelineResult(
        output=str(result.output),
        results=[result],
        usage=result.usage,
        cost=result.cost,
        stop_reason=result.stop_reason,
    )


def _step_spec(step: Any) -> StepSpec:
    if isinstance(step, Pipeline):
        return step.spec()
    if isinstance(step, Named):
        return AgentRef(name=step.name)
    raise TypeError(f"only Named steps and pipelines serialise, not {step!r}")


class Sequential(Pipeline):
    """Each step's output is the next step's prompt; stops early at a failed or aborted run."""

    def __init__(self, steps: Sequence[Any]) -> None:
        self.steps = list(steps)

    async def _run(self, prompt: str, where: _Context) -> PipelineResult:
        parts: list[PipelineResult] = []
        text = prompt
        for step in self.steps:
            part = await _run_step(step, text, where)
            parts.append(part)
            if part.stop_reason is not StopReason.STOP:
                break
            text = part.output
        return _combine(parts[-1].output if parts else prompt, parts)

    def spec(self) -> PipelineSpec:
        return SequentialSpec(steps=[_step_spec(s) for s in self.steps])


@dataclasses.dataclass(frozen=True)
class FastestN:
    """Merge for ``Parallel``: the first ``n`` outputs to arrive, the rest cancelled."""

    n: int


Merge: TypeAlias = (
    'Literal["concatenate", "first"] | FastestN | Callable[[list[PipelineResult]], str]'
)


class Parallel(Pipeline):
    """All steps at once, on the same prompt, in a task group; outputs merged.

    Args:
        steps: the steps (give a step that appears twice as a factory, not an ``Agent``).
        merge: ``"concatenate"`` (default; in step order, separated by blank lines),
            ``"first"`` (the first to finish; the others are cancelled), ``FastestN(n)``, or a
            function of the step results (in step order) returning the output.
    """

    def __init__(self, steps: Sequence[Any], *, merge: Any = "concatenate") -> None:
        self.steps = list(steps)
        self.merge = merge
        if isinstance(merge, FastestN) and not 1 <= merge.n <= len(self.steps):
            raise ValueError(f"FastestN({merge.n}) needs 1..{len(self.steps)} steps")

    async def _run(self, prompt: str, where: _Context) -> PipelineResult:
        merge = self.merge
        wanted = (
            1 if merge == "first" else merge.n if isinstance(merge, FastestN) else len(self.steps)
        )
        done: list[tuple[int, PipelineResult]] = []
        async with anyio.create_task_group() as tg:

            async def one(index: int, step: Any) -> None:
                part = await _run_step(step, prompt, where)
                done.append((index, part))
                if len(done) >= wanted:
                    tg.cancel_scope.cancel()

            for index, step in enumerate(self.steps):
                tg.start_soon(one, index, step)
        finished = [part for _, part in done[:wanted]]
        if callable(merge) and not isinstance(merge, str | FastestN):
            ordered = [part for _, part in sorted(done)]
            return _combine(str(merge(ordered)), ordered)
        if merge == "concatenate":
            ordered = [part for _, part in sorted(done)]
            return _combine("\n\n".join(p.output for p in ordered), ordered)
        return _combine("\n\n".join(p.output for p in finished), [p for _, p in done])

    def spec(self) -> PipelineSpec:
        merge: Literal["concatenate", "first", "fastest"]
        if isinstance(self.merge, FastestN):
            merge, n = "fastest", self.merge.n
        elif self.merge == "concatenate" or self.merge == "first":
            merge, n = self.merge, None
        else:
            raise TypeError("a Parallel with a merge function does not serialise")
        return ParallelSpec(steps=[_step_spec(s) for s in self.steps], merge=merge, n=n)


class Loop(Pipeline):
    """One step again and again on its own output.

    Args:
        step: the step.
        until: stops the loop when it returns true for an iteration's result.
        until_contains: stops the loop when the output contains this text (serialisable).
        max_iterations: the most iterations.
    """

    def __init__(
        self,
        step: Any,
        *,
        until: Callable[[PipelineResult], bool] | None = None,
        until_contains: str | None = None,
        max_iterations: int = 5,
    ) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        self.step = step
        self.until = until
        self.until_contains = until_contains
        self.max_iterations = max_iterations

    def _finished(self, part: PipelineResult) -> bool:
        if self.until is not None and self.until(part):
            return True
        return self.until_contains is not None and self.until_contains in part.output

    async def _run(self, prompt: str, where: _Context) -> PipelineResult:
        parts: list[PipelineResult] = []
        text = prompt
        for _ in range(self.max_iterations):
            part = await _run_step(self.step, text, where)
            parts.append(part)
            if part.stop_reason is not StopReason.STOP or self._finished(part):
                break
            text = part.output
        return _combine(parts[-1].output, parts)

    def spec(self) -> PipelineSpec:
        if self.until is not None:
            raise TypeError("a Loop with an until function does not serialise; use until_contains")
        return LoopSpec(
            step=_step_spec(self.step),
            max_iterations=self.max_iterations,
            until_contains=self.until_contains,
        )


class PipelineTool:
    """A pipeline as a tool; its agents' events are relayed into the calling run."""

    requires_approval = False

    def __init__(
        self, pipeline: Pipeline, *, name: str, description: str, read_only: bool = False
    ) -> None:
        self.pipeline = pipeline
        self.name = name
        self.label = name
        self.description = description
        self.read_only = read_only
        self.parameters = dict(_TASK_SCHEMA)

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        """Run the pipeline on ``arguments["task"]``; its output is the result."""
        ctx = current_tool_context()
        link = ctx.link if ctx is not None and ctx.call_id == call_id else None
        # Each agent's usage is added to the calling run's as it ends (``run_child``).
        result = await self.pipeline._run(str(arguments["task"]), _Context(link, call_id))
        if result.stop_reason is not StopReason.STOP:
            return AgentToolResult.error(
                f"pipeline {self.name!r} ended with {result.stop_reason}: {result.output}"
            )
        return AgentToolResult.text(result.output)


# --------------------------------------------------------------------------- definitions


class _Spec(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    pass


class AgentRef(_Spec, frozen=True, tag="agent"):
    """A step that is the agent registered under ``name``."""

    name: str


class SequentialSpec(_Spec, frozen=True, tag="sequential"):
    """The definition of a ``Sequential``: each step's output is the next step's task.

    Attributes:
        steps: the steps, in order.
    """

    steps: list[StepSpec]


class ParallelSpec(_Spec, frozen=True, tag="parallel"):
    """The definition of a ``Parallel``: every step gets the same task at once.

    Attributes:
        steps: the steps.
        merge: how the outputs become one: ``"concatenate"`` (in step order), ``"first"``
            (the first to finish) or ``"fastest"`` (the first ``n`` to finish).
        n: with ``"fastest"``, how many outputs to wait for (1 when ``None``).
    """

    steps: list[StepSpec]
    merge: Literal["concatenate", "first", "fastest"] = "concatenate"
    n: int | None = None


class LoopSpec(_Spec, frozen=True, tag="loop"):
    """The definition of a ``Loop``: a step run again on its own output.

    Attributes:
        step: the step repeated.
        max_iterations: the most iterations.
        until_contains: the loop stops once the output contains this text.
    """

    step: StepSpec
    max_iterations: int = 5
    until_contains: str | None = None


PipelineSpec: TypeAlias = SequentialSpec | ParallelSpec | LoopSpec
"""A pipeline's definition, as data (JSON or YAML): ``build_pipeline`` makes the pipeline."""
StepSpec: TypeAlias = AgentRef | SequentialSpec | ParallelSpec | LoopSpec


def build_pipeline(spec: PipelineSpec, agents: Mapping[str, Callable[[], Agent[Any]]]) -> Pipeline:
    """The pipeline a definition describes, with agents made by ``agents[name]()``.

    Raises:
        KeyError: the definition names an agent ``agents`` does not have.
    """

    def step(s: StepSpec) -> Any:
        if isinstance(s, AgentRef):
            return Named(s.name, agents[s.name])
        return build_pipeline(s, agents)

    if isinstance(spec, SequentialSpec):
        return Sequential([step(s) for s in spec.steps])
    if isinstance(spec, ParallelSpec):
        merge: Any = FastestN(spec.n or 1) if spec.merge == "fastest" else spec.merge
        return Parallel([step(s) for s in spec.steps], merge=merge)
    return Loop(
        step(spec.step), until_contains=spec.until_contains, max_iterations=spec.max_iterations
    )
