"""What an ACP client sends in a prompt, for the model; and the commands the agent offers.

A prompt is a list of content blocks. Each becomes part of one ``UserMessage``:

============================  ===========================================================
ACP block                     for the model
============================  ===========================================================
``text``                      the text
``image``                     an ``Image`` (base64 data, or its URI), if the model takes
                              images; refused otherwise
``audio``                     refused: no provider of agentloop sends audio to a model
``resource`` (embedded)       text: ``<file uri="...">`` around it; an image blob: an
                              ``Image`` as above; any other blob: refused
``resource_link``             a line naming it (the model can read it with ``read_file``)
============================  ===========================================================

A refused block fails the prompt with ``Invalid params`` saying why, before the model is
called: nothing is silently dropped. ``initialize`` advertises the same thing
(``promptCapabilities``): images when the configured model takes them, no audio, embedded
context. Which models take images: those of the providers whose wire format carries them
(``IMAGE_PROVIDERS``); the ``images`` setting says otherwise for a model that is not.

Slash commands: a prompt that is a single text block starting with ``/`` names a command
(``COMMANDS``, and the MCP servers' prompts); ``available_commands_update`` lists them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import acp
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    PromptCapabilities,
    UnstructuredCommandInput,
)

from agentloop import Image, Text, UserMessage

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentloop import ContentBlock

    from ._config import Config

__all__ = [
    "COMMANDS",
    "IMAGE_PROVIDERS",
    "available_commands",
    "parse_command",
    "prompt_capabilities",
    "takes_images",
    "to_message",
]

IMAGE_PROVIDERS = frozenset(
    {
        "anthropic",
        "openai",
        "openai_responses",
        "azure",
        "gemini",
        "bedrock",
        "xai",
        "openrouter",
        "ollama",
        "scripted",
    }
)
"""Providers whose requests carry a user's images to the model."""

COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("Plan mode: read-only tools, and a plan as the answer", "what to plan (optional)"),
    "execute": ("Execute mode; alone, carry out the last plan", "what to do (optional)"),
    "model": ("Show the model, or switch to another", "provider:model-id"),
    "approval": ("Show or change which tool calls need approval", "enabled | smart | bypassed"),
}
"""The agent's own commands: name -> (description, input hint)."""


def takes_images(model: str, config: Config) -> bool:
    """Whether prompts with images may go to ``model`` (``provider:model-id``)."""
    if config.images is not None:
        return config.images
    return model.split(":", 1)[0] in IMAGE_PROVIDERS


def prompt_capabilities(model: str | None, config: Config) -> PromptCapabilities:
    """What ``initialize`` says prompts may hold, for the configured model."""
    images = model is not None and takes_images(model, config)
    return PromptCapabilities(image=images, audio=False, embedded_context=True)


def _refuse(details: str) -> acp.RequestError:
    return acp.RequestError.invalid_params({"details": details})


def _image(data: str | None, mime: str | None, uri: str | None, images: bool, model: str) -> Image:
    if not images:
        raise _refuse(
            f"the model {model} does not take images (set images = true in the configuration "
            "if it does)"
        )
    media_type = mime or "image/png"
    if data:
        return Image(media_type=media_type, data=data)
    if uri:
        return Image(media_type=media_type, url=uri)
    raise _refuse("an image block needs data or a URI")


def to_message(blocks: Sequence[Any], *, images: bool, model: str) -> UserMessage:
    """The user message a prompt's blocks make (module docs).

    Raises:
        acp.RequestError: a block the model cannot take (invalid params, saying why), or
            an empty prompt.
    """
    content: list[ContentBlock] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            content.append(Text(text=block.text))
        elif kind == "image":
            content.append(_image(block.data, block.mime_type, block.uri, images, model))
        elif kind == "audio":
            raise _refuse("audio is not supported: no agentloop provider sends audio to a model")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            mime = getattr(resource, "mime_type", None) or ""
            if isinstance(text, str):
                content.append(Text(text=f'<file uri="{resource.uri}">\n{text}\n</file>'))
            elif mime.startswith("image/"):
                content.append(_image(resource.blob, mime, None, images, model))
            else:
                raise _refuse(
                    f"{resource.uri}: binary content ({mime or 'no type'}) cannot be given to "
                    "the model; attach it as text or as an image"
                )
        elif kind == "resource_link":
            described = f" ({block.description})" if getattr(block, "description", None) else ""
            content.append(Text(text=f"[{block.name}]({block.uri}){described}"))
        else:
            raise _refuse(f"a {kind!r} block is not supported in prompts")
    if not content:
        raise _refuse("the prompt is empty")
    return UserMessage(content=content)


def parse_command(blocks: Sequence[Any]) -> tuple[str, str] | None:
    """``(name, the rest)`` when the prompt is one text block of a slash command."""
    if len(blocks) != 1 or getattr(blocks[0], "type", None) != "text":
        return None
    text = blocks[0].text.strip()
    if not text.startswith("/") or text.startswith("//") or len(text) == 1:
        return None
    name, _, rest = text[1:].partition(" ")
    return name, rest.strip()


def available_commands(prompt_commands: Sequence[Any]) -> list[AvailableCommand]:
    """The agent's commands, then the MCP servers' prompts (``PromptCommand``s)."""
    out = [
        AvailableCommand(name=name, description=description, input=_hint(hint))
        for name, (description, hint) in COMMANDS.items()
    ]
    for command in prompt_commands:
        hint = _hint(command.hint) if command.hint else None
        out.append(AvailableCommand(name=command.name, description=command.description, input=hint))
    return out


def _hint(text: str) -> AvailableCommandInput:
    return AvailableCommandInput(root=UnstructuredCommandInput(hint=text))
