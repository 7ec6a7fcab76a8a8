"""What a served tool may ask of the client that called it: ``agentloop_mcp.current_client()``.

While ``serve`` runs a tool for an MCP client, ``current_client()`` returns a ``ServedClient``
for that call (``None`` elsewhere). Through it an async tool can send the client log messages,
ask its user (elicitation, form or URL) and ask its model (sampling)::

    @agentloop.tool
    async def deploy(target: str) -> str:
        client = agentloop_mcp.current_client()
        if client is not None:
            await client.log("info", f"deploying to {target}")
            answer = await client.elicit("Really deploy?", {"type": "object", "properties": {}})
            if answer.action != "accept":
                return "not deployed"
        ...

Over the 2025 handshake these are requests from the server to the client, answered while the
tool waits. On 2026-07-28 connections there are no such requests: an ask the client has not
answered yet ends the call with an ``InputRequiredResult`` naming it (the question's ``key``),
and the client calls the tool again with the answer; the tool then runs **from the start**, and
each ask it has an answer for returns at once. Answers of earlier rounds travel in the sealed
``requestState``. So on 2026 connections, what a tool does before it asks may be done once per
round: keep it free of effects, or ask first. Log messages are sent when the client opted in.
"""

from __future__ import annotations

import contextvars
import json
import warnings
from typing import TYPE_CHECKING, Any, TypeVar

from mcp import types
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from agentloop import AssistantMessage, Image, StopReason, Text, Usage

from ._elicitation import ElicitationResponse
from ._errors import McpError, RequestFailed

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["InputRequired", "MissingCapability", "ServedClient", "current_client", "serving"]

T = TypeVar("T")
_current: contextvars.ContextVar[ServedClient | None] = contextvars.ContextVar(
    "agentloop_mcp_served_client", default=None
)
_ORDER = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_STOP = {"endTurn": StopReason.STOP, "maxTokens": StopReason.LENGTH, "toolUse": StopReason.TOOL_USE}


class MissingCapability(McpError):
    """A served tool needs a capability the client did not declare (``ServedClient.require``).

    Attributes:
        capabilities: the missing ones.
    """

    def __init__(self, capabilities: Sequence[str]) -> None:
        super().__init__(f"this tool needs the client capabilities {', '.join(capabilities)}")
        self.capabilities = list(capabilities)


class InputRequired(McpError):
    """A served tool asked what the client (2026-era) has not answered yet: ``serve`` ends the
    call with an ``InputRequiredResult`` and the client calls again with the answer. A tool
    must let it propagate.

    Attributes:
        key: the question's key.
        request: the MCP request for it.
        state: the answers so far, to carry to the next round.
    """

    def __init__(self, key: str, request: Any, state: dict[str, Any]) -> None:
        super().__init__(f"the client must answer {request.method} ({key}) first")
        self.key = key
        self.request = request
        self.state = state


class InvalidAnswer(McpError):
    """A 2026-era client answered a question with something that is not an answer to it."""


def current_client() -> ServedClient | None:
    """The client of the served tool call running in this task, or ``None``."""
    return _current.get()


def serving(client: ServedClient) -> contextvars.Token[ServedClient | None]:
    """Make ``client`` the current one (``serve`` does this for each call)."""
    return _current.set(client)


