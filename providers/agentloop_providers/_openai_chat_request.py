"""The Chat Completions request body, built plainly or from a ``RequestCache``.

One API message per history message, with two exceptions: the system prompt comes first (in the
``system`` or ``developer`` role), and images returned by a run of tool results follow the run
in one user message (tool messages carry text only). With a cache, each history message is
converted and encoded once and a request joins the pieces (see ``_request_cache``); Mistral's
adapter folds with its own codec, built on this one.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Literal

from agentloop import AssistantMessage, Image, Text, ToolCall, ToolResultMessage, UserMessage

from ._convert import (
    arguments_json,
    assistant_blocks,
    image_data_url,
    max_output_tokens,
    reasoning_effort,
    tool_choice,
    tool_result_parts,
)
from ._forced import response_format
from ._request_cache import Codec, Fold, Pieces, encode

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    from agentloop import ModelSpec, StreamOptions
    from agentloop.stream import LlmContext

    from ._request_cache import RequestCache

__all__ = ["ChatCodec", "OpenAIChatCompat", "chat_body", "openai_chat_payload"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class OpenAIChatCompat:
    """What a compatible server accepts, where servers differ.

    Attributes:
        max_tokens_field: ``max_completion_tokens`` (OpenAI) or ``max_tokens`` (most others).
        system_role: ``system``, or ``developer`` for OpenAI reasoning models.
        stream_usage: send ``stream_options.include_usage``.
        reasoning_effort: send ``reasoning_effort`` for a thinking level.
        tool_result_images: where images returned by tools go: a following user message
            (``user_message``) or nowhere (``drop``); tool messages only carry text.
        tool_choice_none: how ``tool_choice="none"`` is sent: as ``"none"``, or by leaving the
            tools out of the request (``omit_tools``) for servers that ignore the field.
        tool_choice_required: how ``tool_choice="required"`` is sent: as ``"required"``; as the
            named form when exactly one tool is offered (``named_if_single``; with several the
            field is left out and the model is not forced); as a ``response_format`` JSON
            schema of one call (``json_schema``: the server's grammar holds the model to it,
            and the answer's JSON becomes the call; see ``_forced``); or not at all (``omit``:
            the server cannot force a call).
        tool_choice_named: how a tool name is sent: OpenAI's ``{"type": "function", ...}``
            object (``object``), or by offering only that tool and requiring a call
            (``only_that_tool``, sent as ``tool_choice_required`` says) for servers that do
            not take the object.
        model_id_from_server: take the answer's model id from the server's ``model`` field;
            false for servers that report a file path there (``llama-server``), so the model
            string's id is kept.

    Which value each local server needs is in its preset (``presets.json``): llama.cpp's
    ``llama-server`` ignores the object and lets a model whose template knows no tools answer
    ``"required"`` in prose, so it gets ``json_schema``; ``llama_cpp.server`` (the
    Python package) takes the object but ignores ``"required"`` and ``"none"``; Ollama's
    ``/v1`` ignores the field altogether.
    """

    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"
    system_role: Literal["system", "developer"] = "system"
    stream_usage: bool = True
    reasoning_effort: bool = True
    tool_result_images: Literal["user_message", "drop"] = "user_message"
    tool_choice_none: Literal["none", "omit_tools"] = "none"
    tool_choice_required: Literal["required", "named_if_single", "json_schema", "omit"] = "required"
    tool_choice_named: Literal["object", "only_that_tool"] = "object"
    model_id_from_server: bool = True

    def forces(self, choice: str | None) -> bool:
        """Whether a call with ``tool_choice=choice`` is sent in a way that forces a call."""
        if choice in (None, "auto", "none") or self.tool_choice_required == "omit":
            return False
        if choice == "required":
            return self.tool_choice_required != "named_if_single"
        return True  # a name: the object, or that tool alone with a call required

    def json_call(self, choice: str | None) -> bool:
        """Whether a forced call goes as a JSON schema whose answer is the call."""
        return self.tool_choice_required == "json_schema" and self.forces(choice)


def _user(message: UserMessage) -> dict[str, Any]:
    blocks = message.content
    if all(type(b) is Text for b in blocks):
        return {"role": "user", "content": "".join(b.text for b in blocks)}  # type: ignore[union-attr]
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if type(block) is Text:
            parts.append({"type": "text", "text": block.text})
        elif type(block) is Image:
            parts.append({"type": "image_url", "image_url": {"url": image_data_url(block)}})
    return {"role": "user", "content": parts}


def _assistant(message: AssistantMessage, model: ModelSpec) -> dict[str, Any] | None:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in assistant_blocks(message, model, keep_thinking=False):
        if type(block) is Text:
            texts.append(block.text)
        elif type(block) is ToolCall:
            function = {"name": block.name, "arguments": arguments_json(block)}
            calls.append({"id": block.id, "type": "function", "function": function})
    if not texts and not calls:
        return None
    # "" rather than null for a turn of tool calls only: every known server takes "", and some
    # (llama-cpp-python's) answer null with HTTP 500.
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if calls:
        out["tool_calls"] = calls
    return out


def _tool(
    message: ToolResultMessage, compat: OpenAIChatCompat
) -> tuple[dict[str, Any], list[Image]]:
    """A tool result's message, and the images that go in the user message after the run."""
    text, images = tool_result_parts(message)
    if message.is_error:
        text = f"Error: {text}" if text else "Error"
    if images and compat.tool_result_images == "user_message":
        text = text or "(see the attached image)"
    else:
        images = []
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}, images


