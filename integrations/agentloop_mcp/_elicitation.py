"""Elicitation: a server asks the user for something, through the application's callback.

Two modes (2025-11-25): a **form** (``schema`` is a flat JSON Schema object whose properties the
user fills in) and a **URL** (the user is sent to ``url``, out of band, for what must not pass
through the client: a sign-in, a payment). The application answers with an
``ElicitationResponse``: accept (with the form's content), decline (with a reason), or cancel.

Without a callback (a headless run) every request is declined with a reason that says so, rather
than refused as unsupported: the server learns that nobody can answer and may go on without.

Defaults (SEP-1034): the schema's ``default`` values fill every property an accepted form leaves
out, so a user interface that shows them pre-filled and an application that accepts an empty
form both send them. The content is then checked against the schema; an answer that does not
match it is an error to the server, not a silent pass.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeAlias

import fastjsonschema
import msgspec
from mcp import types

__all__ = [
    "HEADLESS_REASON",
    "ElicitationCallback",
    "ElicitationRequest",
    "ElicitationResponse",
    "apply_defaults",
    "answer_elicitation",
]

log = logging.getLogger("agentloop.mcp")

HEADLESS_REASON = "no user can be asked: this client runs without a user interface"
REASON_META_KEY = "io.agentloop/reason"


class ElicitationRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What a server asks of the user.

    Attributes:
        server: the server's name.
        mode: ``"form"`` (fill in ``schema``) or ``"url"`` (visit ``url``).
        message: what the server says it needs, to show to the user.
        schema: the form's JSON Schema (an object of flat properties); ``None`` in URL mode.
        defaults: the schema's default values, by property (what an empty form sends).
        url: the page to send the user to (URL mode).
        elicitation_id: the server's id for a URL-mode request.
    """

    server: str
    mode: Literal["form", "url"]
    message: str
    schema: dict[str, Any] | None = None
    defaults: dict[str, Any] = {}
    url: str | None = None
    elicitation_id: str | None = None


class ElicitationResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The user's answer: ``accept`` (with ``content`` in form mode), ``decline`` or ``cancel``.

    Build one with ``accept``, ``decline`` or ``cancel``.

    Attributes:
        action: what the user did.
        content: the form's values (accept, form mode).
        reason: why it was declined (sent to the server in ``_meta``, and logged).
    """

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    reason: str | None = None

    @classmethod
    def accept(cls, content: dict[str, Any] | None = None) -> ElicitationResponse:
        """The user agreed: with the form's values, or (URL mode) to visit the page."""
        return cls(action="accept", content=content)

    @classmethod
    def decline(cls, reason: str | None = None) -> ElicitationResponse:
        """The user (or the application for them) said no."""
        return cls(action="decline", reason=reason)

    @classmethod
    def cancel(cls) -> ElicitationResponse:
        """The user dismissed the request without choosing."""
        return cls(action="cancel")


ElicitationCallback: TypeAlias = Callable[[ElicitationRequest], Awaitable[ElicitationResponse]]
"""Asks the user; given to ``open_toolset(..., elicitation=)``. It may take as long as the user
needs (the server's request waits); an exception it raises declines the request."""


def _defaults(schema: dict[str, Any] | None) -> dict[str, Any]:
    properties = (schema or {}).get("properties")
    if not isinstance(properties, dict):
        return {}
    return {
        name: prop["default"]
        for name, prop in properties.items()
        if isinstance(prop, dict) and "default" in prop
    }


def apply_defaults(schema: dict[str, Any] | None, content: dict[str, Any] | None) -> dict[str, Any]:
    """``content`` with every property it lacks that has a default in ``schema`` filled in."""
    return {**_defaults(schema), **(content or {})}


def to_request(server: str, params: types.ElicitRequestParams) -> ElicitationRequest:
    """Our request for the SDK's parameters."""
    if isinstance(params, types.ElicitRequestURLParams):
        return ElicitationRequest(
            server=server,
            mode="url",
            message=params.message,
            url=params.url,
            elicitation_id=params.elicitation_id,
        )
    schema = params.requested_schema
    return ElicitationRequest(
        server=server,
        mode="form",
        message=params.message,
        schema=schema,
        defaults=_defaults(schema),
    )


async def answer_elicitation(
    callback: ElicitationCallback | None, request: ElicitationRequest
) -> ElicitationResponse | str:
    """Ask ``callback`` (or decline, headless); the response with defaults applied, or the
    text of an error to send the server when the answer does not fit the schema."""
    if callback is None:
        return ElicitationResponse.decline(HEADLESS_REASON)
    try:
        response = await callback(request)
    except Exception as exc:
        log.exception("the elicitation callback raised for %s", request.server)
        return ElicitationResponse.decline(f"the client failed to ask: {type(exc).__name__}")
    if not isinstance(response, ElicitationResponse):
        return f"the elicitation callback returned {type(response).__name__}"
    if response.action != "accept" or request.mode != "form":
        return msgspec.structs.replace(response, content=None)
    content = apply_defaults(request.schema, response.content)
    if request.schema:
        try:
            fastjsonschema.compile(request.schema)(content)
        except fastjsonschema.JsonSchemaValueException as exc:
            return f"the answer does not match the requested schema: {exc.message}"
        except Exception as exc:  # a schema the validator cannot compile: the server checks
            log.info("elicitation schema of %s not checked: %r", request.server, exc)
    return ElicitationResponse.accept(content)


def to_result(response: ElicitationResponse) -> types.ElicitResult:
    """The SDK's result for our response (a decline's reason in ``_meta``)."""
    meta = {REASON_META_KEY: response.reason} if response.reason else None
    return types.ElicitResult(action=response.action, content=response.content, _meta=meta)