def _quietly(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    # The SDK marks these requests deprecated for 2026-era connections; over the handshake
    # they are the protocol. The warning is given when the coroutine is made, not awaited.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return fn(*args, **kwargs)


class ServedClient:
    """The MCP client behind one served call (see the module's documentation).

    Attributes:
        name: the client's name, as it introduced itself (empty when it did not).
        protocol_version: the protocol version of its connection.
    """

    def __init__(
        self,
        context: Any,
        *,
        level: str | None = None,
        responses: dict[str, Any] | None = None,
        state: str | None = None,
    ) -> None:
        self._context = context
        self._level = level
        # 2026-era rounds: the answers of earlier rounds (from the sealed state) and this one's.
        self._answers: dict[str, Any] = {}
        if state:
            try:
                earlier = json.loads(state)
            except ValueError:
                earlier = None
            if isinstance(earlier, dict) and isinstance(earlier.get("answers"), dict):
                self._answers.update(earlier["answers"])
        self._answers.update(responses or {})
        self._asked = 0
        session = context.session
        params = getattr(session, "client_params", None)
        info = getattr(params, "client_info", None)
        self.name: str = getattr(info, "name", "") or ""
        self.protocol_version: str = context.protocol_version or ""

    @property
    def capabilities(self) -> types.ClientCapabilities | None:
        """What the client said it can do (``sampling``, ``elicitation``, ``roots``)."""
        caps: types.ClientCapabilities | None = self._context.session.client_capabilities
        return caps

    def require(self, *capabilities: str) -> None:
        """Refuse the call unless the client declared every one of ``capabilities``
        (``"sampling"``, ``"elicitation"``, ``"roots"``).

        Raises:
            MissingCapability: one is missing; the client gets the protocol's error for it
                (``-32021``) instead of a result.
        """
        declared = self.capabilities
        missing = [
            c for c in capabilities if declared is None or getattr(declared, c, None) is None
        ]
        if missing:
            raise MissingCapability(missing)

    async def _ask(self, key: str | None, request: Any, result_type: type[T]) -> T:
        """Send ``request`` (handshake era), or answer it from this round's answers (2026)."""
        self._asked += 1
        key = key or f"{request.method.split('/')[0]}-{self._asked}"
        if self.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return await self._send(request, result_type)
        if key not in self._answers:
            raise InputRequired(key, request, {"answers": self._answers})
        try:
            return result_type.model_validate(self._answers[key], by_name=False)  # type: ignore[attr-defined,no-any-return]
        except ValidationError as exc:
            raise InvalidAnswer(
                f"the answer to {key!r} is not a {request.method} result: {exc}"
            ) from None

    def _metadata(self) -> ServerMessageMetadata:
        return ServerMessageMetadata(related_request_id=self._context.request_id)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send the client a log message (dropped when it asked for a higher level)."""
        if self._level in _ORDER and level in _ORDER:
            if _ORDER.index(level) < _ORDER.index(self._level):
                return
        session = self._context.session
        await _quietly(
            session.send_log_message,
            level=level,
            data=data,
            logger=logger,
            related_request_id=self._context.request_id,
        )

    async def elicit(
        self, message: str, schema: dict[str, Any], *, key: str | None = None
    ) -> ElicitationResponse:
        """Ask the client's user to fill in a form (a flat JSON Schema object).

        ``key`` names the question on 2026-era connections (default: its place in the call).

        Raises:
            RequestFailed: the client cannot be asked, or answered with an error.
            InputRequired: (2026) the client has not answered yet; let it propagate.
        """
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
        )
        result = await self._ask(key, request, types.ElicitResult)
        return ElicitationResponse(action=result.action, content=result.content)

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str, *, key: str | None = None
    ) -> ElicitationResponse:
        """Ask the client's user to visit ``url`` (accept means they agreed to go).

        Raises:
            RequestFailed: the client cannot be asked, or answered with an error.
            InputRequired: (2026) the client has not answered yet; let it propagate.
        """
        request = types.ElicitRequest(
            params=types.ElicitRequestURLParams(
                message=message, url=url, elicitation_id=elicitation_id
            )
        )
        result = await self._ask(key, request, types.ElicitResult)
        return ElicitationResponse(action=result.action)

    async def sample(
        self,
        messages: Sequence[str],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        hints: Sequence[str] = (),
        key: str | None = None,
    ) -> AssistantMessage:
        """Ask the client's model to answer ``messages`` (user turns, as text).

        Raises:
            RequestFailed: the client cannot sample, refused, or failed.
            InputRequired: (2026) the client has not answered yet; let it propagate.
        """
        preferences = (
            types.ModelPreferences(hints=[types.ModelHint(name=h) for h in hints])
            if hints
            else None
        )
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[
                    types.SamplingMessage(
                        role="user", content=types.TextContent(type="text", text=m)
                    )
                    for m in messages
                ],
                max_tokens=max_tokens,
                system_prompt=system_prompt,
                temperature=temperature,
                model_preferences=preferences,
            )
        )
        result = await self._ask(key, request, types.CreateMessageResult)
        content = result.content
        block: Text | Image
        if isinstance(content, types.ImageContent):
            block = Image(media_type=content.mime_type, data=content.data)
        else:
            block = Text(text=getattr(content, "text", ""))
        return AssistantMessage(
            content=[block],
            model_id=result.model,
            stop_reason=_STOP.get(str(result.stop_reason), StopReason.STOP),
            usage=Usage(),
        )

    async def roots(self, *, key: str | None = None) -> list[str]:
        """The client's roots (``file://`` URIs).

        Raises:
            RequestFailed: the client has no roots to give, or failed.
            InputRequired: (2026) the client has not answered yet; let it propagate.
        """
        result = await self._ask(key, types.ListRootsRequest(), types.ListRootsResult)
        return [str(root.uri) for root in result.roots]

    async def _send(self, request: Any, result_type: type[T]) -> T:
        try:
            result: T = await self._context.session.send_request(
                request, result_type, metadata=self._metadata()
            )
        except MCPError as exc:
            raise RequestFailed("client", request.method, exc.code, exc.message) from None
        return result
