"""Typed output: the answer as a value of a given type, through a synthetic final tool.

The model is offered one more tool whose parameters are the output type's schema; it gives its
answer by calling it. The answer is validated like any tool call's arguments (invalid output
goes back to the model as an error result with the validation message, and the loop gives it
another turn); a post-turn policy ends the run once a valid answer arrived or the attempts ran
out. Every model call of such a run asks for a tool call (``tool_choice="required"``), and a
model that answered in prose anyway is reminded and, on the next call, made to call the final
tool by name. Nothing of this touches the agent: the tool, the policies and the instruction are
the run's own.

Output types: msgspec Structs, dataclasses, TypedDicts, plain types (``int``, ``list[str]``,
...) - anything ``msgspec.convert`` builds - or a JSON Schema ``dict`` (the validated object
comes back as it is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from ._errors import ToolArgumentError
from ._events import AgentToolResult
from ._extras import RunExtras
from ._policy import CONTINUE, Inject, PolicyContext, PolicyVerdict, Stop
from ._tools import _last_line, validator_for
from ._types import AgentResult, StopReason, StreamOptions, UserMessage

if TYPE_CHECKING:
    from ._abc import OnUpdate

__all__ = ["OutputSpec", "check_output_type"]

T = TypeVar("T")
_UNSET: Any = object()
DEFAULT_TOOL_NAME = "final_result"


def _schema_for(output: Any) -> tuple[dict[str, Any], bool]:
    """The tool's parameter schema, and whether the answer is wrapped in ``{"result": ...}``."""
    if isinstance(output, dict):
        schema: dict[str, Any] = output
    else:
        raw = msgspec.json.schema(output)
        defs = dict(raw.get("$defs", {}))
        ref = raw.get("$ref")
        schema = dict(defs.pop(ref.rsplit("/", 1)[-1])) if ref else dict(raw)
        if defs:
            schema["$defs"] = defs
    if schema.get("type") == "object":
        return schema, False
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": {k: v for k, v in schema.items() if k != "$defs"}},
        "required": ["result"],
    }
    if "$defs" in schema:
        wrapped["$defs"] = schema["$defs"]
    return wrapped, True


def check_output_type(output: Any) -> None:
    """Refuse, naming ``output_type``, a type whose values a model's JSON cannot give.

    Raises:
        TypeError: msgspec can make no JSON Schema for ``output``.
    """
    if output is None or output is str or isinstance(output, dict):
        return
    try:
        _schema_for(output)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"output_type {getattr(output, '__qualname__', output)!r} is not supported ({_last_line(exc)}); "
            "use a msgspec Struct, a dataclass, a TypedDict, a plain type such as int or "
            "list[str], or a JSON Schema dict"
        ) from None


class _FinalTool:
    """The synthetic tool; it records every answer and keeps the first valid one."""

    label = "Final result"
    requires_approval = False
    read_only = True

    def __init__(self, name: str, output: Any, max_attempts: int) -> None:
        self.name = name
        self.parameters, self._wrapped = _schema_for(output)
        self.description = (
            "Give your final answer by calling this tool with it. Call it exactly once, when "
            "you are done."
        )
        self._output = output
        self._typed = not isinstance(output, dict)
        self._validate_schema = None if self._typed else validator_for(self.parameters)
        self.max_attempts = max_attempts
        self.attempts = 0
        self.last_error = "the model did not call the final result tool"
        self.value: Any = _UNSET
        self.answered_in_prose = False

    def validate_arguments(self, arguments: Any) -> Any:
        self.attempts += 1
        try:
            if self._typed:
                if not isinstance(arguments, dict):
                    raise ToolArgumentError("arguments must be a JSON object")
                data = arguments["result"] if self._wrapped and "result" in arguments else arguments
                value = msgspec.convert(data, self._output)
            else:
                assert self._validate_schema is not None
                value = self._validate_schema(arguments)
                if self._wrapped:
                    value = value["result"]
        except (msgspec.ValidationError, ToolArgumentError) as exc:
            self.last_error = str(exc)
            raise ToolArgumentError(
                f"{exc}. Call {self.name} again with corrected output."
            ) from None
        if self.value is _UNSET:
            self.value = value
        return arguments

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        return AgentToolResult.text("Final result received.")

    @property
    def exhausted(self) -> bool:
        return self.attempts >= self.max_attempts


class _FinishWhenAnswered:
    name = "output"

    def __init__(self, tool: _FinalTool) -> None:
        self.tool = tool

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        if self.tool.value is not _UNSET:
            return Stop(reason="output received")
        if self.tool.exhausted:
            return Stop(reason="output attempts exhausted")
        return CONTINUE


class _RemindToAnswer:
    name = "output_reminder"

    def __init__(self, tool: _FinalTool) -> None:
        self.tool = tool

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        tool = self.tool
        if tool.value is not _UNSET or tool.exhausted:
            return CONTINUE
        tool.attempts += 1
        tool.last_error = "the model answered without calling the final result tool"
        if tool.exhausted:
            return CONTINUE
        tool.answered_in_prose = True
        return Inject(
            messages=[
                UserMessage.from_text(f"Call the {tool.name} tool with your final answer now.")
            ]
        )


class OutputSpec(Generic[T]):
    """What one run adds to an agent to get its answer as a ``T``.

    Attributes:
        tools: the synthetic final tool (for the run's tools).
        post_turn_policies: the run's extra post-turn policies.
        post_loop_policies: the run's extra post-loop policies.
        instruction: appended to the run's system prompt.
    """

    def __init__(
        self, output_type: Any, *, max_retries: int = 2, tool_name: str = DEFAULT_TOOL_NAME
    ) -> None:
        self.output_type = output_type
        self.tool = _FinalTool(tool_name, output_type, max_attempts=1 + max(0, max_retries))
        self.tools = [self.tool]
        self.post_turn_policies = [_FinishWhenAnswered(self.tool)]
        self.post_loop_policies = [_RemindToAnswer(self.tool)]
        self.instruction = f"When you have the answer, call the {tool_name} tool with it."

    def extras(self) -> RunExtras:
        """The additions to the run that gives the output."""
        return RunExtras(
            tools=self.tools,
            post_turn_policies=self.post_turn_policies,
            post_loop_policies=self.post_loop_policies,
            instruction=self.instruction,
            turn_options=self.turn_options,
        )

    def turn_options(self, ctx: PolicyContext, options: StreamOptions) -> StreamOptions:
        """Every call must call a tool; after a prose answer, the final tool itself."""
        tool = self.tool
        choice = tool.name if tool.answered_in_prose else "required"
        tool.answered_in_prose = False
        return msgspec.structs.replace(options, tool_choice=choice)

    def finish(self, result: AgentResult[Any]) -> AgentResult[T]:
        """``result`` with the validated output, or with why there is none (reading its
        ``output`` then raises ``StructuredOutputFailed``, or the run's own error)."""
        tool = self.tool
        if tool.value is not _UNSET:
            return msgspec.structs.replace(result, output=tool.value)
        if result.stop_reason is StopReason.ABORTED or result.stop_reason is StopReason.ERROR:
            return result  # its own error comes first
        return msgspec.structs.replace(
            result,
            output=None,
            output_error=tool.last_error or "the model gave no output",
            output_attempts=max(tool.attempts, 1),
        )
