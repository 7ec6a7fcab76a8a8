"""Resources and prompts an application serves next to its tools (``serve``/``build_server``).

Make them from functions with the decorators::

    @agentloop_mcp.resource("notes://today", mime_type="text/plain")
    def today() -> str:
        return NOTES["today"]

    @agentloop_mcp.resource("notes://{day}/summary")      # a template: {day} is an argument
    async def summary(day: str) -> str:
        return f"summary of {day}"

    @agentloop_mcp.prompt(title="Review a file")
    def review(path: str, focus: str = "bugs") -> str:
        return f"Review {path}, looking for {focus}."

A resource function returns ``str`` (text), ``bytes`` (binary) or a list of
``ResourceContents``; a prompt function returns ``str`` (one user message) or a list of
``UserMessage``/``AssistantMessage``. Prompt arguments come from the function's parameters
(all strings; those with a default are optional). Plain functions run in a worker thread; an
exception a function raises is sent to the client as an error, never crashes the server.
Either may offer completions for its arguments with ``complete=`` (a function of the argument's
name and the value typed so far, returning suggestions).
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias

import anyio.to_thread
from mcp.shared.uri_template import UriTemplate

from agentloop import AssistantMessage, Text, UserMessage

from ._content import to_mcp_blocks
from ._prompts import PromptArgument
from ._resources import ResourceContents

__all__ = ["Completer", "ServedPrompt", "ServedResource", "call_function", "prompt", "resource"]

Completer: TypeAlias = Callable[[str, str], Sequence[str] | Awaitable[Sequence[str]]]
"""Suggests values for an argument: ``complete(argument_name, value_so_far)``."""


async def call_function(fn: Callable[..., Any], **arguments: Any) -> Any:
    """Call ``fn`` (async, or sync in a worker thread that cancellation abandons)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(**arguments)
    result = await anyio.to_thread.run_sync(lambda: fn(**arguments), abandon_on_cancel=True)
    if inspect.isawaitable(result):
        result = await result
    return result


class ServedResource:
    """A resource (or, when ``uri`` has ``{placeholders}``, a resource template) to serve.

    Attributes:
        uri: the resource's URI, or an RFC 6570 template.
        name: its name (the function's by default).
        title: a name for people.
        description: what it is (the function's docstring by default).
        mime_type: its media type.
        read: the function that reads it (the template's variables as keyword arguments).
        complete: suggests values for a template's variables.
    """

    def __init__(
        self,
        uri: str,
        read: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        complete: Completer | None = None,
    ) -> None:
        self.uri = uri
        self.read = read
        self.name: str = name or getattr(read, "__name__", None) or uri
        self.title = title
        self.description = description or inspect.getdoc(read)
        self.mime_type = mime_type
        self.complete = complete
        self.template = UriTemplate.parse(uri) if UriTemplate.is_template(uri) else None
        self._notify: Callable[[str], Awaitable[None]] | None = None

    async def changed(self, uri: str | None = None) -> None:
        """Tell the clients subscribed to this resource (or to ``uri``, an instance of this
        template) that it changed. Nothing happens before it is served."""
        if self._notify is not None:
            await self._notify(uri or self.uri)

    def match(self, uri: str) -> dict[str, Any] | None:
        """The variables if ``uri`` is this resource (or an instance of the template)."""
        if self.template is None:
            return {} if uri == self.uri else None
        return self.template.match(uri)

    async def contents(self, uri: str, variables: dict[str, Any]) -> list[ResourceContents]:
        """Read it: the function's value as resource contents.

        Raises:
            TypeError: the function returned something that is not text, bytes or contents.
        """
        value = await call_function(self.read, **variables)
        if isinstance(value, str):
            return [ResourceContents(uri=uri, mime_type=self.mime_type or "text/plain", text=value)]
        if isinstance(value, bytes | bytearray):
            blob = base64.b64encode(bytes(value)).decode()
            mime = self.mime_type or "application/octet-stream"
            return [ResourceContents(uri=uri, mime_type=mime, blob=blob)]
        if isinstance(value, list) and all(isinstance(v, ResourceContents) for v in value):
            return value
        raise TypeError(f"resource {self.uri!r} returned {type(value).__name__}")


class ServedPrompt:
    """A prompt to serve.

    Attributes:
        name: its name (the function's by default).
        title: a name for people.
        description: what it does (the function's docstring by default).
        arguments: what it takes (from the function's parameters by default).
        render: the function that renders it (the arguments as keyword arguments).
        complete: suggests values for its arguments.
    """

    def __init__(
        self,
        render: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        arguments: Sequence[PromptArgument] | None = None,
        complete: Completer | None = None,
    ) -> None:
        self.render = render
        self.name = name or render.__name__
        self.title = title
        self.description = description or inspect.getdoc(render)
        self.arguments = list(arguments) if arguments is not None else _arguments_of(render)
        self.complete = complete

    async def messages(self, arguments: dict[str, str]) -> list[UserMessage | AssistantMessage]:
        """Render it.

        Raises:
            TypeError: the function returned something that is not text or messages.
        """
        value = await call_function(self.render, **arguments)
        if isinstance(value, str):
            return [UserMessage(content=[Text(text=value)])]
        if isinstance(value, list) and all(
            isinstance(m, UserMessage | AssistantMessage) for m in value
        ):
            return value
        raise TypeError(f"prompt {self.name!r} returned {type(value).__name__}")


def _arguments_of(fn: Callable[..., Any]) -> list[PromptArgument]:
    found: list[PromptArgument] = []
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        found.append(
            PromptArgument(name=parameter.name, required=parameter.default is parameter.empty)
        )
    return found


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    complete: Completer | None = None,
) -> Callable[[Callable[..., Any]], ServedResource]:
    """Make a function a ``ServedResource`` (see the module's documentation)."""

    def wrap(fn: Callable[..., Any]) -> ServedResource:
        return ServedResource(
            uri,
            fn,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            complete=complete,
        )

    return wrap


def prompt(
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    complete: Completer | None = None,
) -> Callable[[Callable[..., Any]], ServedPrompt]:
    """Make a function a ``ServedPrompt`` (see the module's documentation)."""

    def wrap(fn: Callable[..., Any]) -> ServedPrompt:
        return ServedPrompt(fn, name=name, title=title, description=description, complete=complete)

    return wrap


def mcp_message_content(message: UserMessage | AssistantMessage) -> list[Any]:
    """The MCP content blocks of a message (see ``to_mcp_blocks``)."""
    return to_mcp_blocks(message.content)
