"""Matchers: what a trajectory is checked against.

A matcher has a ``name`` and an async ``check(trajectory)`` returning a ``Check`` (passed or
not, and why). Golden tool paths (``ToolPath``), response criteria (``Contains``,
``NotContains``, ``Regex``, ``JsonSchema``, ``Custom``) live here; the LLM judge in
``_judge``; efficiency and budget gates in ``_budget``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import fastjsonschema
import msgspec

if TYPE_CHECKING:
    from ._trajectory import ToolStep, Trajectory

__all__ = [
    "Check",
    "Contains",
    "Custom",
    "ExpectedCall",
    "JsonSchema",
    "MatchMode",
    "Matcher",
    "NotContains",
    "Regex",
    "ToolPath",
]

MatchMode: TypeAlias = Literal["exact", "in_order", "any_order"]
"""How a golden tool path is compared with the calls made:

``exact``: the same calls, in the same order, and no others. ``in_order``: the expected calls
appear in this order; others may come before, between and after. ``any_order``: the expected
calls all appear, in any order; others may come too.
"""


class Check(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The outcome of one matcher on one run. ``score`` is a measure in [0, 1], when the
    matcher has one (efficiency, a judge's grade)."""

    name: str
    passed: bool
    detail: str = ""
    score: float | None = None


class Matcher(Protocol):
    """Something a trajectory is checked against."""

    @property
    def name(self) -> str:
        """How the check is named in reports."""
        ...

    async def check(self, trajectory: Trajectory) -> Check:
        """Check ``trajectory``; an exception makes the run an error, not a failure."""
        ...


# --------------------------------------------------------------------------- tool paths


