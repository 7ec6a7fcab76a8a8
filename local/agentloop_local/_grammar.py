"""Grammars that hold a local model's answer to the tool-call syntax, so every call parses.

A call is ``<tool_call>`` + a JSON object + ``</tool_call>``; the object is
``{"name": <one of the offered tools>, "arguments": <that tool's parameters schema>}``. The
JSON Schema to GBNF translation is llama.cpp's own (``llama_cpp.llama_grammar``, a port of
``json_schema_to_grammar``), which knows ``$ref``, ``anyOf``, ``enum``, ``const``, formats
and the rest. Two ways to apply it:

- **forced** (``tool_choice="required"`` or a tool's name): the grammar holds from the first
  token, so the answer *is* one call of an allowed tool; a model cannot answer in prose.
- **lazy** (``tool_choice="auto"``): the model writes freely until it writes ``<tool_call>``;
  from there the grammar holds, so a call it starts is well formed (several may follow).

A schema the translator cannot take (a malformed one) falls back to "any JSON object" for
that tool's arguments: the call still parses, and the loop's validation answers bad
arguments with an error result the model can read.
"""

from __future__ import annotations

import copy
import json
import threading
from typing import TYPE_CHECKING, Any

import msgspec

from ._template import CALL_CLOSE, CALL_OPEN

if TYPE_CHECKING:
    from agentloop.stream import ToolSchema

__all__ = ["LAZY_TRIGGER", "call_grammar"]

_KEPT = 64  # grammars kept, for the most recent sets of tools
_made: dict[bytes, str] = {}
_made_lock = threading.Lock()
_encode = msgspec.json.Encoder(order="deterministic").encode

# llama.cpp matches this against the whole output so far and feeds the grammar from the first
# group on: everything before the call is free text.
LAZY_TRIGGER = r"[\s\S]*?(" + CALL_OPEN + r")[\s\S]*"


def _namespaced(node: Any, prefix: str) -> Any:
    """``node`` with every local ``$ref`` renamed into ``prefix``'s part of ``$defs``."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                for root in ("#/$defs/", "#/definitions/"):
                    if value.startswith(root):
                        value = f"#/$defs/{prefix}{value[len(root) :]}"
                        break
                out[key] = value
            elif key in ("$defs", "definitions"):
                continue
            else:
                out[key] = _namespaced(value, prefix)
        return out
    if isinstance(node, list):
        return [_namespaced(item, prefix) for item in node]
    return node


def _call_schema(tools: list[ToolSchema]) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    alternatives: list[dict[str, Any]] = []
    for index, tool in enumerate(tools):
        prefix = f"t{index}-"
        parameters = copy.deepcopy(tool.parameters) if isinstance(tool.parameters, dict) else {}
        for section in ("$defs", "definitions"):
            for name, value in (parameters.get(section) or {}).items():
                defs[f"{prefix}{name}"] = _namespaced(value, prefix)
        arguments = _namespaced(parameters, prefix) or {"type": "object"}
        if arguments.get("type") is None and "properties" in arguments:
            arguments["type"] = "object"
        alternatives.append(
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": arguments},
                "required": ["name", "arguments"],
            }
        )
    schema: dict[str, Any] = alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}
    if defs:
        schema = {**schema, "$defs": defs}
    return schema


def _to_gbnf(schema: dict[str, Any]) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return str(json_schema_to_gbnf(json.dumps(schema), prop_order=["name", "arguments"]))


def _loose(tools: list[ToolSchema]) -> list[ToolSchema]:
    return [msgspec.structs.replace(t, parameters={"type": "object"}) for t in tools]


def call_grammar(tools: list[ToolSchema], *, forced: bool) -> str:
    """The GBNF for calls of ``tools``: exactly one call when ``forced``, else one or more
    calls (for a lazy grammar triggered by ``<tool_call>``). Made once per set of tools: an
    agent offers the same tools call after call."""
    key = _encode([(t.name, t.parameters) for t in tools]) + (b"1" if forced else b"0")
    with _made_lock:
        found = _made.get(key)
    if found is None:
        found = _call_grammar(tools, forced=forced)
        with _made_lock:  # worker threads of several calls may get here at once
            _made[key] = found
            while len(_made) > _KEPT:
                _made.pop(next(iter(_made)))
    return found


def _call_grammar(tools: list[ToolSchema], *, forced: bool) -> str:
    try:
        body = _to_gbnf(_call_schema(tools))
    except Exception:  # noqa: BLE001 (a schema the translator rejects: keep calls parseable)
        body = _to_gbnf(_call_schema(_loose(tools)))
    # The translator's start rule becomes ours to wrap; its other rules stay as they are.
    body = body.replace("root ::=", "call ::=", 1)
    open_, close = json.dumps(CALL_OPEN), json.dumps(CALL_CLOSE)
    block = f'{open_} "\\n"? call "\\n"? {close}'
    start = f"root ::= {block}" if forced else f'root ::= {block} ("\\n" {block})*'
    return f"{start}\n{body}"