def _system(context: LlmContext, compat: OpenAIChatCompat) -> list[Any]:
    if context.system_prompt:
        return [{"role": compat.system_role, "content": context.system_prompt}]
    return []


def _messages(
    model: ModelSpec, context: LlmContext, compat: OpenAIChatCompat
) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = _system(context, compat)
    pending_images: list[Image] = []
    for message in context.messages:
        if type(message) is not ToolResultMessage and pending_images:
            messages.append(_tool_images(pending_images))
            pending_images = []
        if type(message) is UserMessage:
            messages.append(_user(message))
        elif type(message) is AssistantMessage:
            converted = _assistant(message, model)
            if converted is not None:
                messages.append(converted)
        elif type(message) is ToolResultMessage:
            entry, images = _tool(message, compat)
            pending_images.extend(images)
            messages.append(entry)
    if pending_images:
        messages.append(_tool_images(pending_images))
    return messages


def openai_chat_payload(
    model: ModelSpec,
    context: LlmContext,
    options: StreamOptions,
    compat: OpenAIChatCompat | None = None,
    *,
    cache: RequestCache | None = None,
) -> dict[str, Any]:
    """The Chat Completions request body for one call.

    With ``cache``, the history comes as ``msgspec.Raw`` items (the same bytes once encoded).

    Raises:
        ValueError: ``options.tool_choice`` does not fit the tools offered.
    """
    compat = compat or OpenAIChatCompat()
    if cache is None:
        messages: list[Any] = _messages(model, context, compat)
    else:
        items = cache.items(ChatCodec(model, compat), context.messages)
        messages = _system(context, compat) + items
    return chat_body(model, context, options, compat, messages)


def chat_body(
    model: ModelSpec,
    context: LlmContext,
    options: StreamOptions,
    compat: OpenAIChatCompat,
    messages: list[Any],
) -> dict[str, Any]:
    """The request body around its ``messages``.

    Raises:
        ValueError: ``options.tool_choice`` does not fit the tools offered.
    """
    body: dict[str, Any] = {"model": model.model_id, "messages": messages, "stream": True}
    if compat.stream_usage:
        body["stream_options"] = {"include_usage": True}
    _tools(body, context, options, compat)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    max_tokens = max_output_tokens(model, options, None)
    if max_tokens is not None:
        body[compat.max_tokens_field] = max_tokens
    effort = reasoning_effort(model.thinking_level)
    if effort is not None and compat.reasoning_effort:
        body["reasoning_effort"] = effort
    if options.session_id:
        body["user"] = options.session_id
    return body


