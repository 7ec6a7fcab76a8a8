"""``Sandbox``: a pre-dispatch policy keeping file path arguments inside allowed directories.

Which arguments are paths:

* declared per tool: ``paths={"copy": ["src", "dst"], "batch_edit": ["edits.*.file"]}``; a
  dotted key descends into objects, ``*`` into every item of a list (or value of an object);
* found in the tool's JSON Schema: a string property whose ``format`` is ``path``, ``file-path``,
  ``filepath``, ``directory`` or ``dir-path`` (or an array of such strings), at any depth;
* by name, unless ``guess_from_names=False``: top-level properties called ``path``, ``file``,
  ``filename``, ``directory``, ``cwd`` and the like, or ending in ``_path``, ``_file`` or
  ``_dir``.

How a path is checked: ``~`` is expanded, a ``file:`` URL is reduced to its path, a relative path
is joined to ``cwd``, and the result is resolved with ``os.path.realpath`` (``..`` collapsed after
following every symbolic link that exists, dangling ones included). The resolved path must lie
under one of the roots, themselves resolved the same way when the policy is made. The value read
literally (no ``~``, no URL, whitespace kept) must stay inside as well, whichever way the tool
reads it. So ``..``
chains, absolute paths and symbolic links pointing outside are all caught; a violation skips the
call with a reason the model can read.

By default (``pin=True``) a call that passes is rewritten so that each path argument holds the
resolved absolute path: the tool then opens exactly what was checked, whatever its own working
directory. Limits remain, as for any check made on names before the fact: a symbolic link
created between the check and the tool's use of the path (by the tool itself or by another
process); a hard link or a bind mount inside a root that leads to a file outside (both look
like ordinary files inside); a tool that reads paths from arguments this policy does not know
are paths. On a case-insensitive file system a path spelled in another case than its root is
refused although it is inside: the error is on the safe side.

Note for ``@tool`` functions: their schemas do not carry ``format`` annotations at present, so
their path arguments are found by name or must be declared with ``paths=``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from agentloop import ALLOW, DispatchVerdict, Rewrite, Skip

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from agentloop import AgentTool, DispatchContext

__all__ = ["PATH_FORMATS", "Sandbox"]

PATH_FORMATS = frozenset({"path", "file-path", "filepath", "file", "directory", "dir-path"})
_PATH_NAMES = frozenset(
    {
        "path",
        "paths",
        "file",
        "files",
        "filename",
        "filepath",
        "dir",
        "directory",
        "dirname",
        "folder",
        "cwd",
        "workdir",
        "working_dir",
    }
)
_PATH_SUFFIXES = ("_path", "_paths", "_file", "_files", "_dir", "_directory")

# A location inside the arguments: keys of objects, or None for "every item".
_Location = tuple[str | None, ...]


def _parse_location(spec: str) -> _Location:
    return tuple(None if part == "*" else part for part in spec.split("."))


def _schema_locations(schema: Any, prefix: _Location = (), depth: int = 0) -> list[_Location]:
    """Locations of the string properties of ``schema`` marked with a path format."""
    if not isinstance(schema, dict) or depth > 8:
        return []
    found: list[_Location] = []
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt.lower() in PATH_FORMATS and prefix:
        found.append(prefix)
    items = schema.get("items")
    if isinstance(items, dict):
        found.extend(_schema_locations(items, (*prefix, None), depth + 1))
    props = schema.get("properties")
    if isinstance(props, dict):
        for key, sub in props.items():
            found.extend(_schema_locations(sub, (*prefix, str(key)), depth + 1))
    for key in ("anyOf", "oneOf", "allOf"):
        alternatives = schema.get(key)
        if isinstance(alternatives, list):
            for sub in alternatives:
                found.extend(_schema_locations(sub, prefix, depth + 1))
    return found


def _looks_like_path_name(name: str) -> bool:
    lowered = name.lower()
    return lowered in _PATH_NAMES or lowered.endswith(_PATH_SUFFIXES)


def _collect(value: Any, location: _Location, at: _Location = ()) -> list[tuple[_Location, str]]:
    """Every string found at ``location`` in ``value``, with its concrete location."""
    if not location:
        if isinstance(value, str):
            return [(at, value)]
        if isinstance(value, list):
            return [(at + (str(i),), v) for i, v in enumerate(value) if isinstance(v, str)]
        return []
    head, rest = location[0], location[1:]
    out: list[tuple[_Location, str]] = []
    if head is None:
        if isinstance(value, list):
            for i, item in enumerate(value):
                out.extend(_collect(item, rest, at + (str(i),)))
        elif isinstance(value, dict):
            for key, item in value.items():
                out.extend(_collect(item, rest, at + (str(key),)))
    elif isinstance(value, dict) and head in value:
        out.extend(_collect(value[head], rest, at + (head,)))
    return out


def _replace_at(value: Any, at: _Location, new: str) -> Any:
    """A copy of ``value`` with the string at ``at`` replaced (containers copied on the way)."""
    if not at:
        return new
    key = at[0]
    assert key is not None
    if isinstance(value, list):
        copied = list(value)
        copied[int(key)] = _replace_at(copied[int(key)], at[1:], new)
        return copied
    if isinstance(value, dict):
        out = dict(value)
        out[key] = _replace_at(out[key], at[1:], new)
        return out
    return value


class Sandbox:
    """Skip tool calls whose path arguments resolve outside the allowed ``roots``.

    Example::

        sandbox = Sandbox(["./workspace"], paths={"copy": ["src", "dst"]})
        agent = Agent(..., pre_dispatch_policies=[sandbox])

    Args:
        roots: the directories paths must stay under (a root itself is allowed).
        cwd: the directory relative paths are joined to; by default the first root.
        paths: per tool name, the argument locations holding paths (see the module docs).
        guess_from_names: also treat top-level arguments with path-like names as paths.
        pin: rewrite passing calls so that paths are the resolved absolute paths.

    Raises:
        ValueError: no root is given.
    """

    __slots__ = ("_declared", "_schema_cache", "cwd", "guess_from_names", "pin", "roots")

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
        self._declared: dict[str, list[_Location]] = {
            name: [_parse_location(spec) for spec in specs] for name, specs in (paths or {}).items()
        }
        self.guess_from_names = guess_from_names
        self.pin = pin
        self._schema_cache: dict[int, tuple[dict[str, Any], list[_Location]]] = {}

    def locations_for(self, name: str, tool: AgentTool | None) -> list[_Location]:
        """Where the path arguments of a call to ``name`` are."""
        locations = list(self._declared.get(name, ()))
        if tool is not None:
            schema = getattr(tool, "parameters", None)
            if isinstance(schema, dict):
                locations.extend(loc for loc in self._from_schema(schema) if loc not in locations)
        return locations

    def _from_schema(self, schema: dict[str, Any]) -> list[_Location]:
        cached = self._schema_cache.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        found = _schema_locations(schema)
        if self.guess_from_names:
            props = schema.get("properties")
            if isinstance(props, dict):
                found.extend(
                    (str(key),)
                    for key in props
                    if _looks_like_path_name(str(key)) and (str(key),) not in found
                )
        # The schema itself is kept in the cache entry so that its id cannot be reused.
        self._schema_cache[id(schema)] = (schema, found)
        return found

    def resolve(self, value: str) -> Path:
        """The absolute, symlink-free path ``value`` names, relative paths taken from ``cwd``.

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
        return self._absolute(os.path.expanduser(text))

    def _absolute(self, text: str) -> Path:
        path = Path(text)
        if not path.is_absolute():
            path = self.cwd / path
        try:
            return Path(os.path.realpath(path))
        except OSError as exc:  # a name too long for the system, and the like
            raise ValueError(f"the path cannot be resolved ({exc.strerror or exc})") from None

    def check(self, value: str) -> Path | None:
        """The resolved path if ``value`` stays inside the roots, else ``None``.

        Both readings must stay inside: the one of ``resolve`` and the literal one (the value
        joined to ``cwd`` as it is, as a tool that does no interpretation would use it).

        Raises:
            ValueError: as ``resolve``.
        """
        resolved = self.resolve(value)
        if not self.is_allowed(resolved):
            return None
        if value != str(resolved) and not self.is_allowed(self._absolute(value)):
            return None
        return resolved

    def is_allowed(self, resolved: Path) -> bool:
        """Whether a resolved path lies under one of the roots."""
        return any(resolved.is_relative_to(root) for root in self.roots)

    def evaluate(self, ctx: DispatchContext) -> DispatchVerdict:
        """Skip the call if a path argument escapes the roots; pin the paths otherwise."""
        arguments = ctx.call.arguments
        if not isinstance(arguments, dict):
            return ALLOW
        rewritten: Any = arguments
        for location in self.locations_for(ctx.call.name, ctx.tool):
            for at, value in _collect(arguments, location):
                shown = ".".join(part or "*" for part in at)
                try:
                    resolved = self.check(value)
                except ValueError as exc:
                    return Skip(reason=f"Argument {shown!r} is not a usable path: {exc}.")
                if resolved is None:
                    return Skip(reason=self._escape_reason(shown, value))
                if self.pin and value != str(resolved):
                    rewritten = _replace_at(rewritten, at, str(resolved))
        if rewritten is not arguments:
            return Rewrite(arguments=rewritten)
        return ALLOW

    def _escape_reason(self, shown: str, value: str) -> str:
        where = ", ".join(str(root) for root in self.roots)
        return (
            f"Argument {shown!r} ({value!r}) points outside the allowed directories ({where}), "
            "so the call was not run. Use a path inside them."
        )

    def __repr__(self) -> str:
        return f"Sandbox({[str(r) for r in self.roots]!r}, cwd={str(self.cwd)!r})"
