"""The client side of the requests and notifications a server sends: the SDK's callbacks.

One ``ClientHandlers`` per toolset builds what the SDK's ``Client`` is given:

- ``sampling/createMessage`` → the ``Sampler`` (advertised only when there is one);
- ``elicitation/create`` → the elicitation callback, or a headless decline (always advertised:
  a server should hear "nobody can answer", not "unsupported");
- ``roots/list`` → the ``Roots`` (advertised only when there are some);
- ``notifications/message`` → the ``agentloop.mcp`` logger and a ``ServerLog`` event (those
  below the level asked for are dropped here too: not every server filters).

A callback may run in a task of the SDK's (handshake-era requests) or in the task of the call
that needed it (2026-era requests embedded in a result), so what it spends is accounted to the
call's run through ``agentloop.current_tool_context()`` when it runs there, else through the
calls the toolset has in flight.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mcp import types
from pydantic import ValidationError

import agentloop as al

from ._elicitation import answer_elicitation, to_request, to_result as elicit_result
from ._events import ElicitationAnswered, SamplingAnswered, ServerLog
from ._sampling import to_result as sampling_result, to_sampling_request

if TYPE_CHECKING:
    from collections.abc import Callable

    from mcp.client.session import ClientRequestContext

    from ._config import ServerSpec
    from ._elicitation import ElicitationCallback
    from ._events import McpEvent
    from ._roots import Roots
    from ._sampling import Sampler

__all__ = ["ClientHandlers"]

URL_ELICITATION_REQUIRED = -32042  # a call refused until the user visits some pages

log = logging.getLogger("agentloop.mcp")

_ORDER = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class ClientHandlers:
    """The SDK callbacks of one toolset."""

    def __init__(
        self,
        server: str,
        spec: ServerSpec,
        emit: Callable[[McpEvent], None],
        *,
        sampling: Sampler | None,
        elicitation: ElicitationCallback | None,
        roots: Roots | None,
        log_level: Callable[[], str | None],
    ) -> None:
        self.server = server
        self.spec = spec
        self.emit = emit
        self.sampling = sampling
        self.elicitation = elicitation
        self.roots = roots
        self.log_level = log_level
        # The contexts of the tool calls in flight, oldest first (maintained by the toolset).
        self.calls: list[al.ToolContext[Any]] = []

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for the SDK's ``Client``."""
        options: dict[str, Any] = {
            "elicitation_callback": self._elicit,
            "logging_callback": self._log,
            "log_level": self.spec.log_level,
        }
        if self.sampling is not None:
            options["sampling_callback"] = self._sample
        if self.roots is not None:
            options["list_roots_callback"] = self._list_roots
        return options

    def _calling_context(self) -> al.ToolContext[Any] | None:
        here = al.current_tool_context()
        if here is not None and here in self.calls:
            return here
        return self.calls[-1] if self.calls else None

    # ------------------------------------------------------------------ sampling

    async def _sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        sampler = self.sampling
        assert sampler is not None
        request = to_sampling_request(self.server, params, self.spec.limits)
        try:
            message, refused = await sampler.answer(request)
        except Exception as exc:
            log.exception("sampling for %s failed", self.server)
            message, refused = None, f"the model call failed: {type(exc).__name__}: {exc}"
        if message is None:
            self.emit(SamplingAnswered(server=self.server, model="", refused=refused, usage=None))
            return types.ErrorData(
                code=types.INVALID_REQUEST, message=f"sampling refused: {refused}"
            )
        calling = self._calling_context()
        if calling is not None and calling.link is not None:
            calling.link.account(message.usage, message.cost)
        self.emit(
            SamplingAnswered(
                server=self.server, model=message.model_id, refused=None, usage=message.usage
            )
        )
        return sampling_result(message)

    # ------------------------------------------------------------------ elicitation

    async def _elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        request = to_request(self.server, params)
        answer = await answer_elicitation(self.elicitation, request)
        if isinstance(answer, str):
            self.emit(
                ElicitationAnswered(
                    server=self.server, mode=request.mode, action="error", reason=answer
                )
            )
            return types.ErrorData(code=types.INVALID_PARAMS, message=answer)
        if answer.reason:
            log.info("MCP server %s: elicitation declined: %s", self.server, answer.reason)
        self.emit(
            ElicitationAnswered(
                server=self.server, mode=request.mode, action=answer.action, reason=answer.reason
            )
        )
        return elicit_result(answer)

    async def visit_urls(self, result: al.AgentToolResult) -> bool:
        """A call refused with "URL elicitation required" (-32042, 2025-11-25): ask the user
        about each page the server named; whether they agreed to visit all of them (then the
        call is worth repeating once)."""
        details = result.details if isinstance(result.details, dict) else {}
        if not result.is_error or details.get("code") != URL_ELICITATION_REQUIRED:
            return False
        try:
            data = types.ElicitationRequiredErrorData.model_validate(details.get("error_data"))
        except ValidationError:
            return False
        agreed = bool(data.elicitations)
        for params in data.elicitations:
            request = to_request(self.server, params)
            answer = await answer_elicitation(self.elicitation, request)
            action = answer.action if not isinstance(answer, str) else "error"
            reason = answer.reason if not isinstance(answer, str) else answer
            self.emit(
                ElicitationAnswered(server=self.server, mode="url", action=action, reason=reason)
            )
            agreed = agreed and action == "accept"
        return agreed

    # ------------------------------------------------------------------ roots, logs

    async def _list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        assert self.roots is not None
        return types.ListRootsResult(
            roots=[
                types.Root.model_validate({"uri": r.uri, "name": r.name}) for r in self.roots.get()
            ]
        )

    async def _log(self, params: types.LoggingMessageNotificationParams) -> None:
        level = str(params.level)
        wanted = self.log_level()
        if wanted in _ORDER and level in _ORDER and _ORDER.index(level) < _ORDER.index(wanted):
            return
        log.log(
            _LEVELS.get(level, logging.INFO),
            "MCP server %s [%s%s] %s",
            self.server,
            level,
            f" {params.logger}" if params.logger else "",
            params.data,
        )
        self.emit(
            ServerLog(server=self.server, level=level, logger=params.logger, data=params.data)
        )
