"""``Sandbox``: a pre-dispatch policy keeping every path a tool call could use inside the roots.

The rule, conservative on purpose: **every string in the arguments, at any depth (object keys
included), that could name a file is resolved and must lie under a root**, unless the tool's
JSON Schema says that string is not a path. A call with one string outside is skipped, with a
reason the model can read.

Which strings could name a file: any string of at most 4,096 characters (no system opens a
longer name) without a NUL character or a line break inside it (surrounding whitespace is
stripped first, as a tool might). Prose, code and commands are multi-line or resolve inside the
roots when read as a relative name ("cat /etc/passwd" is a file called that, in the working
directory): this is a check of file names, not a shell sandbox.

How the schema says "not a path" (the schema mechanism is JSON Schema's own ``format``):

* ``"format": "not-path"`` on a string property (or on ``items``, ``additionalProperties``,
  or ``propertyNames`` for object keys), at any depth; so do the standard formats that cannot
  be file names: ``date``, ``date-time``, ``time``, ``duration``, ``email``, ``uuid``,
  ``regex``, ``hostname``, ``ipv4``, ``ipv6``. Through ``anyOf``/``oneOf``, only if every
  alternative says so; local ``$ref``\\ s are followed.
* ``enum`` or ``const`` on the property: argument validation, which runs after the policies,
  only lets the listed values through.

For ``@tool`` functions the schema comes from the annotations:
``Annotated[str, msgspec.Meta(extra_json_schema={"format": "not-path"})]``.

Which strings are paths for sure (declared): ``paths={"copy": ["src", "dst"], "batch_edit":
["edits.*.file"]}`` (a dotted key descends into objects, ``*`` into every item of a list or
value of an object); a ``format`` of ``path``, ``file-path``, ``filepath``, ``file``,
``directory`` or ``dir-path``; and, unless ``guess_from_names=False``, properties at any depth
named ``path``, ``file``, ``filename``, ``directory``, ``cwd`` and the like, or ending in
``_path``, ``_file`` or ``_dir``. A declared path is checked whatever its shape (a NUL or a name
too long is a skip, not a pass) and, with ``pin=True`` (the default), rewritten to the resolved
absolute path, so the tool opens exactly what was checked whatever its own working directory.
Other strings are checked but never rewritten.

How a path is checked: ``~`` is expanded, a ``file:`` URL is reduced to its path, a relative
path is joined to the call's working directory, and the result is resolved with
``os.path.realpath`` (``..`` collapsed after following every symbolic link that exists,
dangling ones included). The resolved path must lie under one of the roots, themselves resolved
the same way when the policy is made; the value read literally (no ``~``, no URL, whitespace
kept) must stay inside as well, whichever way the tool reads it. The call's working directory
is its top-level ``cwd`` argument (or ``workdir``, ``working_dir``, ``working_directory``) when
it has one, itself checked against the roots and taken relative to the sandbox's ``cwd``;
otherwise the sandbox's ``cwd`` (the first root by default).

Arguments nested deeper than 64 levels, or holding more than 10,000 strings, are skipped: the
guard fails closed rather than check part of a call.

Limits, as for any check made on names before the fact:

* **Time of check to time of use.** A symbolic link created (or a directory swapped for one)
  between this check and the tool's use of the path, by the tool itself or by another process,
  is not seen. Pinning narrows the window (the tool gets the resolved path, so links that
  existed at the check are not followed again) but cannot close it. The mitigation is at the
  point of use: tools that open files with ``openat2(..., RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)``
  (Linux 5.6+) or ``O_NOFOLLOW`` component by component, or that run in an OS-level sandbox
  (a container or bind-mounted jail, Landlock, bubblewrap) whose view of the file system is the
  roots alone.
* A hard link or a bind mount inside a root that leads to a file outside looks like an
  ordinary file inside.
* A tool that builds paths from pieces (a directory in one argument and a name in another,
  other than through ``cwd``), or that splits one string into several paths, is checked piece by
  piece; declare its path arguments and keep one path per string.
* On a case-insensitive file system a path spelled in another case than its root is refused
  although it is inside: the error is on the safe side.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from agentloop.policy import ALLOW, DispatchVerdict, Rewrite, Skip

from ._arguments import (
    NOT_PATH_FORMATS as NOT_PATH_FORMATS,
    PATH,
    PATH_FORMATS as PATH_FORMATS,
    TooComplex,
    Walk,
    parse_location,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from agentloop import AgentTool
    from agentloop.policy import DispatchContext

    from ._arguments import Location

__all__ = ["NOT_PATH_FORMATS", "PATH_FORMATS", "Sandbox"]

_CWD_NAMES = ("cwd", "workdir", "working_dir", "working_directory")
_MAX_PATH = 4096  # PATH_MAX on Linux: a longer string cannot be opened as one name


def _could_be_path(value: str) -> bool:
    text = value.strip()
    return (
        0 < len(text) <= _MAX_PATH and "\x00" not in text and "\n" not in text and "\r" not in text
    )


def _replace_at(value: Any, at: Location, new: str) -> Any:
    """A copy of ``value`` with the string at ``at`` replaced (containers copied on the way)."""
    if not at:
        return new
    key = at[0]
    if isinstance(value, list) and isinstance(key, int):
        copied = list(value)
        copied[key] = _replace_at(copied[key], at[1:], new)
        return copied
    if isinstance(value, dict):
        out = dict(value)
        out[key] = _replace_at(out[key], at[1:], new)
        return out
    return value


def _cwd_location(arguments: Any) -> Location | None:
    """Where the call names its own working directory, if it does."""
    if isinstance(arguments, dict):
        for name in _CWD_NAMES:
            if isinstance(arguments.get(name), str):
                return (name,)
    return None


def _shown(at: Location) -> str:
    return ".".join(str(part) for part in at) or "(the arguments)"


class Sandbox:
    """Skip tool calls with a string that could name a file outside the allowed ``roots``.

    Example::

        sandbox = Sandbox(["./workspace"], paths={"copy": ["src", "dst"]})
        agent = Agent(..., pre_dispatch_policies=[sandbox])

    Args:
        roots: the directories paths must stay under (a root itself is allowed).
        cwd: the directory relative paths are joined to; by default the first root.
        paths: per tool name, the argument locations holding paths (see the module docs).
        guess_from_names: treat arguments with path-like names as declared paths (pinned).
        pin: rewrite passing calls so that declared paths are the resolved absolute paths.

    Raises:
        ValueError: no root is given.
    """

    __slots__ = ("_declared", "_walks", "cwd", "guess_from_names", "pin", "roots")

    def __init__(
        self,
        roots: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None = None,
        paths: Mapping[str, Sequence[str]] | None = None,
        guess_from_names: bool = True,
        pin: bool = True,
    ) -> None:
        items = [roots] if isinstance(roots, str | os.PathLike) else list(roots)
        if not items:
            raise ValueError("Sandbox needs at least one root directory")
        self.roots: tuple[Path, ...] = tuple(Path(os.path.realpath(os.fspath(r))) for r in items)
        self.cwd = Path(os.path.realpath(os.fspath(cwd))) if cwd is not None else self.roots[0]
        self._declared: dict[str, list[Location]] = {
            name: [parse_location(spec) for spec in specs] for name, specs in (paths or {}).items()
        }
        self.guess_from_names = guess_from_names
        self.pin = pin
        # Per schema object: the walk that knows its marks (the schema is kept, so its id
        # cannot be reused while the entry lives).
        self._walks: dict[int, tuple[Any, Walk]] = {}

    def _walk(self, tool: AgentTool | None) -> Walk:
        schema = getattr(tool, "parameters", None) if tool is not None else None
        cached = self._walks.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        walk = Walk(schema if isinstance(schema, dict) else None, self.guess_from_names)
        self._walks[id(schema)] = (schema, walk)
        return walk

    def locations_for(self, name: str, tool: AgentTool | None) -> list[Location]:
        """The declared path locations of a call to ``name`` (``paths=`` and the schema's)."""
        locations = list(self._declared.get(name, ()))
        locations.extend(loc for loc in self._walk(tool).declared if loc not in locations)
        return locations

    def resolve(self, value: str, *, base: Path | None = None) -> Path:
        """The absolute, symlink-free path ``value`` names, relative paths taken from ``base``
        (the sandbox's ``cwd`` by default).

        The value is read as a path-aware tool would: surrounding whitespace removed, a
        ``file:`` URL reduced to its path, ``~`` expanded.

        Raises:
            ValueError: the value cannot be a path (a NUL character, a URL for another host,
                a name the system cannot resolve).
        """
        if "\x00" in value:
            raise ValueError("path contains a NUL character")
        text = value.strip()
        if text[:5].lower() == "file:":
            parts = urlsplit(text)
            if parts.netloc not in ("", "localhost"):
                raise ValueError("file URL names another host")
            text = unquote(parts.path)
            if "\x00" in text:
                raise ValueError("path contains a NUL character")
        return self._absolute(os.path.expanduser(text), base)

    def _absolute(self, text: str, base: Path | None = None) -> Path:
        path = Path(text)
        if not path.is_absolute():
            path = (base or self.cwd) / path
        try:
            return Path(os.path.realpath(path))
        except (OSError, ValueError) as exc:  # a name too long for the system, and the like
            raise ValueError(f"the path cannot be resolved ({exc})") from None

    def check(self, value: str, *, base: Path | None = None) -> Path | None:
        """The resolved path if ``value`` stays inside the roots, else ``None``.

        Both readings must stay inside: the one of ``resolve`` and the literal one (the value
        joined to the working directory as it is, as a tool that does no interpretation would).

        Raises:
            ValueError: as ``resolve``.
        """
        resolved = self.resolve(value, base=base)
        if not self.is_allowed(resolved):
            return None
        if value != str(resolved) and not self.is_allowed(self._absolute(value, base)):
            return None
        return resolved

    def is_allowed(self, resolved: Path) -> bool:
        """Whether a resolved path lies under one of the roots."""
        return any(resolved.is_relative_to(root) for root in self.roots)

    def evaluate(self, ctx: DispatchContext) -> DispatchVerdict:
        """Skip the call if a string in its arguments escapes the roots; pin declared paths."""
        arguments = ctx.call.arguments
        walk = self._walk(ctx.tool)
        declared = self._declared.get(ctx.call.name, ())
        try:
            found = walk.strings(arguments, declared)
        except TooComplex as exc:
            return Skip(reason=f"The arguments could not be checked for paths: {exc}.")
        base: Path | None = None
        rewritten: Any = arguments
        cwd_at = _cwd_location(arguments)
        # The call's own working directory first: the other relative paths are taken from it.
        for at, value, mark, is_key in sorted(found, key=lambda f: f.is_key or f.at != cwd_at):
            if mark is not PATH and (mark is not None or not _could_be_path(value)):
                continue  # not a path, by the schema or by its shape
            shown = f"key {value!r} of {_shown(at[:-1])}" if is_key else _shown(at)
            try:
                resolved = self.check(value, base=base)
            except ValueError as exc:
                if mark is PATH:
                    return Skip(reason=f"Argument {shown!r} is not a usable path: {exc}.")
                continue  # no system would open it as a file name
            if resolved is None:
                return Skip(reason=self._escape_reason(shown, value))
            if is_key:
                continue
            if at == cwd_at:
                base = resolved
            if mark is PATH and self.pin and at and value != str(resolved):
                rewritten = _replace_at(rewritten, at, str(resolved))
        if rewritten is not arguments:
            return Rewrite(arguments=rewritten)
        return ALLOW

    def _escape_reason(self, shown: str, value: str) -> str:
        where = ", ".join(str(root) for root in self.roots)
        return (
            f"Argument {shown!r} ({value[:200]!r}) points outside the allowed directories "
            f"({where}), so the call was not run. Use a path inside them."
        )

    def __repr__(self) -> str:
        return f"Sandbox({[str(r) for r in self.roots]!r}, cwd={str(self.cwd)!r})"
