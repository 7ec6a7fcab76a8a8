"""A model fallback chain: a ``StreamFn`` that tries models in order on classified failures.

::

    chain = FallbackStream(["anthropic:claude-sonnet-4-5", "openai:gpt-4.1"])
    agent = Agent(model=chain.model, stream_fn=chain)

Each call starts with the first model. When its call fails *before any content arrived* with a
kind in ``switch_on`` (by default: throttled, network failures and server errors, context
overflow), the next model is tried at once, in the same call; a context overflow skips to the
next model whose context window is larger (models without a known window are tried too). A
failure of another kind (auth, content filter, an invalid request), a failure after content
streamed, or the last model's failure ends the call as it is, and the loop's retry strategy
decides what happens next (a retry starts again with the first model).

Every switch is visible twice: in the event stream, as a ``StreamStart`` naming the model that
takes over (every attempt starts with one, so a second ``StreamStart`` within one message is a
switch, and the finished message names the model that answered); and through ``on_switch``,
called with a ``FallbackSwitch`` (from, to, the failure's kind and message).

Keys: ``StreamOptions.api_key`` (from ``get_api_key``, resolved for the agent's model) goes only
to models of that same provider; every other provider finds its own key (its environment
variable, or the key given to its adapter). The answer of a fallback model is priced with its
own ``ModelSpec.pricing`` (a model without prices costs nothing, rather than the first
model's prices). Abort closes the stream of the model in use, like any stream.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any, cast

import msgspec

from agentloop import Cost, ErrorKind, ModelSpec
from agentloop.stream import Done, ErrorEvent, StreamStart

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Callable, Collection, Sequence

    from agentloop import StreamOptions
    from agentloop.stream import AssistantMessageEvent, LlmContext, StreamFn

__all__ = ["DEFAULT_SWITCH_ON", "FallbackStream", "FallbackSwitch"]

logger = logging.getLogger("agentloop.providers.fallback")

DEFAULT_SWITCH_ON: frozenset[ErrorKind] = frozenset(
    {ErrorKind.THROTTLED, ErrorKind.NETWORK, ErrorKind.CONTEXT_OVERFLOW}
)
"""The failures that move a call to the next model (server errors are ``network``)."""


class FallbackSwitch(msgspec.Struct, frozen=True, kw_only=True):
    """One switch of a ``FallbackStream``: which model failed, how, and which takes over."""

    from_model: str
    to_model: str
    kind: ErrorKind
    message: str


def _name(spec: ModelSpec) -> str:
    return f"{spec.provider}:{spec.model_id}"


class FallbackStream:
    """A ``StreamFn`` trying ``chain`` in order (see the module docstring).

    Args:
        chain: model strings (``"openai:gpt-4.1"``, resolved through ``agentloop.models``) or
            ``(ModelSpec, StreamFn)`` pairs, first choice first; at least one.
        switch_on: the failure kinds that move a call to the next model.
        on_switch: called (synchronously, in the task streaming) at each switch.

    Raises:
        ValueError: ``chain`` is empty.
        UnknownModel: a model string names no installed provider.
    """

    def __init__(
        self,
        chain: Sequence[str | tuple[ModelSpec, StreamFn]],
        *,
        switch_on: Collection[ErrorKind] = DEFAULT_SWITCH_ON,
        on_switch: Callable[[FallbackSwitch], None] | None = None,
    ) -> None:
        if not chain:
            raise ValueError("a fallback chain needs at least one model")
        from agentloop.models import resolve_model

        self.chain: list[tuple[ModelSpec, StreamFn]] = []
        for entry in chain:
            if isinstance(entry, str):
                resolved = resolve_model(entry)
                self.chain.append((resolved.spec, resolved.stream_fn))
            else:
                self.chain.append(entry)
        self.switch_on = frozenset(switch_on)
        self.on_switch = on_switch

    @property
    def model(self) -> ModelSpec:
        """The first model's spec: the one to give the agent."""
        return self.chain[0][0]

    def __repr__(self) -> str:
        return f"FallbackStream([{', '.join(_name(spec) for spec, _ in self.chain)}])"

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Stream one call through the chain (an async generator: close it with ``aclosing``)."""
        return self._stream(model, context, options)

    async def aclose(self) -> None:
        """Close every model's adapter that can be closed."""
        for _, stream_fn in self.chain:
            close = getattr(stream_fn, "aclose", None)
            if close is not None:
                await close()

    def _next(self, current: int, error: ErrorEvent) -> int | None:
        """The index of the model to try after ``current`` failed with ``error``."""
        if error.kind not in self.switch_on:
            return None
        window = self.chain[current][0].context_window
        for index in range(current + 1, len(self.chain)):
            if error.kind is ErrorKind.CONTEXT_OVERFLOW and window is not None:
                larger = self.chain[index][0].context_window
                if larger is not None and larger <= window:
                    continue  # no more room than the model that overflowed
            return index
        return None

    async def _stream(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        index: int | None = 0
        while index is not None:
            spec, stream_fn = self.chain[index]
            call_options = options
            if options.api_key is not None and spec.provider != model.provider:
                call_options = msgspec.structs.replace(options, api_key=None)  # not its key
            yield StreamStart(provider=spec.provider, model_id=spec.model_id)
            content = False
            failure: ErrorEvent | None = None
            events = stream_fn(spec, context, call_options)
            closing: Any = (
                contextlib.aclosing(cast("AsyncGenerator[Any, None]", events))
                if hasattr(events, "aclose")
                else contextlib.nullcontext()
            )
            async with closing:
                async for event in events:
                    cls = type(event)
                    if cls is ErrorEvent and not content:
                        failure = cast("ErrorEvent", event)
                        break
                    if cls is Done and spec != model:
                        event = self._priced(cast("Done", event), spec)
                    if cls is not StreamStart:
                        content = True
                    yield event
                    if cls is Done or cls is ErrorEvent:
                        return
            if failure is None:
                return  # the stream ended without a terminal event: the loop reports it
            following = self._next(index, failure)
            if following is None:
                yield failure
                return
            switch = FallbackSwitch(
                from_model=_name(spec),
                to_model=_name(self.chain[following][0]),
                kind=failure.kind,
                message=failure.message,
            )
            logger.info(
                "fallback: %s failed (%s), trying %s",
                switch.from_model,
                switch.kind,
                switch.to_model,
            )
            if self.on_switch is not None:
                self.on_switch(switch)
            index = following

    @staticmethod
    def _priced(done: Done, spec: ModelSpec) -> Done:
        """``done`` with a cost at ``spec``'s prices (the loop would use the first model's)."""
        if done.cost is not None:
            return done
        if spec.pricing is None or done.usage is None:
            return msgspec.structs.replace(done, cost=Cost())
        return msgspec.structs.replace(done, cost=spec.pricing.cost(done.usage))
