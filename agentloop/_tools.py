"""Tools: the ``AgentTool`` protocol, a base class for schema tools, and ``@tool`` for functions.

Arguments are validated before ``execute`` runs. A tool with a JSON Schema is checked by a
compiled fastjsonschema validator, cached per schema; a ``@tool`` function's arguments are
decoded and validated by msgspec into the types its signature declares. Invalid arguments never
reach ``execute``: the model gets an error result saying what was wrong.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, get_type_hints, overload, runtime_checkable

import anyio.to_thread
import msgspec

from ._events import AgentToolResult
from ._types import Text

__all__ = [
    "AgentTool",
    "FunctionTool",
    "OnUpdate",
    "Tool",
    "ToolArgumentError",
    "ToolContext",
    "tool",
    "validator_for",
]

OnUpdate = Callable[[AgentToolResult | str], None]


class ToolArgumentError(ValueError):
    """Arguments that do not fit the tool; the message is sent to the model."""


@runtime_checkable
class AgentTool(Protocol):
    """A tool the model can call.

    ``execute`` receives arguments that already passed validation. It reports progress through
    ``on_update`` and returns an ``AgentToolResult``; an exception it raises becomes an error
    result. A tool may define ``validate_arguments(arguments) -> validated`` to replace the
    schema check.
    """

    name: str
    label: str
    description: str
    parameters: dict[str, Any]
    requires_approval: bool
    read_only: bool

    async def execute(
        self, call_id: str, arguments: Any, on_update: OnUpdate
    ) -> AgentToolResult: ...


_validators: dict[bytes, Callable[[Any], Any]] = {}
_schema_encoder = msgspec.json.Encoder(order="sorted")


def validator_for(schema: dict[str, Any]) -> Callable[[Any], Any]:
    """A compiled validator for ``schema``, shared by every tool with the same schema.

    The validator returns the (possibly default-filled) arguments or raises
    ``ToolArgumentError``.
    """
    key = _schema_encoder.encode(schema)
    found = _validators.get(key)
    if found is not None:
        return found
    import fastjsonschema  # imported on first use: it is slow to import and often unneeded

    compiled = fastjsonschema.compile(schema)

    def validate(arguments: Any) -> Any:
        try:
            return compiled(arguments)
        except fastjsonschema.JsonSchemaValueException as exc:
            raise ToolArgumentError(str(exc.message)) from None

    _validators[key] = validate
    return validate


class Tool:
    """Base class for tools described by a JSON Schema; override ``execute``."""

    name: str = ""
    label: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012
    requires_approval: bool = False
    read_only: bool = False

    def validate_arguments(self, arguments: Any) -> Any:
        """Check ``arguments`` against ``parameters``.

        Raises:
            ToolArgumentError: the arguments do not match the schema.
        """
        return validator_for(self.parameters)(arguments)

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        raise NotImplementedError(f"{type(self).__name__} must implement execute()")


class ToolContext:
    """Given to a ``@tool`` function that declares a parameter of this type.

    Attributes:
        call_id: the id of the call being run.
        name: the tool's name.
        on_update: report progress; each call becomes a ``ToolExecutionUpdate`` event.
    """

    __slots__ = ("call_id", "name", "on_update")

    def __init__(self, call_id: str, name: str, on_update: OnUpdate) -> None:
        self.call_id = call_id
        self.name = name
        self.on_update = on_update


_ARGS_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_SECTION = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")
_ARG_LINE = re.compile(r"^\s+(\*{0,2}\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$")


def _parse_doc(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and its ``Args:`` entries."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    params: dict[str, str] = {}
    i = 0
    while i < len(lines) and not _SECTION.match(lines[i]):
        summary.append(lines[i])
        i += 1
    current: str | None = None
    in_args = False
    for line in lines[i:]:
        if _ARGS_SECTION.match(line):
            in_args, current = True, None
            continue
        if _SECTION.match(line):
            in_args, current = False, None
            continue
        if not in_args:
            continue
        m = _ARG_LINE.match(line)
        if m and (len(line) - len(line.lstrip())) <= 4:
            current = m.group(1).lstrip("*")
            params[current] = m.group(2).strip()
        elif current is not None and line.strip():
            params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), params


def _result_from(value: Any) -> AgentToolResult:
    if isinstance(value, AgentToolResult):
        return value
    if value is None:
        return AgentToolResult(content=[Text(text="")])
    if isinstance(value, str):
        return AgentToolResult(content=[Text(text=value)])
    return AgentToolResult(content=[Text(text=msgspec.json.encode(value).decode())], details=value)


class FunctionTool:
    """A tool made from a typed function by ``@tool``; see ``tool``."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        label: str | None = None,
        requires_approval: bool = False,
        read_only: bool = False,
        blocking: bool = False,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.label = label or self.name
        self.requires_approval = requires_approval
        self.read_only = read_only
        self.blocking = blocking
        self._is_async = inspect.iscoroutinefunction(fn)
        summary, arg_docs = _parse_doc(fn.__doc__ or "")
        self.description = description if description is not None else summary
        hints = get_type_hints(fn, include_extras=True)
        fields: list[Any] = []
        self._context_param: str | None = None
        for param in inspect.signature(fn).parameters.values():
            annotation = hints.get(param.name, Any)
            if annotation is ToolContext:
                self._context_param = param.name
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"@tool function {self.name!r} cannot take *args or **kwargs")
            if param.default is param.empty:
                fields.append((param.name, annotation))
            else:
                fields.append((param.name, annotation, param.default))
        self._args_type: type[msgspec.Struct] = msgspec.defstruct(
            f"{self.name}_arguments", fields, kw_only=True, forbid_unknown_fields=True
        )
        self._field_names: tuple[str, ...] = self._args_type.__struct_fields__
        self.parameters = _inline_schema(msgspec.json.schema(self._args_type), arg_docs)

    def validate_arguments(self, arguments: Any) -> Any:
        """Decode ``arguments`` into the function's parameter types.

        Raises:
            ToolArgumentError: an argument is missing, unknown, or of the wrong type.
        """
        if not isinstance(arguments, dict):
            raise ToolArgumentError(
                f"arguments must be a JSON object, not {type(arguments).__name__}"
            )
        try:
            return msgspec.convert(arguments, self._args_type)
        except msgspec.ValidationError as exc:
            raise ToolArgumentError(str(exc)) from None

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        if isinstance(arguments, self._args_type):
            kwargs = {f: getattr(arguments, f) for f in self._field_names}
        else:
            kwargs = dict(arguments)
        if self._context_param is not None:
            kwargs[self._context_param] = ToolContext(call_id, self.name, on_update)
        if self._is_async:
            value = await self.fn(**kwargs)
        elif self.blocking:
            value = await anyio.to_thread.run_sync(lambda: self.fn(**kwargs))
        else:
            value = self.fn(**kwargs)
        return _result_from(value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name}>"


