"""Every string in a tool call's arguments, with what the tool's JSON Schema says of it.

``Walk(schema).strings(arguments)`` visits the arguments and the schema side by side (through
``properties``, ``additionalProperties``, ``items``, ``prefixItems``, ``allOf``/``anyOf``/
``oneOf`` and local ``$ref``\\ s) and returns each string, object keys included, with its
location and a mark: ``PATH`` (declared a path: a path ``format``, a ``paths=`` location or a
path-like property name), ``NOT_PATH`` (the schema says it is not one) or ``None`` (nothing is
known). The walk is iterative and bounded: arguments nested too deep, or holding too many
strings, raise ``TooComplex`` rather than be checked in part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "NOT_PATH",
    "Found",
    "NOT_PATH_FORMATS",
    "PATH",
    "PATH_FORMATS",
    "Location",
    "TooComplex",
    "Walk",
    "parse_location",
]

PATH_FORMATS = frozenset({"path", "file-path", "filepath", "file", "directory", "dir-path"})
"""JSON Schema ``format`` values that declare a string a path (compared in lower case)."""
NOT_PATH_FORMATS = frozenset(
    {
        "not-path",
        "date",
        "date-time",
        "time",
        "duration",
        "email",
        "uuid",
        "regex",
        "hostname",
        "ipv4",
        "ipv6",
    }
)
"""JSON Schema ``format`` values that say a string is not a path (the sandbox skips it)."""
PATH: Final = "path"
NOT_PATH: Final = "not-path"

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
        "working_directory",
    }
)
_PATH_SUFFIXES = ("_path", "_paths", "_file", "_files", "_dir", "_directory")
_MAX_DEPTH = 64
_MAX_STRINGS = 10_000
_MAX_REFS = 16

# A location in the arguments: object keys and list indices; ``None`` (in a declared location)
# stands for every item.
Location = tuple[str | int | None, ...]


class Found(NamedTuple):
    """One string of the arguments: where it is, what it is, what the schema says of it."""

    at: Location
    value: str
    mark: str | None
    is_key: bool = False  # the string is the key at ``at``, not the value there


class TooComplex(Exception):
    """The arguments are nested too deep or hold too many strings to be checked."""


def parse_location(spec: str) -> Location:
    """``"edits.*.file"`` as a location (``*`` for every item of a list or an object)."""
    return tuple(None if part == "*" else part for part in spec.split("."))


def _matches(spec: Location, at: Location) -> bool:
    if len(spec) != len(at):
        return False
    return all(s is None or s == a or s == str(a) for s, a in zip(spec, at, strict=True))


def _path_like_name(at: Location) -> bool:
    names = [part for part in at if isinstance(part, str)]
    if not names:
        return False
    name = names[-1].lower()
    return name in _PATH_NAMES or name.endswith(_PATH_SUFFIXES)


class Walk:
    """The strings of arguments, marked from one tool's schema (see the module docs)."""

    __slots__ = ("_guess", "_root", "declared")

    def __init__(self, schema: dict[str, Any] | None, guess_from_names: bool) -> None:
        self._root = schema
        self._guess = guess_from_names
        self.declared: list[Location] = []  # the schema's path-format locations, for display
        if schema is not None:
            self._declared_in(schema, (), 0)

    # ---------------------------------------------------------------- the schema

    def _resolve(self, node: Any) -> dict[str, Any] | None:
        """``node`` with its local ``$ref`` followed (a bounded number of times)."""
        for _ in range(_MAX_REFS):
            if not isinstance(node, dict):
                return None
            ref = node.get("$ref")
            if not isinstance(ref, str) or not ref.startswith("#"):
                return node
            target: Any = self._root
            for part in ref[1:].split("/")[1:]:
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
            node = target
        return None

    def _flat(self, nodes: Sequence[Any], depth: int = 0) -> list[dict[str, Any]]:
        """``nodes`` resolved, with the members of their ``allOf``/``anyOf``/``oneOf``."""
        out: list[dict[str, Any]] = []
        for raw in nodes:
            node = self._resolve(raw)
            if node is None:
                continue
            out.append(node)
            if depth < 8:
                for key in ("allOf", "anyOf", "oneOf"):
                    members = node.get(key)
                    if isinstance(members, list):
                        out.extend(self._flat(members, depth + 1))
        return out

    def _children(self, nodes: list[Any], key: str | int) -> list[Any]:
        """The schemas of the item at ``key`` of a value that ``nodes`` describe."""
        found: list[Any] = []
        for node in self._flat(nodes):
            if isinstance(key, str):
                props = node.get("properties")
                if isinstance(props, dict) and key in props:
                    found.append(props[key])
                elif isinstance(node.get("additionalProperties"), dict):
                    found.append(node["additionalProperties"])
            else:
                prefix = node.get("prefixItems")
                items = node.get("items")
                if isinstance(prefix, list) and key < len(prefix):
                    found.append(prefix[key])
                elif isinstance(items, list) and key < len(items):
                    found.append(items[key])  # the older tuple form
                elif isinstance(items, dict):
                    found.append(items)
        return found

    def _mark(self, nodes: list[Any]) -> str | None:
        """``PATH`` if any of ``nodes`` declares a path, ``NOT_PATH`` if all deny it."""
        if any(self._is_path(node, 0) for node in nodes):
            return PATH
        if nodes and all(self._is_not_path(node, 0) for node in nodes):
            return NOT_PATH
        return None

    def _members(self, node: dict[str, Any], key: str) -> list[Any]:
        members = node.get(key)
        return members if isinstance(members, list) else []

    def _is_path(self, raw: Any, depth: int) -> bool:
        node = self._resolve(raw)
        if node is None or depth > 8:
            return False
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt.lower() in PATH_FORMATS:
            return True
        return any(
            self._is_path(member, depth + 1)
            for key in ("allOf", "anyOf", "oneOf")
            for member in self._members(node, key)
        )

    def _is_not_path(self, raw: Any, depth: int) -> bool:
        node = self._resolve(raw)
        if node is None or depth > 8:
            return False
        fmt = node.get("format")
        if (isinstance(fmt, str) and fmt.lower() in NOT_PATH_FORMATS) or (
            "enum" in node or "const" in node
        ):
            return True
        if any(self._is_not_path(m, depth + 1) for m in self._members(node, "allOf")):
            return True
        for key in ("anyOf", "oneOf"):
            members = [m for m in self._members(node, key) if _may_be_string(self._resolve(m))]
            if members and all(self._is_not_path(m, depth + 1) for m in members):
                return True
        return False

    def _declared_in(self, node: Any, at: Location, depth: int) -> None:
        if depth > 8:
            return
        if at and self._mark([node]) == PATH:
            self.declared.append(at)
        for one in self._flat([node]):
            props = one.get("properties")
            if isinstance(props, dict):
                for key, sub in props.items():
                    self._declared_in(sub, (*at, str(key)), depth + 1)
            if isinstance(one.get("items"), dict):
                self._declared_in(one["items"], (*at, None), depth + 1)

    # ---------------------------------------------------------------- the arguments

    def strings(self, arguments: Any, declared: Sequence[Location] = ()) -> list[Found]:
        """Every string in ``arguments`` (keys too), with its location and mark.

        Raises:
            TooComplex: deeper than 64 levels, or more than 10,000 strings.
        """
        out: list[Found] = []
        root_nodes = [self._root] if self._root is not None else []
        stack: list[tuple[Any, Location, list[Any]]] = [(arguments, (), root_nodes)]
        while stack:
            value, at, nodes = stack.pop()
            if len(at) > _MAX_DEPTH:
                raise TooComplex(f"they are nested deeper than {_MAX_DEPTH} levels")
            if isinstance(value, str):
                out.append(Found(at, value, self._string_mark(nodes, at, declared)))
            elif isinstance(value, dict):
                names = [n["propertyNames"] for n in self._flat(nodes) if "propertyNames" in n]
                key_mark = NOT_PATH if names and self._mark(names) == NOT_PATH else None
                for key, item in value.items():
                    if isinstance(key, str):
                        out.append(Found((*at, key), key, key_mark, is_key=True))
                    stack.append((item, (*at, key), self._children(nodes, key)))
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    stack.append((item, (*at, index), self._children(nodes, index)))
            if len(out) > _MAX_STRINGS:
                raise TooComplex(f"they hold more than {_MAX_STRINGS:,} strings")
        out.reverse()  # the stack visits the last item first; report in document order
        return out

    def _string_mark(
        self, nodes: list[Any], at: Location, declared: Sequence[Location]
    ) -> str | None:
        if any(_matches(spec, at) for spec in declared):
            return PATH
        mark = self._mark(nodes)
        if mark is None and self._guess and _path_like_name(at):
            return PATH
        return mark


def _may_be_string(node: dict[str, Any] | None) -> bool:
    if node is None:
        return False
    kind = node.get("type")
    if kind is None:
        return True
    return kind == "string" or (isinstance(kind, list) and "string" in kind)
