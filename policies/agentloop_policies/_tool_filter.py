"""Tool filters: ``ToolDenyList`` and ``ToolAllowList``, pre-dispatch policies matching tool names.

A pattern is an exact tool name or a shell-style glob (``fnmatch``): ``*`` matches any run of
characters (including none), ``?`` one character, ``[seq]``/``[!seq]`` one character in or out of
a set. To match a literal ``*``, ``?`` or ``[``, wrap it in brackets (``[*]``); a pattern also
always matches a name equal to it character for character, so ``"tool[1]"`` matches the tool
named ``tool[1]`` (as well as ``tool1``).

Matching is done on a normalised name: Unicode NFKC form, surrounding whitespace removed, and
(by default) case-folded, so ``"Bash"``, ``"BASH "`` and ``"ｂａｓｈ"`` (full-width) are one name.
Matching never depends on the operating system (``fnmatchcase``, never ``fnmatch``, whose
case rules follow the platform's file system).

A call that fails the filter is skipped: the model receives an error result with a reason it
can read, and the other calls of the batch go on.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from typing import TYPE_CHECKING

from agentloop.policy import ALLOW, DispatchVerdict, Skip

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agentloop.policy import DispatchContext

__all__ = ["ToolAllowList", "ToolDenyList", "ToolPatterns"]


def _normalise(name: str, *, case_sensitive: bool) -> str:
    name = unicodedata.normalize("NFKC", name).strip()
    return name if case_sensitive else name.casefold()


class ToolPatterns:
    """A compiled set of tool name patterns (exact names and globs).

    Args:
        patterns: one pattern or several. A single string is one pattern, never a sequence of
            one-character patterns.
        case_sensitive: match names as written; by default case is ignored.

    Raises:
        TypeError: a pattern is not a string.
        ValueError: a pattern is empty or only whitespace.
    """

    __slots__ = ("_exact", "_regex", "case_sensitive", "patterns")

    def __init__(self, patterns: str | Iterable[str], *, case_sensitive: bool = False) -> None:
        items = [patterns] if isinstance(patterns, str) else list(patterns)
        normalised: list[str] = []
        for pattern in items:
            if not isinstance(pattern, str):
                raise TypeError(f"tool patterns must be strings, not {type(pattern).__name__}")
            if not pattern.strip():
                raise ValueError("a tool pattern cannot be empty")
            normalised.append(_normalise(pattern, case_sensitive=case_sensitive))
        self.patterns: tuple[str, ...] = tuple(items)
        self.case_sensitive = case_sensitive
        self._exact = frozenset(normalised)
        globs = [p for p in normalised if any(c in p for c in "*?[")]
        # One alternation of the translated globs: one regex call per name, however many globs.
        self._regex = (
            re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in globs)) if globs else None
        )

    def matches(self, name: str) -> bool:
        """Whether ``name`` is matched by any pattern."""
        if not isinstance(name, str):
            return False
        key = _normalise(name, case_sensitive=self.case_sensitive)
        if key in self._exact:
            return True
        return self._regex is not None and self._regex.match(key) is not None

    def __repr__(self) -> str:
        return f"ToolPatterns({list(self.patterns)!r}, case_sensitive={self.case_sensitive})"


class ToolDenyList:
    """Skip every call to a tool whose name matches one of ``patterns``.

    Case is ignored by default: a deny list errs on the side of denying. Unknown tools are
    matched by the name the model sent, like known ones.

    Example::

        deny = ToolDenyList(["bash", "*shell*", "mcp__github__delete_*"])
        config = AgentLoopConfig(..., pre_dispatch_policies=[deny])

    Args:
        patterns: exact names and globs (see the module documentation).
        reason: an explanation added to what the model is told, e.g. ``"ask the user instead"``.
        case_sensitive: match names as written.

    Raises:
        TypeError: a pattern is not a string.
        ValueError: a pattern is empty or only whitespace.
    """

    __slots__ = ("_patterns", "reason")

    def __init__(
        self,
        patterns: str | Iterable[str],
        *,
        reason: str | None = None,
        case_sensitive: bool = False,
    ) -> None:
        self._patterns = ToolPatterns(patterns, case_sensitive=case_sensitive)
        self.reason = reason

    @property
    def patterns(self) -> tuple[str, ...]:
        """The patterns, as given."""
        return self._patterns.patterns

    def evaluate(self, ctx: DispatchContext) -> DispatchVerdict:
        """Skip the call if its tool name is denied."""
        name = ctx.call.name
        if not self._patterns.matches(name):
            return ALLOW
        text = f"Tool {name!r} is blocked by policy and was not run."
        if self.reason:
            text = f"{text} {self.reason}"
        return Skip(reason=f"{text} Do not call it again; continue without it.")

    def __repr__(self) -> str:
        return f"ToolDenyList({list(self.patterns)!r})"


class ToolAllowList:
    """Skip every call to a tool whose name matches none of ``patterns``.

    Case matters by default: an allow list errs on the side of refusing, and ``"Read"`` and
    ``"read"`` may well be different tools. An empty list allows nothing.

    Example::

        allow = ToolAllowList(["read_file", "list_dir", "search_*"])
        agent = Agent(..., pre_dispatch_policies=[allow])

    Args:
        patterns: exact names and globs (see the module documentation).
        reason: an explanation added to what the model is told.
        case_sensitive: match names as written (the default); ``False`` ignores case.

    Raises:
        TypeError: a pattern is not a string.
        ValueError: a pattern is empty or only whitespace.
    """

    __slots__ = ("_patterns", "reason")

    def __init__(
        self,
        patterns: str | Iterable[str],
        *,
        reason: str | None = None,
        case_sensitive: bool = True,
    ) -> None:
        self._patterns = ToolPatterns(patterns, case_sensitive=case_sensitive)
        self.reason = reason

    @property
    def patterns(self) -> tuple[str, ...]:
        """The patterns, as given."""
        return self._patterns.patterns

    def evaluate(self, ctx: DispatchContext) -> DispatchVerdict:
        """Skip the call unless its tool name is allowed."""
        name = ctx.call.name
        if self._patterns.matches(name):
            return ALLOW
        text = f"Tool {name!r} is not among the tools allowed here and was not run."
        if self.reason:
            text = f"{text} {self.reason}"
        return Skip(reason=f"{text} Use an allowed tool or continue without it.")

    def __repr__(self) -> str:
        return f"ToolAllowList({list(self.patterns)!r})"