def _tools(
    body: dict[str, Any], context: LlmContext, options: StreamOptions, compat: OpenAIChatCompat
) -> None:
    """Put the tools and the tool choice in ``body``, as the server understands them.

    Raises:
        ValueError: ``options.tool_choice`` does not fit the tools offered.
    """
    choice = tool_choice(options, context)
    tools = context.tools
    sent: Any = choice
    if choice == "none" and compat.tool_choice_none == "omit_tools":
        tools, sent = [], None
    elif choice not in (None, "auto", "none", "required"):
        if compat.tool_choice_named == "only_that_tool":
            tools = [t for t in tools if t.name == choice]
            choice = "required"
        else:
            sent = {"type": "function", "function": {"name": choice}}
    if choice == "required":
        if compat.tool_choice_required == "json_schema":
            body["response_format"] = response_format(list(tools))
            sent = None
        elif compat.tool_choice_required == "named_if_single":
            sent = (
                {"type": "function", "function": {"name": tools[0].name}}
                if len(tools) == 1
                else None
            )
        elif compat.tool_choice_required == "omit":
            sent = None
        else:
            sent = "required"
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in tools
        ]
        if sent is not None:
            body["tool_choice"] = sent


def _tool_images(images: list[Image]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": "Images returned by the tool:"}]
    parts.extend({"type": "image_url", "image_url": {"url": image_data_url(i)}} for i in images)
    return {"role": "user", "content": parts}


# --------------------------------------------------------------------------- the cached path

_IMAGES_OPEN = encode(_tool_images([]))[:-2] + b","
_CLOSE = b"]}"


class ChatCodec(Codec):
    """Pieces: a message's API message; a tool result's with its images' parts. Units: a
    message, or a run of tool results (closed by the user message of their images). No state
    (a subclass may carry one: it is handed on unchanged)."""

    __slots__ = ("compat", "model")

    def __init__(
        self, model: ModelSpec, compat: OpenAIChatCompat, key: Hashable | None = None
    ) -> None:
        super().__init__(key or ("chat", model.provider, compat.tool_result_images))
        self.model = model
        self.compat = compat

    def assistant(self, message: AssistantMessage, state: Any) -> dict[str, Any] | None:
        """An assistant message's API message (``None``: not sent)."""
        return _assistant(message, self.model)

    def tool(self, message: ToolResultMessage, state: Any) -> tuple[dict[str, Any], list[Image]]:
        """A tool result's API message and the images sent after the run."""
        return _tool(message, self.compat)

    def tool_key(self, message: ToolResultMessage, state: Any) -> tuple[Any, ...]:
        """The key of a tool result's piece."""
        return (self.key, id(message))

    def fold(
        self, messages: Sequence[Any], start: int, state: Any, pieces: Pieces, out: Fold
    ) -> None:
        run: list[bytes] = []
        images: list[bytes] = []
        first = -1  # where the current run of tool results begins
        for i in range(start, len(messages)):
            message = messages[i]
            cls = type(message)
            if cls is ToolResultMessage:
                if first < 0:
                    first = out.restart = i
                key = self.tool_key(message, state)
                piece: tuple[bytes, bytes] | None = pieces.get(key, message)
                if piece is None:
                    entry, found = self.tool(message, state)
                    parts = [
                        {"type": "image_url", "image_url": {"url": image_data_url(image)}}
                        for image in found
                    ]
                    piece = (encode(entry), encode(parts)[1:-1])
                    pieces.put(key, message, piece, len(piece[0]) + len(piece[1]))
                run.append(piece[0])
                if piece[1]:
                    images.append(piece[1])
                continue
            if first >= 0:
                out.add(first, _run(run, images))
                run, images, first = [], [], -1
            out.restart = i + 1  # a message on its own: nothing after it changes its item
            key = (self.key, id(message))
            data: bytes | None = pieces.get(key, message)
            if data is None:
                converted: dict[str, Any] | None = None
                if cls is UserMessage:
                    converted = _user(message)
                elif cls is AssistantMessage:
                    converted = self.assistant(message, state)
                data = b"" if converted is None else encode(converted)
                pieces.put(key, message, data, len(data))
            if data:
                out.add(i, data)
        if first >= 0:
            out.add(first, _run(run, images))
        out.state = state


def _run(run: list[bytes], images: list[bytes]) -> bytes:
    """The item of a run of tool results: their messages, then their images' message."""
    if not images:
        return b",".join(run)
    return b"".join((b",".join(run), b",", _IMAGES_OPEN, b",".join(images), _CLOSE))
