"""The prompt: a conversation rendered with the model's own chat template, read from its GGUF.

The template is Jinja, as the model's authors wrote it; it runs in Jinja's immutable sandbox
(a GGUF is data from outside, and a template is code). Tool calls always use one syntax, the
one Hermes, Qwen and SmolLM3 templates teach their models::

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

A template that speaks it (it mentions ``tools`` and ``<tool_call>``) gets the tools and the
calls as structured values and renders them itself. Any other template (SmolLM2's, Gemma's:
they know nothing of tools) gets the tools described in the system prompt, past calls written
out in that syntax, and tool results as user turns in ``<tool_response>`` tags; adjacent turns
of one role are merged, since templates such as Gemma's insist that roles alternate. Either
way the answer is held to that syntax by a grammar (see ``_grammar``), so it always parses.
"""

from __future__ import annotations

import datetime
import functools
from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import AssistantMessage, Image, Text, ToolCall, ToolResultMessage, UserMessage

from ._errors import LocalModelError

if TYPE_CHECKING:
    from agentloop.stream import LlmContext, ToolSchema

__all__ = ["CALL_CLOSE", "CALL_OPEN", "ChatTemplate"]

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
_CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)
_encode = msgspec.json.Encoder(order="deterministic").encode


def _tool_instructions(tools: list[ToolSchema]) -> str:
    lines = [
        "You can call tools. To call one, answer with only this, and nothing before it:",
        CALL_OPEN,
        '{"name": "<tool name>", "arguments": {<the arguments as a JSON object>}}',
        CALL_CLOSE,
        "The result comes back in <tool_response> tags. The tools:",
    ]
    for tool in tools:
        schema = _encode(tool.parameters).decode()
        lines.append(f"- {tool.name}: {tool.description} Arguments (JSON Schema): {schema}")
    return "\n".join(lines)


def _call_text(call: ToolCall) -> str:
    arguments = call.arguments if call.partial_json is None else {}
    body = _encode({"name": call.name, "arguments": arguments}).decode()
    return f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}"


def _text_of(blocks: list[Any]) -> str:
    parts: list[str] = []
    for block in blocks:
        if type(block) is Text:
            parts.append(block.text)
        elif type(block) is Image:
            parts.append("[an image, which this model cannot see]")
    return "".join(parts)


@functools.cache
def _environment() -> Any:
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as exc:  # pragma: no cover (jinja2 comes with llama-cpp-python)
        raise LocalModelError("chat templates need jinja2: pip install jinja2") from exc

    def raise_exception(message: str) -> None:
        raise LocalModelError(f"the model's chat template refused the conversation: {message}")

    def strftime_now(fmt: str) -> str:
        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


class ChatTemplate:
    """A model's chat template, compiled once.

    Args:
        source: the Jinja source from the GGUF (``tokenizer.chat_template``); ChatML if none.
        bos: the text of the model's beginning-of-sequence token, for templates that write it.
        eos: the text of its end-of-sequence token.

    Raises:
        LocalModelError: the template is not valid Jinja.
    """

    def __init__(self, source: str | None, *, bos: str = "", eos: str = "") -> None:
        self.source = source or _CHATML
        try:
            self._template = _environment().from_string(self.source)
        except Exception as exc:  # noqa: BLE001 (jinja2's TemplateSyntaxError and friends)
            raise LocalModelError(f"the model's chat template is not valid Jinja: {exc}") from exc
        self.bos = bos
        self.eos = eos
        self.native_tools = "tools" in self.source and CALL_OPEN in self.source

    def render(self, context: LlmContext, *, tools: bool = True) -> str:
        """The prompt for ``context``, ending where the assistant's answer begins.

        ``tools`` false leaves the tools out (``tool_choice="none"``).

        Raises:
            LocalModelError: the template failed or refused the conversation.
        """
        offered = list(context.tools) if tools else []
        messages = self._messages(context, offered)
        variables: dict[str, Any] = {
            "messages": messages,
            "add_generation_prompt": True,
            "bos_token": self.bos,
            "eos_token": self.eos,
        }
        if offered and self.native_tools:
            variables["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in offered
            ]
        try:
            return str(self._template.render(**variables))
        except LocalModelError:
            raise
        except Exception as exc:  # noqa: BLE001 (any failure of third-party template code)
            raise LocalModelError(f"the model's chat template failed: {exc!r}") from exc

    def _messages(self, context: LlmContext, tools: list[ToolSchema]) -> list[dict[str, Any]]:
        native = self.native_tools
        system = context.system_prompt
        if tools and not native:
            system = (
                f"{system}\n\n{_tool_instructions(tools)}" if system else _tool_instructions(tools)
            )
        out: list[dict[str, Any]] = []
        if system:
            out.append({"role": "system", "content": system})
        for message in context.messages:
            if type(message) is UserMessage:
                out.append({"role": "user", "content": _text_of(message.content)})
            elif type(message) is AssistantMessage:
                out.append(self._assistant(message, native))
            elif type(message) is ToolResultMessage:
                text = _text_of(message.content)
                if message.is_error:
                    text = f"Error: {text}"
                if native:
                    out.append(
                        {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}
                    )
                else:
                    out.append(
                        {"role": "user", "content": f"<tool_response>\n{text}\n</tool_response>"}
                    )
        return out if native else _merged(out)

    @staticmethod
    def _assistant(message: AssistantMessage, native: bool) -> dict[str, Any]:
        text = "".join(b.text for b in message.content if type(b) is Text)
        calls = [b for b in message.content if type(b) is ToolCall]
        if native and calls:
            return {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in calls
                ],
            }
        written = [text] if text else []
        written.extend(_call_text(c) for c in calls)
        return {"role": "assistant", "content": "\n".join(written)}


def _merged(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if out and out[-1]["role"] == message["role"]:
            out[-1] = {**out[-1], "content": f"{out[-1]['content']}\n\n{message['content']}"}
        else:
            out.append(message)
    return out
