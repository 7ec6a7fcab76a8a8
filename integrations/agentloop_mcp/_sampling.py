"""Sampling: a server asks this client's model for a message (``sampling/createMessage``).

A ``Sampler`` answers, given to ``open_toolset(..., sampling=)``. It decides three things:

- **whether**: a server must not spend the user's tokens unasked, so every request goes to the
  ``approve`` callback first (without one, every request is refused); ``budget_tokens`` caps
  what all of a sampler's answers may spend together;
- **which model**: the sampler's own (an ``Agent``, whose model and provider are read at each
  request, so the agent's current model answers; a model string; or a ``ModelSpec`` with its
  ``stream_fn``), unless the server's ``modelPreferences`` hints name one of ``models`` (as a
  substring, first hint first), or ``choose_model`` picks another;
- **how much**: ``max_tokens`` caps the server's own ``maxTokens``.

What an answer spent is counted into the agent run whose tool call the request came with (or,
when several calls of different runs are in flight, the last one started), and told as a
``SamplingAnswered`` event.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, nullcontext
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio
import msgspec
from mcp import types

from agentloop import (
    AssistantMessage,
    ContentBlock,
    Image,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    UserMessage,
)
from agentloop.models import resolve_model
from agentloop.policy import ApprovalDecision, Rejected
from agentloop.stream import Accumulator, LlmContext

from ._content import Bounded, ResultLimits

if TYPE_CHECKING:
    from agentloop import Agent, LlmMessage
    from agentloop.abc import StreamFn

__all__ = ["ModelPreferences", "Sampler", "SamplingRequest"]

log = logging.getLogger("agentloop.mcp")


class ModelPreferences(msgspec.Struct, frozen=True, kw_only=True):
    """What the server would like of the model (advisory).

    Attributes:
        hints: model names or parts of them, in the server's order of preference.
        cost_priority: 0-1, how much cost matters.
        speed_priority: 0-1, how much latency matters.
        intelligence_priority: 0-1, how much capability matters.
    """

    hints: list[str] = []
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None


class SamplingRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A server's request for a message, as the approval callback sees it.

    Attributes:
        server: the server's name.
        messages: the conversation to answer, as agentloop messages.
        system_prompt: the server's system prompt.
        max_tokens: the server's ``maxTokens`` (the sampler's ``max_tokens`` caps it).
        temperature: the server's temperature.
        stop_sequences: where the server wants the answer to stop.
        preferences: the server's model preferences.
        include_context: what context the server asked to include (``none``; the other values
            are not honoured: no other server's data is given to a server).
    """

    server: str
    messages: list[Any]
    system_prompt: str = ""
    max_tokens: int = 0
    temperature: float | None = None
    stop_sequences: list[str] = []
    preferences: ModelPreferences = ModelPreferences()
    include_context: str | None = None


_Choice: TypeAlias = tuple[ModelSpec, "StreamFn", Any, StreamOptions]
SamplingApproval: TypeAlias = Callable[[SamplingRequest], Awaitable[ApprovalDecision]]
ModelChooser: TypeAlias = Callable[[ModelPreferences], "str | ModelSpec | None"]

_STOP = {StopReason.STOP: "endTurn", StopReason.LENGTH: "maxTokens", StopReason.TOOL_USE: "toolUse"}


