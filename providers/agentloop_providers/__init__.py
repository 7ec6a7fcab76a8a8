"""Provider adapters for agentloop: raw HTTP streaming to model APIs (httpx, no vendor SDKs).

Each adapter is an ``HttpProvider`` subclass whose instances are ``StreamFn`` values::

    from agentloop import Agent, ModelSpec
    from agentloop_providers import AnthropicProvider

    async with AnthropicProvider() as provider:       # ANTHROPIC_API_KEY, or get_api_key
        agent = Agent(model=ModelSpec(provider="anthropic", model_id="claude-sonnet-4-5"),
                      stream_fn=provider)
        result = await agent.prompt("hello")

Adapters: ``AnthropicProvider`` (Messages API), ``OpenAIChatProvider`` (Chat Completions and
compatible servers), ``OllamaProvider`` (``/api/chat``), ``ProxyProvider`` (an agentloop proxy;
``ProxyApp`` is the server side); and, built on the same foundation, ``OpenAIResponsesProvider``,
``AzureChatProvider``/``AzureResponsesProvider``, ``GeminiProvider``, ``MistralProvider``,
``XaiChatProvider``/``XaiResponsesProvider`` and ``BedrockProvider``. ``FallbackStream`` chains
models: the next one takes over when a call fails (throttled, server error, context overflow).
The foundation they share lives in ``_http`` (client
lifecycle and the streaming loop), ``_sse`` and ``_ndjson`` (incremental parsers, capped as
``_frames`` says),
``_classify`` (error classification), ``_convert`` (request conversion helpers) and
``_request_cache`` (each history message converted and encoded once, not on every call; see
``HttpProvider``'s ``request_cache_bytes``).

Names are imported lazily, so ``import agentloop_providers`` costs nothing until one is used.
"""

from __future__ import annotations

from agentloop import MissingExtra as _MissingExtra

_MissingExtra.check(
    "agentloop_providers", "providers", "httpx"
)  # one clear line, not a deep ImportError

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._classify import (
        OVERFLOW_WORDINGS as OVERFLOW_WORDINGS,
        is_context_overflow as is_context_overflow,
    )
    from ._frames import FrameTooLarge as FrameTooLarge
    from ._http import HttpProvider as HttpProvider, ProtocolError as ProtocolError
    from ._ndjson import NDJSONDecoder as NDJSONDecoder
    from ._presets import (
        ModelInfo as ModelInfo,
        ProviderPreset as ProviderPreset,
        UnknownPreset as UnknownPreset,
        create_provider as create_provider,
        get_preset as get_preset,
        model_info as model_info,
        model_spec as model_spec,
        presets as presets,
    )
    from ._secrets import InvalidApiKey as InvalidApiKey
    from ._sigv4 import AwsCredentials as AwsCredentials
    from ._sse import ServerSentEvent as ServerSentEvent, SSEDecoder as SSEDecoder
    from .anthropic import AnthropicProvider as AnthropicProvider
    from .azure import (
        AzureChatProvider as AzureChatProvider,
        AzureResponsesProvider as AzureResponsesProvider,
    )
    from .bedrock import BedrockProvider as BedrockProvider
    from .caching import PromptCaching as PromptCaching
    from .fallback import FallbackStream as FallbackStream, FallbackSwitch as FallbackSwitch
    from .gemini import GeminiProvider as GeminiProvider
    from .mistral import MistralProvider as MistralProvider
    from .ollama import OllamaProvider as OllamaProvider
    from .openai_chat import (
        OpenAIChatCompat as OpenAIChatCompat,
        OpenAIChatProvider as OpenAIChatProvider,
    )
    from .openai_responses import OpenAIResponsesProvider as OpenAIResponsesProvider
    from .proxy import ProxyProvider as ProxyProvider
    from .proxy_server import ProxyApp as ProxyApp
    from .xai import (
        XaiChatProvider as XaiChatProvider,
        XaiResponsesProvider as XaiResponsesProvider,
    )

__all__ = [
    "OVERFLOW_WORDINGS",
    "AnthropicProvider",
    "AwsCredentials",
    "AzureChatProvider",
    "AzureResponsesProvider",
    "BedrockProvider",
    "FallbackStream",
    "FallbackSwitch",
    "FrameTooLarge",
    "GeminiProvider",
    "HttpProvider",
    "InvalidApiKey",
    "MistralProvider",
    "ModelInfo",
    "NDJSONDecoder",
    "OllamaProvider",
    "OpenAIChatCompat",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "PromptCaching",
    "ProtocolError",
    "ProviderPreset",
    "ProxyApp",
    "ProxyProvider",
    "SSEDecoder",
    "ServerSentEvent",
    "UnknownPreset",
    "XaiChatProvider",
    "XaiResponsesProvider",
    "create_provider",
    "get_preset",
    "is_context_overflow",
    "model_info",
    "model_spec",
    "presets",
]

_WHERE: dict[str, str] = {
    "OVERFLOW_WORDINGS": "._classify",
    "is_context_overflow": "._classify",
    "FrameTooLarge": "._frames",
    "HttpProvider": "._http",
    "InvalidApiKey": "._secrets",
    "ProtocolError": "._http",
    "NDJSONDecoder": "._ndjson",
    "SSEDecoder": "._sse",
    "ServerSentEvent": "._sse",
    "AnthropicProvider": ".anthropic",
    "OllamaProvider": ".ollama",
    "OpenAIChatCompat": ".openai_chat",
    "OpenAIChatProvider": ".openai_chat",
    "ProxyProvider": ".proxy",
    "ProxyApp": ".proxy_server",
    "AzureChatProvider": ".azure",
    "AzureResponsesProvider": ".azure",
    "BedrockProvider": ".bedrock",
    "FallbackStream": ".fallback",
    "PromptCaching": ".caching",
    "FallbackSwitch": ".fallback",
    "GeminiProvider": ".gemini",
    "MistralProvider": ".mistral",
    "OpenAIResponsesProvider": ".openai_responses",
    "XaiChatProvider": ".xai",
    "XaiResponsesProvider": ".xai",
    "ModelInfo": "._presets",
    "ProviderPreset": "._presets",
    "UnknownPreset": "._presets",
    "create_provider": "._presets",
    "get_preset": "._presets",
    "model_info": "._presets",
    "model_spec": "._presets",
    "presets": "._presets",
    "AwsCredentials": "._sigv4",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