class ExpectedCall(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A call a golden path expects: the tool's name and, optionally, arguments that must be
    among the call's (each key present with an equal value; others may be there too)."""

    name: str
    arguments: dict[str, Any] | None = None

    def matches(self, step: ToolStep) -> bool:
        """Whether ``step`` is this call."""
        if step.name != self.name:
            return False
        if not self.arguments:
            return True
        actual = step.arguments if isinstance(step.arguments, dict) else {}
        return all(k in actual and actual[k] == v for k, v in self.arguments.items())

    def __str__(self) -> str:
        if not self.arguments:
            return self.name
        args = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
        return f"{self.name}({args})"


def _expected(step: str | ExpectedCall) -> ExpectedCall:
    return ExpectedCall(name=step) if isinstance(step, str) else step


def _in_order(expected: list[ExpectedCall], actual: Sequence[ToolStep]) -> str | None:
    # Matching each expected call to the earliest fitting call is optimal for a subsequence.
    position = 0
    for want in expected:
        while position < len(actual) and not want.matches(actual[position]):
            position += 1
        if position == len(actual):
            return f"{want} not found in order"
        position += 1
    return None


def _any_order(expected: list[ExpectedCall], actual: Sequence[ToolStep]) -> str | None:
    # A bipartite matching (augmenting paths): with arguments, greedy choices can fail.
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j, step in enumerate(actual):
            if j in seen or not expected[i].matches(step):
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    missing = [str(want) for i, want in enumerate(expected) if not place(i, set())]
    return f"missing {', '.join(missing)}" if missing else None


def _exact(expected: list[ExpectedCall], actual: Sequence[ToolStep]) -> str | None:
    for index, (want, step) in enumerate(zip(expected, actual, strict=False)):
        if not want.matches(step):
            return f"call {index + 1} is {step.name}({_args(step.arguments)}), not {want}"
    if len(actual) != len(expected):
        return f"{len(actual)} calls, not {len(expected)}"
    return None


def _args(arguments: Any) -> str:
    if isinstance(arguments, dict):
        return ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return "" if arguments is None else repr(arguments)


_MODES: dict[str, Callable[[list[ExpectedCall], Sequence[ToolStep]], str | None]] = {
    "exact": _exact,
    "in_order": _in_order,
    "any_order": _any_order,
}


class ToolPath:
    """A golden tool path: the calls the agent is expected to make.

    Args:
        expected: tool names, or ``ExpectedCall``s to check arguments too.
        mode: ``"exact"``, ``"in_order"`` or ``"any_order"`` (see ``MatchMode``).
        tree: compare with every call of the tree (each sub-agent's calls right after the call
            that started it) instead of the agent's own calls.

    Raises:
        ValueError: an unknown ``mode``.
    """

    def __init__(
        self,
        expected: Sequence[str | ExpectedCall],
        *,
        mode: MatchMode = "exact",
        tree: bool = False,
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {', '.join(_MODES)}, not {mode!r}")
        self.expected = [_expected(step) for step in expected]
        self.mode = mode
        self.tree = tree
        self.name = f"tool path ({mode.replace('_', ' ')})"

    async def check(self, trajectory: Trajectory) -> Check:
        """Compare the calls made with the expected path (see ``MatchMode``)."""
        actual = list(trajectory.walk_tool_calls()) if self.tree else trajectory.tool_calls
        problem = _MODES[self.mode](self.expected, actual)
        if problem is None:
            return Check(name=self.name, passed=True)
        made = ", ".join(step.name for step in actual) or "no calls"
        wanted = ", ".join(str(want) for want in self.expected) or "no calls"
        return Check(
            name=self.name, passed=False, detail=f"{problem}: made [{made}], expected [{wanted}]"
        )


# --------------------------------------------------------------------------- response criteria


class Contains:
    """The final answer contains ``text``."""

    def __init__(self, text: str, *, ignore_case: bool = False) -> None:
        self.text = text
        self.ignore_case = ignore_case
        self.name = f"contains {text!r}"

    async def check(self, trajectory: Trajectory) -> Check:
        """Whether the final answer contains the text."""
        answer, text = trajectory.text, self.text
        if self.ignore_case:
            answer, text = answer.casefold(), text.casefold()
        if text in answer:
            return Check(name=self.name, passed=True)
        return Check(name=self.name, passed=False, detail=f"not in {_excerpt(trajectory.text)}")


class NotContains:
    """The final answer does not contain ``text``."""

    def __init__(self, text: str, *, ignore_case: bool = False) -> None:
        self.text = text
        self.ignore_case = ignore_case
        self.name = f"does not contain {text!r}"

    async def check(self, trajectory: Trajectory) -> Check:
        """Whether the final answer does not contain the text."""
        answer, text = trajectory.text, self.text
        if self.ignore_case:
            answer, text = answer.casefold(), text.casefold()
        if text not in answer:
            return Check(name=self.name, passed=True)
        return Check(name=self.name, passed=False, detail=f"found in {_excerpt(trajectory.text)}")


class Regex:
    """The final answer matches the regular expression ``pattern`` (``re.search``).

    The pattern is the suite author's; keep it free of nested quantifiers (``(a+)+``), which
    backtrack for a very long time on some answers.

    Raises:
        re.error: the pattern does not compile.
    """

    def __init__(self, pattern: str, *, flags: int = 0) -> None:
        self.pattern = re.compile(pattern, flags)
        self.name = f"matches /{pattern}/"

    async def check(self, trajectory: Trajectory) -> Check:
        """Whether the final answer matches the expression."""
        if self.pattern.search(trajectory.text):
            return Check(name=self.name, passed=True)
        return Check(
            name=self.name, passed=False, detail=f"no match in {_excerpt(trajectory.text)}"
        )


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n\s*```\s*$", re.S)


class JsonSchema:
    """The run's output is valid against the JSON Schema ``schema``.

    The output is the run's typed output when it has one; otherwise the final answer's text,
    parsed as JSON (a single fenced code block around it is allowed).

    Raises:
        ValueError: ``schema`` is not a valid JSON Schema.
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        try:
            self._validate = fastjsonschema.compile(schema)
        except fastjsonschema.JsonSchemaDefinitionException as exc:
            raise ValueError(f"invalid JSON Schema: {exc}") from exc
        self.schema = schema
        self.name = "JSON schema"

    async def check(self, trajectory: Trajectory) -> Check:
        """Whether the run's output (typed, or the answer parsed as JSON) fits the schema."""
        value = trajectory.output
        if isinstance(value, str):
            fenced = _FENCE.match(value)
            try:
                value = msgspec.json.decode(fenced.group(1) if fenced else value)
            except msgspec.DecodeError as exc:
                return Check(name=self.name, passed=False, detail=f"not JSON: {exc}")
        try:
            self._validate(value)
        except fastjsonschema.JsonSchemaValueException as exc:
            return Check(name=self.name, passed=False, detail=str(exc.message))
        return Check(name=self.name, passed=True)


CheckFunction: TypeAlias = Callable[
    ["Trajectory"],
    "bool | tuple[bool, str] | Check | Awaitable[bool | tuple[bool, str] | Check]",
]


class Custom:
    """A check written as a function of the trajectory, sync or async, returning a ``bool``,
    a ``(passed, detail)`` pair or a ``Check``."""

    def __init__(self, fn: CheckFunction, *, name: str | None = None) -> None:
        self.fn = fn
        self.name: str = name or str(getattr(fn, "__name__", "custom check"))

    async def check(self, trajectory: Trajectory) -> Check:
        """Whatever the function says of the trajectory."""
        outcome: Any = self.fn(trajectory)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if isinstance(outcome, Check):
            return outcome
        if isinstance(outcome, tuple):
            passed, detail = outcome
            return Check(name=self.name, passed=bool(passed), detail=str(detail))
        if isinstance(outcome, bool):
            return Check(name=self.name, passed=outcome)
        raise TypeError(
            f"check {self.name!r} returned {type(outcome).__name__}, not a bool, a "
            "(passed, detail) pair or a Check"
        )


def _excerpt(text: str, limit: int = 120) -> str:
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return repr(text)