class Sampler:
    """Answers servers' sampling requests with a model the application chooses.

    Args:
        model: the model that answers by default: an ``Agent`` (its current model and
            provider, so "the agent's own"), a model string (resolved like ``Agent``'s), or a
            ``ModelSpec`` with ``stream_fn``. ``use`` sets it later (an agent built after its
            toolsets).
        stream_fn: the provider of a ``ModelSpec`` model.
        approve: decides on each request (``APPROVED`` or ``Rejected(reason)``); without it
            every request is refused.
        max_tokens: the most tokens one answer may have, whatever the server asks.
        budget_tokens: the most tokens (in and out) all answers may spend together; ``None``
            for no cap.
        models: model strings the server's hints may pick from (the first hint that is part
            of one of them picks it).
        choose_model: picks the model from the server's preferences instead (a model string,
            a ``ModelSpec`` of the default model's provider, or ``None`` for the default).
        timeout: the most seconds one answer may take.

    Attributes:
        spent: the tokens (in and out) all answers have spent so far.
    """

    def __init__(
        self,
        model: Agent[Any] | str | ModelSpec | None = None,
        *,
        stream_fn: StreamFn | None = None,
        approve: SamplingApproval | None = None,
        max_tokens: int = 4096,
        budget_tokens: int | None = None,
        models: Sequence[str] = (),
        choose_model: ModelChooser | None = None,
        timeout: float = 300.0,
    ) -> None:
        self._model: Any = model
        self._stream_fn = stream_fn
        self.approve = approve
        self.max_tokens = max_tokens
        self.budget_tokens = budget_tokens
        self.models = tuple(models)
        self.choose_model = choose_model
        self.timeout = timeout
        self.spent = 0

    def use(
        self, model: Agent[Any] | str | ModelSpec, *, stream_fn: StreamFn | None = None
    ) -> None:
        """Answer with ``model`` from now on (see the ``model`` argument)."""
        self._model = model
        self._stream_fn = stream_fn

    # ------------------------------------------------------------------ which model

    def _default(self) -> _Choice:
        model = self._model
        if model is None:
            raise LookupError("the sampler has no model: give it one, or call use(agent)")
        if isinstance(model, str):
            resolved = resolve_model(model)
            return resolved.spec, resolved.stream_fn, None, StreamOptions()
        if isinstance(model, ModelSpec):
            if self._stream_fn is None:
                raise LookupError("a ModelSpec needs its stream_fn")
            return model, self._stream_fn, None, StreamOptions()
        # An agent: its model and provider now, its API key and options as its runs have them.
        return model.model, model.stream_fn, model.get_api_key, model.stream_options

    def pick(self, preferences: ModelPreferences) -> _Choice:
        """The model that answers a request with these preferences.

        Raises:
            LookupError: no model can be found.
            UnknownModel: a model string no provider resolves.
        """
        chosen: str | ModelSpec | None = None
        if self.choose_model is not None:
            chosen = self.choose_model(preferences)
        else:
            for hint in preferences.hints:
                chosen = next((m for m in self.models if hint and hint in m), None)
                if chosen is not None:
                    break
        if isinstance(chosen, str):
            resolved = resolve_model(chosen)
            return resolved.spec, resolved.stream_fn, None, StreamOptions()
        spec, stream_fn, keys, options = self._default()
        return (chosen or spec), stream_fn, keys, options

    # ------------------------------------------------------------------ answering

    async def answer(self, request: SamplingRequest) -> tuple[AssistantMessage | None, str | None]:
        """The model's answer, or ``None`` and why there is none."""
        if self.approve is None:
            return None, "sampling needs approval, and this client has no one to ask"
        try:
            decision = await self.approve(request)
        except Exception as exc:
            log.exception("the sampling approval callback raised for %s", request.server)
            return None, f"approval failed: {type(exc).__name__}"
        if isinstance(decision, Rejected):
            return None, decision.reason or "rejected"
        max_tokens = min(self.max_tokens, request.max_tokens or self.max_tokens)
        if self.budget_tokens is not None and self.spent + max_tokens > self.budget_tokens:
            return None, f"the sampling budget of {self.budget_tokens:,} tokens is spent"
        try:
            spec, stream_fn, get_api_key, base = self.pick(request.preferences)
        except Exception as exc:
            return None, f"no model to answer with: {exc}"
        api_key = base.api_key
        if get_api_key is not None:
            api_key = await get_api_key(spec.provider) or api_key
        extra = dict(base.extra)
        if request.stop_sequences:
            extra["stop_sequences"] = request.stop_sequences
        options = msgspec.structs.replace(
            base,
            temperature=request.temperature
            if request.temperature is not None
            else base.temperature,
            max_tokens=max_tokens,
            api_key=api_key,
            tool_choice=None,
            extra=extra,
        )
        context = LlmContext(system_prompt=request.system_prompt, messages=request.messages)
        acc = Accumulator(spec)
        with anyio.move_on_after(self.timeout) as deadline:
            events: Any = stream_fn(spec, context, options)
            closer: AbstractAsyncContextManager[Any] = (
                aclosing(events) if hasattr(events, "aclose") else nullcontext()
            )
            async with closer:
                async for event in events:
                    if not acc.push(event):
                        break
        if deadline.cancelled_caught:
            return None, f"the model did not answer within {self.timeout:g} s"
        message = acc.finish()
        self.spent += message.usage.input + message.usage.output
        return message, None


def to_sampling_request(
    server: str, params: types.CreateMessageRequestParams, limits: ResultLimits
) -> SamplingRequest:
    """Our request for the SDK's parameters (the conversation bounded like any content)."""
    messages: list[LlmMessage] = []
    for message in params.messages:
        bounded = Bounded(limits)
        blocks = message.content if isinstance(message.content, list) else [message.content]
        for block in blocks:
            if isinstance(block, types.TextContent | types.ImageContent | types.AudioContent):
                bounded.add_mcp(block)
            else:  # tool use and results: only offered with the sampling.tools capability
                bounded.add_text(f"[{getattr(block, 'type', 'block')} left out]")
        content = bounded.finish()
        if message.role == "assistant":
            text = [b for b in content if isinstance(b, Text)]
            messages.append(AssistantMessage(content=list(text)))
        else:
            kept: list[ContentBlock] = [b for b in content if isinstance(b, Text | Image)]
            messages.append(UserMessage(content=kept))
    prefs = params.model_preferences
    preferences = ModelPreferences()
    if prefs is not None:
        preferences = ModelPreferences(
            hints=[h.name for h in prefs.hints or () if h.name],
            cost_priority=prefs.cost_priority,
            speed_priority=prefs.speed_priority,
            intelligence_priority=prefs.intelligence_priority,
        )
    return SamplingRequest(
        server=server,
        messages=messages,
        system_prompt=params.system_prompt or "",
        max_tokens=params.max_tokens,
        temperature=params.temperature,
        stop_sequences=list(params.stop_sequences or ()),
        preferences=preferences,
        include_context=params.include_context,
    )


def to_result(message: AssistantMessage) -> types.CreateMessageResult | types.ErrorData:
    """The SDK's result for the model's answer (an error answer is an error)."""
    if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
        return types.ErrorData(
            code=types.INTERNAL_ERROR, message=f"the model failed: {message.error_message}"
        )
    images = [(b.data, b.media_type) for b in message.content if isinstance(b, Image) and b.data]
    content: Any
    text = "".join(b.text for b in message.content if isinstance(b, Text))
    if not text and images:
        content = types.ImageContent(type="image", data=images[0][0], mime_type=images[0][1])
    else:
        content = types.TextContent(type="text", text=text)
    return types.CreateMessageResult(
        role="assistant",
        content=content,
        model=message.model_id or "",
        stop_reason=_STOP.get(message.stop_reason, "endTurn"),
    )
