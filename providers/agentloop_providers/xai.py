"""xAI (Grok): chat completions with ``reasoning_content``, and the Responses API stream.

Chat completions are OpenAI-compatible with two differences handled here: ``completion_tokens``
leaves out the reasoning tokens (``total_tokens`` counts them), so they are added to the output
count; and the usage carries ``cost_in_usd_ticks`` (10^-10 USD), which becomes the message's
cost. Only the mini reasoning models take ``reasoning_effort`` (``low`` or ``high``).

The Responses API speaks OpenAI's event protocol and uses its parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from agentloop import Cost, ThinkingLevel
from agentloop.stream import Done, ErrorEvent

from ._convert import usage as make_usage
from .openai_chat import (
    OpenAIChatCompat,
    OpenAIChatProvider,
    OpenAIChatStreamParser,
    openai_chat_payload,
)
from .openai_responses import OpenAIResponsesProvider, responses_payload

if TYPE_CHECKING:
    from agentloop import ModelSpec, StreamOptions, Usage
    from agentloop.stream import AssistantMessageEvent, LlmContext

    from ._sse import ServerSentEvent

__all__ = ["XaiChatParser", "XaiChatProvider", "XaiResponsesProvider", "xai_reasoning_effort"]

_decode = msgspec.json.decode
_USD_PER_TICK = 1e-10
COMPAT = OpenAIChatCompat(max_tokens_field="max_tokens", reasoning_effort=False)


def xai_reasoning_effort(model: ModelSpec) -> str | None:
    """``low``/``high`` for the models that accept an effort (the mini ones), else ``None``."""
    if model.thinking_level is ThinkingLevel.OFF or "mini" not in model.model_id:
        return None
    if model.thinking_level in (ThinkingLevel.MINIMAL, ThinkingLevel.LOW):
        return "low"
    return "high"


def _usage_and_cost(raw: dict[str, Any]) -> tuple[Usage, Cost | None]:
    prompt = raw.get("prompt_tokens") or 0
    completion = raw.get("completion_tokens") or 0
    cached = (raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (raw.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    total = raw.get("total_tokens") or 0
    if reasoning and total >= prompt + completion + reasoning:
        completion += reasoning  # reported apart from the completion, billed as output
    ticks = raw.get("cost_in_usd_ticks")
    cost = Cost(total=ticks * _USD_PER_TICK) if isinstance(ticks, int) else None
    use = make_usage(
        input=max(0, prompt - cached),
        output=completion,
        cache_read=cached,
        reasoning_tokens=reasoning,
    )
    return use, cost


class XaiChatParser(OpenAIChatStreamParser):
    """The chat completions parser with xAI's usage accounting."""

    def __init__(self) -> None:
        super().__init__("xai")
        self._xai: tuple[Usage, Cost | None] | None = None

    def feed(self, sse: ServerSentEvent) -> list[AssistantMessageEvent]:
        if '"usage"' in sse.data:
            raw = _decode(sse.data)
            if isinstance(raw, dict) and isinstance(raw.get("usage"), dict):
                self._xai = _usage_and_cost(raw["usage"])
        return self._fix(super().feed(sse))

    def end(self) -> list[AssistantMessageEvent]:
        return self._fix(super().end())

    def _fix(self, events: list[AssistantMessageEvent]) -> list[AssistantMessageEvent]:
        if self._xai is None or not events:
            return events
        use, cost = self._xai
        last = events[-1]
        if type(last) is Done:
            events[-1] = msgspec.structs.replace(last, usage=use, cost=cost)
        elif type(last) is ErrorEvent:
            events[-1] = msgspec.structs.replace(last, usage=use)
        return events


class XaiChatProvider(OpenAIChatProvider):
    """``StreamFn`` for xAI chat completions (``XAI_API_KEY``)."""

    provider_name: ClassVar[str] = "xai"
    env_var: ClassVar[str | None] = "XAI_API_KEY"
    default_base_url: ClassVar[str] = "https://api.x.ai/v1"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("compat", COMPAT)
        kwargs.setdefault("require_api_key", True)
        super().__init__(**kwargs)

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        body = openai_chat_payload(model, context, options, self.compat, cache=self.request_cache)
        effort = xai_reasoning_effort(model)
        if effort is not None:
            body["reasoning_effort"] = effort
        return body

    def new_parser(self, model: ModelSpec, options: StreamOptions) -> XaiChatParser:
        return XaiChatParser()


class XaiResponsesProvider(OpenAIResponsesProvider):
    """``StreamFn`` for xAI's Responses API (``XAI_API_KEY``)."""

    provider_name: ClassVar[str] = "xai"
    env_var: ClassVar[str | None] = "XAI_API_KEY"
    default_base_url: ClassVar[str] = "https://api.x.ai/v1"

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        body = responses_payload(model, context, options, cache=self.request_cache)
        body.pop("prompt_cache_key", None)  # an OpenAI parameter
        effort = xai_reasoning_effort(model)
        if effort is None:
            body.pop("reasoning", None)
        else:
            body["reasoning"] = {"effort": effort}
        if model.thinking_level is not ThinkingLevel.OFF:
            body["include"] = ["reasoning.encrypted_content"]
        return body
