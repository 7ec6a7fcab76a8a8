"""Tools: the ``AgentTool`` protocol, a base class for schema tools, and ``@tool`` for functions.

Arguments are validated before ``execute`` runs. A tool with a JSON Schema is checked by a
compiled fastjsonschema validator, cached per schema; a ``@tool`` function's arguments are
decoded and validated by msgspec into the types its signature declares. Invalid arguments never
reach ``execute``: the model gets an error result saying what was wrong.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import re
import threading
import typing
from typing import TYPE_CHECKING, Any, Generic, Protocol, get_origin, get_type_hints, overload

import anyio.to_thread
import msgspec

from ._errors import ToolArgumentError
from ._events import AgentToolResult
from ._types import Text

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._abc import OnUpdate

__all__ = [
    "FunctionTool",
    "Tool",
    "ToolArgumentError",
    "RunLink",
    "ToolContext",
    "current_tool_context",
    "tool",
    "validator_for",
]


log = logging.getLogger("agentloop.tools")

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    DepsT = TypeVar("DepsT", default=Any)
else:
    DepsT = typing.TypeVar("DepsT")


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
        """Run one call (a subclass implements it; see ``AgentTool.execute``).

        Raises:
            NotImplementedError: the subclass did not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement execute()")


class ToolContext(Generic[DepsT]):
    """Given to a ``@tool`` function that declares a parameter of this type.

    Annotate the parameter ``ToolContext[MyDeps]`` and ``ctx.deps`` is typed: it is what the
    agent was given as ``Agent(deps=...)`` (``None`` when nothing was). Safe to use from any
    thread: a function tool runs in a worker thread unless it is async or marked ``inline``, and
    may start threads of its own.

    Attributes:
        call_id: the id of the call being run.
        name: the tool's name.
        deps: the run's dependencies (``Agent(deps=...)``, ``AgentLoopConfig.deps``).
        on_update: report progress; each call becomes a ``ToolExecutionUpdate`` event, delivered
            on the event loop's thread while the tool runs. Updates after the call ended are
            dropped.
    """

    __slots__ = ("_cancelled", "_event", "call_id", "deps", "link", "name", "on_update")

    def __init__(
        self,
        call_id: str,
        name: str,
        on_update: OnUpdate,
        deps: DepsT = None,  # type: ignore[assignment]
        link: RunLink | None = None,
    ) -> None:
        self.call_id = call_id
        self.name = name
        self.on_update = on_update
        self.deps = deps
        self.link = link
        self._cancelled = False
        self._event: threading.Event | None = None

    @property
    def cancelled(self) -> bool:
        """Whether the call was cancelled (abort, steering, timeout): the tool should stop.

        Once it is true, whatever the tool still returns is discarded.
        """
        return self._cancelled

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Block the calling thread until the call is cancelled or ``timeout`` seconds pass.

        For threaded tools: a cancellable replacement for ``time.sleep``. Returns whether the
        call was cancelled. Never call it on the event loop's thread (use ``cancelled``).
        """
        event = self._event
        if event is None:
            with _EVENT_LOCK:
                event = self._event
                if event is None:
                    event = self._event = threading.Event()
        # Set after publishing the event: ``_cancel`` sets the flag before it looks for one.
        if self._cancelled:
            event.set()
        return event.wait(timeout)

    def _cancel(self) -> None:
        """Mark the call cancelled and wake a thread waiting in ``wait_cancelled``."""
        self._cancelled = True
        event = self._event
        if event is not None:
            event.set()


_EVENT_LOCK = threading.Lock()


class RunLink:
    """What a tool that runs agents of its own (``agentloop.multi``) needs of the calling run.

    One per run, shared by its calls (``ToolContext.link``; ``None`` outside a run).

    Attributes:
        agent: the calling agent's name (``"agent"`` for a bare loop).
        approval: the calling run's approval hook, so approvals inside sub-agents surface at
            the top level.
    """

    __slots__ = ("_run", "agent", "approval")

    def __init__(self, run: _Caller, *, approval: Any, agent: str) -> None:
        self._run: _Caller | None = run
        self.approval = approval
        self.agent = agent

    def emit(self, event: Any) -> None:
        """Add ``event`` to the calling run's events (from any thread)."""
        run = self._run
        if run is not None:
            run.emit_threadsafe(event)

    def account(self, usage: Any, cost: Any) -> None:
        """Add what a sub-agent spent to the calling run's usage and cost (loop thread)."""
        run = self._run
        if run is not None:
            run.account(usage, cost)

    def _close(self) -> None:
        """The calling run has ended: what is emitted or accounted from now on is dropped.

        It also lets the run go: the link no longer refers to it, so a finished run is freed
        by reference counting, without waiting for the cyclic GC.
        """
        self._run = None


class _Caller(Protocol):
    """What a link needs of its run."""

    def emit_threadsafe(self, event: Any) -> None: ...
    def account(self, usage: Any, cost: Any) -> None: ...


# The context of the tool call the current task (or worker thread) is running; the loop sets
# it in each call's child task, so a tool can reach its call's context without a parameter.
_current_context: contextvars.ContextVar[ToolContext[Any] | None] = contextvars.ContextVar(
    "agentloop_tool_context", default=None
)


