"""Prompts: a server's message templates, as plain values, rendered into ``AgentMessage``s.

``McpToolset.list_prompts`` lists them; ``get_prompt(name, arguments)`` checks the arguments
against what the prompt declares (every required one given, no unknown one, each a string)
before anything is sent, and renders the server's messages into ``UserMessage`` and
``AssistantMessage`` values (consecutive messages of one role joined, as providers want them
alternating), bounded like a tool result.

For user interfaces, a prompt is also a command (``PromptCommand``): a name such as
``mcp__files__review``, a description, a hint naming the arguments, and ``parse`` to read the
text a user typed after the command into arguments.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import AgentMessage, AssistantMessage, ContentBlock, Text, UserMessage

from ._content import Bounded, ResultLimits
from ._errors import PromptArgumentError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mcp import types

__all__ = ["Prompt", "PromptArgument", "PromptCommand", "RenderedPrompt", "render", "validate"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class PromptArgument(msgspec.Struct, frozen=True, kw_only=True):
    """One argument of a prompt (always a string).

    Attributes:
        name: its name.
        description: what it is for.
        required: whether the prompt needs it.
    """

    name: str
    description: str | None = None
    required: bool = False


class Prompt(msgspec.Struct, frozen=True, kw_only=True):
    """A prompt a server lists.

    Attributes:
        name: its name on the server.
        title: a name for people.
        description: what it does.
        arguments: what it takes.
        server: the server's name.
    """

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] = []
    server: str = ""


class RenderedPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """A prompt got from its server.

    Attributes:
        messages: its messages, ready for ``Agent.prompt``.
        description: the server's description of this rendering.
        truncated: what the result limits cut, or ``None``.
    """

    messages: list[AgentMessage]
    description: str | None = None
    truncated: dict[str, Any] | None = None


class PromptCommand(msgspec.Struct, frozen=True, kw_only=True):
    """A prompt offered as a command of a user interface (a slash command, say).

    Attributes:
        name: the command, ``mcp__<server>__<prompt>`` (letters, digits, ``_`` and ``-``).
        server: the server's name.
        prompt: the prompt's name on the server.
        description: what it does (the prompt's title or description).
        hint: how to give its arguments (``<file> [focus]``), empty when it takes none.
        arguments: the prompt's arguments.
    """

    name: str
    server: str
    prompt: str
    description: str
    hint: str
    arguments: list[PromptArgument] = []

    @classmethod
    def of(cls, prompt: Prompt) -> PromptCommand:
        """The command for ``prompt``."""
        hint = " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in prompt.arguments)
        name = f"mcp__{_UNSAFE.sub('_', prompt.server)}__{_UNSAFE.sub('_', prompt.name)}"
        return cls(
            name=name,
            server=prompt.server,
            prompt=prompt.name,
            description=prompt.title or prompt.description or prompt.name,
            hint=hint,
            arguments=list(prompt.arguments),
        )

    def parse(self, text: str) -> dict[str, str]:
        """The arguments in what a user typed after the command.

        ``name=value`` pairs (shell quoting allowed) name arguments; other words fill the
        arguments in order; a prompt with one argument takes the whole text.

        Raises:
            PromptArgumentError: unbalanced quotes, or more words than arguments.
        """
        text = text.strip()
        if not text:
            return {}
        if len(self.arguments) == 1 and "=" not in text.split(None, 1)[0]:
            return {self.arguments[0].name: text}
        try:
            words = shlex.split(text)
        except ValueError as exc:
            raise PromptArgumentError(self.prompt, str(exc)) from None
        names = [a.name for a in self.arguments]
        values: dict[str, str] = {}
        positional = iter(n for n in names)
        for word in words:
            key, sep, value = word.partition("=")
            if sep and key in names:
                values[key] = value
                continue
            for name in positional:
                if name not in values:
                    values[name] = word
                    break
            else:
                raise PromptArgumentError(self.prompt, f"more values than arguments: {word!r}")
        return values


def from_prompt(prompt: types.Prompt, server: str) -> Prompt:
    return Prompt(
        name=prompt.name,
        title=prompt.title,
        description=prompt.description,
        arguments=[
            PromptArgument(name=a.name, description=a.description, required=bool(a.required))
            for a in prompt.arguments or ()
        ],
        server=server,
    )


def validate(prompt: Prompt, arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """``arguments`` checked against what ``prompt`` declares.

    Raises:
        PromptArgumentError: a required argument is missing, one is unknown, or one is not a
            string.
    """
    given = dict(arguments or {})
    declared = {a.name for a in prompt.arguments}
    unknown = sorted(set(given) - declared)
    if unknown:
        raise PromptArgumentError(prompt.name, f"unknown argument(s) {', '.join(unknown)}")
    missing = [a.name for a in prompt.arguments if a.required and a.name not in given]
    if missing:
        raise PromptArgumentError(prompt.name, f"missing required argument(s) {', '.join(missing)}")
    for key, value in given.items():
        if not isinstance(value, str):
            raise PromptArgumentError(
                prompt.name, f"{key} must be a string, not {type(value).__name__}"
            )
    return given


def render(result: types.GetPromptResult, limits: ResultLimits) -> RenderedPrompt:
    """The server's messages as agentloop messages, within ``limits`` (one budget for all)."""
    bounded = Bounded(limits)
    roles: list[tuple[str, int]] = []  # each message's role and where its blocks start
    for message in result.messages:
        roles.append((message.role, len(bounded.blocks)))
        bounded.add_mcp(message.content)
    ends = [start for _, start in roles[1:]] + [len(bounded.blocks)]
    grouped: list[tuple[str, list[ContentBlock]]] = []
    for (role, start), end in zip(roles, ends, strict=True):
        blocks = bounded.blocks[start:end]
        if grouped and grouped[-1][0] == role:
            grouped[-1][1].extend(blocks)
        else:
            grouped.append((role, list(blocks)))
    cut = bounded.report()
    kept = len(bounded.blocks)
    marker = bounded.finish()[kept:]
    if marker and grouped:
        grouped[-1][1].extend(marker)
    messages: list[AgentMessage] = []
    for role, blocks in grouped:
        if role == "assistant":
            text = [b for b in blocks if isinstance(b, Text)]
            messages.append(AssistantMessage(content=list(text)))
        else:
            messages.append(UserMessage(content=blocks))
    return RenderedPrompt(messages=messages, description=result.description, truncated=cut)
