"""Forced tool calls that are really forced, and a typed outcome when a call does not come.

A server that takes ``tool_choice`` may still let a model answer in prose (llama.cpp's
``llama-server`` does, for a model whose chat template knows no tools: ``"required"`` adds no
grammar then). Where the server offers structured output, a forced call goes as that instead
(``OpenAIChatCompat.tool_choice_required = "json_schema"``): the answer must be the JSON object
``{"name": <an allowed tool>, "arguments": <its parameters>}``, which the server holds the model
to with a grammar, and which ``ForcedCallParser`` turns back into a tool call.

Wherever a forced call was sent and the answer has none, the call ends as an
``ErrorKind.TOOL_NOT_CALLED`` error, which ``ExponentialBackoff`` retries (another sample may
comply) instead of passing as a normal answer.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import ErrorKind
from agentloop.stream import ErrorEvent, ToolCallDelta, ToolCallEnd, ToolCallStart

if TYPE_CHECKING:
    from agentloop.stream import AssistantMessageEvent, ToolSchema

__all__ = ["call_schema", "forced_call_events", "not_called", "response_format"]

_decode = msgspec.json.decode


def _renamed(node: Any, prefix: str) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "definitions"):
                continue
            if key == "$ref" and isinstance(value, str):
                for root in ("#/$defs/", "#/definitions/"):
                    if value.startswith(root):
                        value = f"#/$defs/{prefix}{value[len(root) :]}"
                out[key] = value
            else:
                out[key] = _renamed(value, prefix)
        return out
    if isinstance(node, list):
        return [_renamed(item, prefix) for item in node]
    return node


def call_schema(tools: list[ToolSchema]) -> dict[str, Any]:
    """The JSON Schema of one call of one of ``tools``: ``{"name": ..., "arguments": ...}``.

    Each tool's ``$defs`` move into one shared ``$defs``, renamed apart.
    """
    defs: dict[str, Any] = {}
    alternatives: list[dict[str, Any]] = []
    for index, tool in enumerate(tools):
        prefix = f"t{index}_"
        parameters = tool.parameters if isinstance(tool.parameters, dict) else {}
        for section in ("$defs", "definitions"):
            for name, value in (parameters.get(section) or {}).items():
                defs[f"{prefix}{name}"] = _renamed(copy.deepcopy(value), prefix)
        alternatives.append(
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": [tool.name]},
                    "arguments": _renamed(copy.deepcopy(parameters), prefix) or {"type": "object"},
                },
                "required": ["name", "arguments"],
            }
        )
    schema = alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}
    return {**schema, "$defs": defs} if defs else schema


def response_format(tools: list[ToolSchema]) -> dict[str, Any]:
    """The ``response_format`` that makes the answer one call of one of ``tools``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": "tool_call", "strict": True, "schema": call_schema(tools)},
    }


def forced_call_events(text: str, index: int, call_id: str) -> list[AssistantMessageEvent]:
    """The tool call that a forced answer's ``text`` holds, as events at block ``index``.

    Text that is not a call object (cut off by the token limit, say) still becomes a call,
    with its raw text as arguments, which the accumulator marks incomplete.
    """
    name = ""
    arguments = text.strip()
    try:
        parsed = _decode(arguments)
    except (msgspec.DecodeError, RecursionError):
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("name"), str):
        name = parsed["name"]
        arguments = msgspec.json.encode(parsed.get("arguments", {})).decode()
    out: list[AssistantMessageEvent] = [ToolCallStart(index=index, id=call_id, name=name)]
    if arguments:
        out.append(ToolCallDelta(index=index, delta=arguments))
    out.append(ToolCallEnd(index=index))
    return out


def not_called(provider: str, choice: str, usage: Any = None) -> ErrorEvent:
    """The error for an answer without the call that ``tool_choice=choice`` forced."""
    what = "a tool" if choice == "required" else f"the tool {choice!r}"
    return ErrorEvent(
        kind=ErrorKind.TOOL_NOT_CALLED,
        message=(
            f"{provider}: tool_choice={choice!r} forced a call of {what}, and the model "
            "answered without one (the server did not hold it to the call)"
        ),
        usage=usage,
    )
