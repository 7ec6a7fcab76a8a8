"""Structured output: a synthetic final tool the model must call with its answer.

The answer is validated like any tool call's arguments (so invalid output goes back to the
model as an error result with the validation message, and the loop gives it another turn);
a post-turn policy ends the run once a valid answer arrived or the attempts ran out, and a
post-loop policy reminds a model that answered in prose instead of calling the tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ._errors import Aborted, StructuredOutputFailed
from ._events import AgentToolResult
from ._policy import CONTINUE, Inject, PolicyContext, PolicyVerdict, Stop
from ._tools import OnUpdate, ToolArgumentError, validator_for
from ._types import StopReason, UserMessage

if TYPE_CHECKING:
    from ._agent import Agent, AgentInput

__all__ = ["run_structured"]

_UNSET: Any = object()


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
    name = "structured_output"

    def __init__(self, tool: _FinalTool) -> None:
        self.tool = tool

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        if self.tool.value is not _UNSET:
            return Stop(reason="structured output received")
        if self.tool.exhausted:
            return Stop(reason="structured output attempts exhausted")
        return CONTINUE


class _RemindToAnswer:
    name = "structured_output_reminder"

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
        return Inject(
            messages=[UserMessage.text(f"Call the {tool.name} tool with your final answer now.")]
        )


async def run_structured(
    agent: Agent, prompt: AgentInput, output: Any, *, max_retries: int, tool_name: str
) -> Any:
    tool = _FinalTool(tool_name, output, max_attempts=1 + max(0, max_retries))
    finish = _FinishWhenAnswered(tool)
    remind = _RemindToAnswer(tool)
    saved = (agent.system_prompt, agent._tools.get(tool_name))
    instruction = f"When you have the answer, call the {tool_name} tool with it."
    agent.add_tool(tool)
    agent.post_turn_policies.append(finish)
    agent.post_loop_policies.append(remind)
    agent.system_prompt = f"{saved[0]}\n\n{instruction}" if saved[0] else instruction
    try:
        result = await agent.prompt(prompt)
    finally:
        agent.system_prompt = saved[0]
        agent.post_turn_policies.remove(finish)
        agent.post_loop_policies.remove(remind)
        if saved[1] is not None:
            agent.add_tool(saved[1])
        else:
            agent.remove_tool(tool_name)
    if tool.value is not _UNSET:
        return tool.value
    if result.stop_reason is StopReason.ABORTED:
        raise Aborted("the run was aborted before the structured output arrived")
    last_error = result.error or tool.last_error
    raise StructuredOutputFailed(max(tool.attempts, 1), last_error)
