"""Histories for the request-cache tests: messages of every kind, the adapters, and their models.

The message strategies draw from small pools (call ids, names, providers) so that a history
holds what makes request building position-dependent: duplicate call ids, tool results with and
without names, runs of one role, empty messages, failed and aborted answers, thinking from
another provider, images by data and by URL, extension blocks, and (for the adapters that pass
over them) application messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
from hypothesis import strategies as st

from agentloop import (
    AssistantMessage,
    CustomMessage,
    Extension,
    Image,
    ModelSpec,
    StopReason,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.azure import AzureChatProvider, AzureResponsesProvider
from agentloop_providers.bedrock import BedrockProvider
from agentloop_providers.gemini import GeminiProvider
from agentloop_providers.mistral import MistralProvider
from agentloop_providers.ollama import OllamaProvider
from agentloop_providers.openai_chat import OpenAIChatCompat, OpenAIChatProvider
from agentloop_providers.openai_responses import OpenAIResponsesProvider
from agentloop_providers.proxy import ProxyProvider
from agentloop_providers.xai import XaiChatProvider, XaiResponsesProvider

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop_providers._http import HttpProvider

__all__ = [
    "ADAPTERS",
    "Adapter",
    "Note",
    "equal_copy",
    "message",
    "messages",
]


class Note(CustomMessage, frozen=True, tag="histories-note"):
    """An application message some adapters pass over (Anthropic's refuses it)."""

    text: str = ""


@dataclass(frozen=True)
class Adapter:
    """An adapter under test: how to make one (``cache_bytes`` for ``request_cache_bytes``),
    two models to call it with, and whether it passes over application messages."""

    name: str
    make: Callable[[int], HttpProvider]
    models: tuple[ModelSpec, ModelSpec]
    custom_messages: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


def _models(first: str, second: str) -> tuple[ModelSpec, ModelSpec]:
    return ModelSpec(provider="p1", model_id=first), ModelSpec(provider="p2", model_id=second)


_AZURE = "https://example.openai.azure.com"
ADAPTERS = [
    Adapter(
        "anthropic",
        lambda n: AnthropicProvider(api_key="k", request_cache_bytes=n),
        _models("claude-a", "claude-b"),
        custom_messages=False,
    ),
    Adapter(
        "bedrock",
        lambda n: BedrockProvider(api_key="k", region="us-east-1", request_cache_bytes=n),
        _models("anthropic.claude-sonnet-4", "meta.llama3-70b"),
    ),
    Adapter(
        "gemini",
        lambda n: GeminiProvider(api_key="k", request_cache_bytes=n),
        _models("gemini-3-pro", "gemini-2.5-flash"),
    ),
    Adapter(
        "openai_chat",
        lambda n: OpenAIChatProvider(api_key="k", request_cache_bytes=n),
        _models("gpt-a", "gpt-b"),
    ),
    Adapter(
        "openai_chat_drop_images",
        lambda n: OpenAIChatProvider(
            api_key="k",
            compat=OpenAIChatCompat(tool_result_images="drop", system_role="developer"),
            request_cache_bytes=n,
        ),
        _models("gpt-a", "gpt-b"),
    ),
    Adapter(
        "mistral",
        lambda n: MistralProvider(api_key="k", request_cache_bytes=n),
        _models("mistral-a", "mistral-b"),
    ),
    Adapter(
        "openai_responses",
        lambda n: OpenAIResponsesProvider(api_key="k", request_cache_bytes=n),
        _models("o-a", "o-b"),
    ),
    Adapter(
        "ollama",
        lambda n: OllamaProvider(request_cache_bytes=n),
        _models("llama-a", "llama-b"),
    ),
    Adapter(
        "azure_chat",
        lambda n: AzureChatProvider(endpoint=_AZURE, api_key="k", request_cache_bytes=n),
        _models("gpt-a", "gpt-b"),
    ),
    Adapter(
        "azure_responses",
        lambda n: AzureResponsesProvider(endpoint=_AZURE, api_key="k", request_cache_bytes=n),
        _models("o-a", "o-b"),
    ),
    Adapter(
        "xai_chat",
        lambda n: XaiChatProvider(api_key="k", request_cache_bytes=n),
        _models("grok-mini", "grok-4"),
    ),
    Adapter(
        "xai_responses",
        lambda n: XaiResponsesProvider(api_key="k", request_cache_bytes=n),
        _models("grok-mini", "grok-4"),
    ),
    Adapter(
        "proxy",
        lambda n: ProxyProvider("http://proxy.invalid/v1", token="t", request_cache_bytes=n),
        _models("any-a", "any-b"),
    ),
]

_IDS = st.sampled_from(["call_1", "call_2", "toolu_3", "abcdefghi"])
_NAMES = st.sampled_from(["", "f", "g"])
_TEXT = st.text(alphabet='ab "\\\né\U0001f600', max_size=5)
_TYPES = st.sampled_from(["server_tool_use", "thinking", "x"])

_text = st.builds(Text, text=_TEXT)
_image = st.one_of(
    st.builds(
        Image,
        media_type=st.sampled_from(["image/png", "image/jpeg", "image/x-foo"]),
        data=st.sampled_from(["QUJD", ""]),
    ),
    st.builds(Image, url=st.just("https://example.com/a.png")),
)
_thinking = st.builds(
    Thinking,
    thinking=_TEXT,
    signature=st.none() | st.just("sig"),
    redacted=st.booleans(),
    data=st.none() | st.just("opaque"),
    meta=st.none() | st.just({"id": "rs_1"}),
)
_value = st.integers(-2, 2) | st.floats(allow_nan=False, width=32) | _TEXT
_arguments = st.dictionaries(st.sampled_from(["a", "b", "c"]), _value, max_size=3) | st.just([1])
_call = st.builds(
    ToolCall,
    id=_IDS,
    name=st.sampled_from(["f", "g"]),
    arguments=_arguments,
    partial_json=st.none() | st.just('{"a":'),
    signature=st.none() | st.just("tsig"),
    meta=st.none() | st.just({"gemini_id": "g1"}) | st.just({"item_id": "fc_1"}),
)
_extension = st.builds(
    Extension,
    type_name=_TYPES,
    data=st.none() | st.fixed_dictionaries({"type": _TYPES, "v": st.integers(0, 3)}),
)

_user = st.builds(UserMessage, content=st.lists(_text | _image, max_size=3))
_assistant = st.builds(
    AssistantMessage,
    content=st.lists(_text | _thinking | _call | _extension, max_size=4),
    provider=st.sampled_from(["", "p1", "p2"]),
    stop_reason=st.sampled_from(list(StopReason)),
)
_result = st.builds(
    ToolResultMessage,
    tool_call_id=_IDS,
    tool_name=_NAMES,
    content=st.lists(_text | _image | _extension, max_size=3),
    is_error=st.booleans(),
)
_note = st.builds(Note, text=_TEXT)


def message(*, custom: bool) -> st.SearchStrategy[Any]:
    """One message of any kind (``custom``: application messages too)."""
    kinds = [_user, _assistant, _assistant, _result, _result]
    if custom:
        kinds.append(_note)
    return st.one_of(kinds)


def messages(*, custom: bool, max_size: int = 4) -> st.SearchStrategy[list[Any]]:
    """A few messages, as a turn appends them."""
    return st.lists(message(custom=custom), min_size=1, max_size=max_size)


def equal_copy(original: Any) -> Any:
    """A new object equal to ``original`` (its tool arguments in reverse key order, which
    compares equal and encodes differently)."""
    copy = msgspec.json.decode(msgspec.json.encode(original), type=type(original))
    if type(copy) is AssistantMessage:
        content = [
            msgspec.structs.replace(b, arguments=dict(reversed(list(b.arguments.items()))))
            if type(b) is ToolCall and isinstance(b.arguments, dict)
            else b
            for b in copy.content
        ]
        copy = msgspec.structs.replace(copy, content=content)
    return copy
