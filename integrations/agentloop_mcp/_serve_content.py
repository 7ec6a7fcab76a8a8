"""The MCP handlers for what ``serve`` offers besides tools: resources (listed, read, templates,
subscriptions), prompts, completions, and the client's log level.

Every handler turns a failure into an MCP error for the client (an unknown URI or prompt is
``INVALID_PARAMS``, a function that raised is ``INTERNAL_ERROR`` with its message), so a bad
request or a broken function never stops the server.
"""

from __future__ import annotations

import inspect
import json
import logging
import weakref
from typing import TYPE_CHECKING, Any

import anyio
from mcp import types
from mcp.shared.exceptions import MCPError

from agentloop import AssistantMessage

from ._errors import PromptArgumentError
from ._prompts import Prompt as PromptInfo, validate
from ._resources import to_mcp_contents
from ._serve_client import InputRequired, InvalidAnswer, ServedClient, serving
from ._served import mcp_message_content

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mcp.server import ServerRequestContext

    from ._served import ServedPrompt, ServedResource

__all__ = ["ContentHandlers", "connection_of", "served_client"]

log = logging.getLogger("agentloop.mcp.serve")

# The code for an unknown resource: its own up to 2025-11-25, "invalid params" since (SEP-2164).
RESOURCE_NOT_FOUND = -32002


def served_client(ctx: ServerRequestContext[Any], params: Any, level: str | None) -> ServedClient:
    """The ``current_client()`` of a request: its connection, its log level, and (2026) the
    answers it carries."""
    responses = {
        key: value.model_dump(by_alias=True, mode="json", exclude_none=True)
        if hasattr(value, "model_dump")
        else value
        for key, value in (getattr(params, "input_responses", None) or {}).items()
    }
    state = getattr(params, "request_state", None)
    return ServedClient(ctx, level=level, responses=responses, state=state)


def connection_of(ctx: ServerRequestContext[Any]) -> Any:
    """The client connection a request came on (the SDK makes a session object per request;
    the connection behind it is what lasts, and what notifications are sent on)."""
    return getattr(ctx.session, "_connection", ctx.session)


class ContentHandlers:
    """Handlers for ``resources``, ``prompts``, ``completion`` and ``logging/setLevel``."""

    def __init__(
        self, resources: Sequence[ServedResource], prompts: Sequence[ServedPrompt]
    ) -> None:
        self.resources = list(resources)
        self.prompts = {p.name: p for p in prompts}
        if len(self.prompts) != len(prompts):
            raise ValueError("two prompts have the same name")
        # Per client connection: what it subscribed to, and the least severe log level it wants.
        self.subscribers: dict[str, weakref.WeakSet[Any]] = {}
        self.levels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        for resource in self.resources:
            resource._notify = self._notify_updated  # noqa: SLF001 - installed by its server

    def server_options(self) -> dict[str, Any]:
        """Keyword arguments for the SDK's ``Server``."""
        options: dict[str, Any] = {
            "on_completion": self.complete,
        }
        if self.resources:
            options.update(
                on_list_resources=self.list_resources,
                on_list_resource_templates=self.list_templates,
                on_read_resource=self.read_resource,
                on_subscribe_resource=self.subscribe,
                on_unsubscribe_resource=self.unsubscribe,
            )
        if self.prompts:
            options.update(on_list_prompts=self.list_prompts, on_get_prompt=self.get_prompt)
        return options

    # ------------------------------------------------------------------ resources

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=r.uri,
                    name=r.name,
                    title=r.title,
                    description=r.description,
                    mime_type=r.mime_type,
                )
                for r in self.resources
                if r.template is None
            ]
        )

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=r.uri,
                    name=r.name,
                    title=r.title,
                    description=r.description,
                    mime_type=r.mime_type,
                )
                for r in self.resources
                if r.template is not None
            ]
        )

    def _find(self, uri: str, version: str) -> tuple[ServedResource, dict[str, Any]]:
        for resource in self.resources:
            variables = resource.match(uri)
            if variables is not None:
                return resource, variables
        code = types.INVALID_PARAMS if version >= "2026" else RESOURCE_NOT_FOUND
        raise MCPError(code, f"no resource {uri}", data={"uri": uri})

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        resource, variables = self._find(uri, ctx.protocol_version or "")
        try:
            contents = await resource.contents(uri, variables)
        except Exception as exc:
            log.warning("resource %s failed", uri, exc_info=True)
            raise MCPError(types.INTERNAL_ERROR, f"reading {uri} failed: {exc}") from None
        return types.ReadResourceResult(contents=[to_mcp_contents(c) for c in contents])

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        self._find(uri, ctx.protocol_version or "")
        self.subscribers.setdefault(uri, weakref.WeakSet()).add(connection_of(ctx))
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.subscribers.get(str(params.uri), weakref.WeakSet()).discard(connection_of(ctx))
        return types.EmptyResult()

    async def _notify_updated(self, uri: str) -> None:
        for connection in list(self.subscribers.get(uri, ())):
            try:
                await connection.outbound.notify("notifications/resources/updated", {"uri": uri})
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, MCPError):
                self.subscribers[uri].discard(connection)  # the client is gone

    # ------------------------------------------------------------------ prompts

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=p.name,
                    title=p.title,
                    description=p.description,
                    arguments=[
                        types.PromptArgument(
                            name=a.name, description=a.description, required=a.required
                        )
                        for a in p.arguments
                    ],
                )
                for p in self.prompts.values()
            ]
        )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        prompt = self.prompts.get(params.name)
        if prompt is None:
            raise MCPError(types.INVALID_PARAMS, f"no prompt {params.name!r}")
        info = PromptInfo(name=prompt.name, arguments=prompt.arguments)
        try:
            arguments = validate(info, params.arguments)
        except PromptArgumentError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        # A prompt function may ask the client too (current_client()), as a served tool does.
        serving(served_client(ctx, params, self.levels.get(connection_of(ctx))))
        try:
            messages = await prompt.messages(arguments)
        except InputRequired as needed:
            return types.InputRequiredResult(
                input_requests={needed.key: needed.request}, request_state=json.dumps(needed.state)
            )
        except InvalidAnswer as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        except Exception as exc:
            log.warning("prompt %s failed", prompt.name, exc_info=True)
            raise MCPError(types.INTERNAL_ERROR, f"prompt {prompt.name!r} failed: {exc}") from None
        return types.GetPromptResult(
            description=prompt.description,
            messages=[
                types.PromptMessage(
                    role="assistant" if isinstance(m, AssistantMessage) else "user", content=block
                )
                for m in messages
                for block in mcp_message_content(m)
            ],
        )

    # ------------------------------------------------------------------ completion, logging

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref = params.ref
        completer = None
        if isinstance(ref, types.PromptReference):
            prompt = self.prompts.get(ref.name)
            completer = prompt.complete if prompt is not None else None
        else:
            completer = next(
                (r.complete for r in self.resources if r.uri == ref.uri and r.template), None
            )
        values: list[str] = []
        if completer is not None:
            try:
                found = completer(params.argument.name, params.argument.value)
                if inspect.isawaitable(found):
                    found = await found
                values = [str(v) for v in found][:100]
            except Exception:
                log.warning("completion for %s failed", params.argument.name, exc_info=True)
        return types.CompleteResult(
            completion=types.Completion(values=values, total=len(values), has_more=False)
        )

    async def set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self.levels[connection_of(ctx)] = str(params.level)
        return types.EmptyResult()