def current_tool_context() -> ToolContext[Any] | None:
    """The ``ToolContext`` of the tool call running in this task or worker thread, if any."""
    return _current_context.get()


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
        inline: bool = False,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.label = label or self.name
        self.requires_approval = requires_approval
        self.read_only = read_only
        self._is_async = inspect.iscoroutinefunction(fn)
        if inline and self._is_async:
            raise TypeError(f"@tool(inline=True) is for sync functions; {self.name!r} is async")
        self.inline = inline
        summary, arg_docs = _parse_doc(fn.__doc__ or "")
        self.description = description if description is not None else summary
        hints = get_type_hints(fn, include_extras=True)
        fields: list[Any] = []
        self._context_param: str | None = None
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"@tool function {self.name!r} cannot take *args or **kwargs")
            if param.name not in hints:
                raise TypeError(
                    f"@tool function {self.name!r}: parameter {param.name!r} has no type "
                    "annotation, so the model would not know what to pass; annotate it "
                    f"({param.name}: str, int, a msgspec Struct...; Any accepts any JSON value)"
                )
            annotation = hints[param.name]
            if annotation is ToolContext or get_origin(annotation) is ToolContext:
                self._context_param = param.name
                continue
            _check_annotation(self.name, param.name, annotation)
            if param.default is param.empty:
                fields.append((param.name, annotation))
            else:
                fields.append((param.name, annotation, param.default))
        self._args_type: type[msgspec.Struct] = msgspec.defstruct(
            f"{self.name}_arguments", fields, kw_only=True, forbid_unknown_fields=True
        )
        try:
            schema = msgspec.json.schema(self._args_type)
        except (TypeError, ValueError) as exc:  # a default msgspec cannot encode, say
            raise TypeError(f"@tool function {self.name!r}: {exc}") from None
        self.parameters = _inline_schema(schema, arg_docs)

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
        """Call the function with ``arguments`` (in a worker thread for a plain ``def``).

        Raises:
            Exception: whatever the function raises (the loop makes it an error result).
        """
        if type(arguments) is self._args_type:
            kwargs = msgspec.structs.asdict(arguments)
        else:
            kwargs = dict(arguments)
        ctx = _current_context.get()
        if ctx is None or ctx.call_id != call_id:
            ctx = ToolContext(call_id, self.name, on_update)  # called outside the loop
        if self._context_param is not None:
            kwargs[self._context_param] = ctx
        if self._is_async:
            value = await self.fn(**kwargs)
        elif self.inline:
            value = self.fn(**kwargs)
        else:
            # Cancellation (abort, steering, a timeout) ends the wait at once; the thread is
            # abandoned, told through ``ctx.cancelled``, and what it returns is discarded.
            value = await anyio.to_thread.run_sync(
                self._in_thread, ctx, kwargs, abandon_on_cancel=True
            )
        return _result_from(value)

    def _in_thread(self, ctx: ToolContext[Any], kwargs: dict[str, Any]) -> Any:
        try:
            value = self.fn(**kwargs)
        except BaseException:
            if ctx.cancelled:
                log.debug(
                    "tool %s (call %s) raised after its call ended; discarded",
                    self.name,
                    ctx.call_id,
                    exc_info=True,
                )
            raise
        if ctx.cancelled:
            log.debug(
                "tool %s (call %s) returned after its call ended; its result is discarded",
                self.name,
                ctx.call_id,
            )
        return value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name}>"


def _last_line(exc: BaseException) -> str:
    """The line of msgspec's message that names the type (it explains schema hooks first)."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def _check_annotation(tool: str, param: str, annotation: Any) -> None:
    """Refuse, naming the tool and the parameter, a type the model's JSON cannot give.

    Raises:
        TypeError: msgspec can make no JSON Schema for ``annotation``.
    """
    try:
        msgspec.json.schema(annotation)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"@tool function {tool!r}: parameter {param!r} has a type a model's JSON arguments "
            f"cannot be decoded into ({_last_line(exc)}); use str, int, float, bool, lists and dicts of "
            "them, a msgspec Struct, a dataclass, a TypedDict or Any"
        ) from None


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
    inline: bool = False,
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
    inline: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a tool from a typed function (sync or async).

    The schema comes from the annotations; the description from the docstring, and each
    parameter's description from its ``Args:`` entry. A parameter annotated ``ToolContext``
    receives the call id and a progress callback and is not part of the schema. The return value
    may be an ``AgentToolResult``, a string, or anything msgspec can encode (sent as JSON text).

    A sync function runs in a worker thread, so it never blocks the event loop. Abort, steering
    and timeouts end its call at once: the thread is abandoned and its eventual result discarded
    (and logged at DEBUG). To stop early, a threaded tool checks ``ToolContext.cancelled``, waits
    with ``ToolContext.wait_cancelled(timeout)``, or calls anyio's
    ``from_thread.check_cancelled()``. ``inline=True`` runs a trivial sync function on the
    event loop instead (no thread; it must not block).

    Example::

        @tool
        async def add(a: int, b: int) -> int:
            \"\"\"Add two numbers.\"\"\"
            return a + b

    Raises:
        TypeError: the function takes ``*args``/``**kwargs``, or a parameter has no annotation
            or a type a model's JSON arguments cannot be decoded into (the message names the
            tool and the parameter).
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            f,
            name=name,
            description=description,
            label=label,
            requires_approval=requires_approval,
            read_only=read_only,
            inline=inline,
        )

    return wrap(fn) if fn is not None else wrap