def _inline_schema(schema: dict[str, Any], arg_docs: dict[str, str]) -> dict[str, Any]:
    defs: dict[str, Any] = dict(schema.get("$defs", {}))
    ref = schema.get("$ref", "")
    root: dict[str, Any] = dict(defs.pop(ref.rsplit("/", 1)[-1], schema)) if ref else dict(schema)
    root.pop("title", None)
    props = {k: dict(v) for k, v in root.get("properties", {}).items()}
    for key, text in arg_docs.items():
        if key in props and text and "description" not in props[key]:
            props[key]["description"] = text
    root["properties"] = props
    root.setdefault("required", [])
    root["additionalProperties"] = False
    if defs:
        root["$defs"] = defs
    return root


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    requires_approval: bool = False,
    read_only: bool = False,
    blocking: bool = False,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    requires_approval: bool = False,
    read_only: bool = False,
    blocking: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a tool from a typed function (sync or async).

    The schema comes from the annotations; the description from the docstring, and each
    parameter's description from its ``Args:`` entry. A parameter annotated ``ToolContext``
    receives the call id and a progress callback and is not part of the schema. The return value
    may be an ``AgentToolResult``, a string, or anything msgspec can encode (sent as JSON text).
    Sync functions run on the event loop; pass ``blocking=True`` for one that blocks, to run it
    in a worker thread.

    Example::

        @tool
        async def add(a: int, b: int) -> int:
            \"\"\"Add two numbers.\"\"\"
            return a + b

    Raises:
        TypeError: the function takes ``*args``/``**kwargs`` or has unsupported annotations.
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            f,
            name=name,
            description=description,
            label=label,
            requires_approval=requires_approval,
            read_only=read_only,
            blocking=blocking,
        )

    return wrap(fn) if fn is not None else wrap


ValidateFn = Callable[[Any], Any]
ExecuteFn = Callable[[str, Any, OnUpdate], Awaitable[AgentToolResult]]
