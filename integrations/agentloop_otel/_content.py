"""Messages as the conventions' content attributes (captured only when asked for).

``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions`` and
``gen_ai.tool.definitions`` hold JSON text in the conventions' shapes: a message is a ``role``
and a list of ``parts`` (``text``, ``reasoning``, ``tool_call``, ``tool_call_response``).

What never appears, whatever is captured: redacted reasoning (its opaque data is the
provider's, and its text was withheld from us on purpose), image bytes (an image is named by its
media type, or its URL), and anything of the stream options (the API key travels there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import (
    AssistantMessage,
    Extension,
    Image,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    extract_text,
)
from agentloop.secrets import redact

from ._names import finish_reason

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from agentloop import ContentBlock, LlmMessage
    from agentloop.stream import ToolSchema

__all__ = [
    "input_messages",
    "json_text",
    "output_messages",
    "system_instructions",
    "tool_definitions",
]

_encode = msgspec.json.Encoder(enc_hook=repr).encode


def json_text(value: Any) -> str:
    """``value`` as JSON text (what the encoder cannot represent, as its ``repr``), every
    secret the process knows redacted (``agentloop.secrets``): a span is a surface too."""
    return redact(_encode(value).decode())


def _parts(blocks: Iterable[ContentBlock]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        cls = type(block)
        if cls is Text:
            assert isinstance(block, Text)
            parts.append({"type": "text", "content": block.text})
        elif cls is Thinking:
            assert isinstance(block, Thinking)
            if not block.redacted and block.thinking:
                parts.append({"type": "reasoning", "content": block.thinking})
        elif cls is ToolCall:
            assert isinstance(block, ToolCall)
            arguments = block.arguments if block.partial_json is None else block.partial_json
            parts.append(
                {"type": "tool_call", "id": block.id, "name": block.name, "arguments": arguments}
            )
        elif cls is Image:
            assert isinstance(block, Image)
            part: dict[str, Any] = {"type": "image", "mime_type": block.media_type}
            if block.url:
                part["uri"] = block.url
            parts.append(part)
        elif cls is Extension:
            assert isinstance(block, Extension)
            parts.append({"type": block.type_name})
    return parts


def _message(message: LlmMessage) -> dict[str, Any]:
    cls = type(message)
    if cls is ToolResultMessage:
        assert isinstance(message, ToolResultMessage)
        response = {
            "type": "tool_call_response",
            "id": message.tool_call_id,
            "response": extract_text(message.content),
        }
        return {"role": "tool", "parts": [response]}
    if cls is AssistantMessage:
        assert isinstance(message, AssistantMessage)
        return {"role": "assistant", "parts": _parts(message.content)}
    assert isinstance(message, UserMessage)
    return {"role": "user", "parts": _parts(message.content)}


def input_messages(messages: Sequence[LlmMessage]) -> str:
    """The messages of a request (the system prompt apart), as ``gen_ai.input.messages``."""
    return json_text([_message(m) for m in messages])


def output_messages(message: AssistantMessage) -> str:
    """An answer as ``gen_ai.output.messages``."""
    out = {
        "role": "assistant",
        "parts": _parts(message.content),
        "finish_reason": finish_reason(message.stop_reason, message.error_kind),
    }
    return json_text([out])


def system_instructions(system_prompt: str) -> str:
    """A system prompt as ``gen_ai.system_instructions``."""
    return json_text([{"type": "text", "content": system_prompt}])


def tool_definitions(tools: Sequence[ToolSchema]) -> str:
    """The tools offered to the model, as ``gen_ai.tool.definitions``."""
    return json_text(
        [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            }
            for t in tools
        ]
    )
