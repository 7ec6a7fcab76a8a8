"""Azure OpenAI: chat completions and the Responses API on an Azure resource.

Addressing: ``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``
for chat completions and ``{endpoint}/openai/responses?api-version=...`` for Responses (the
deployment is the body's ``model``). With ``api_version="v1"`` the version-less v1 routes are
used instead (``{endpoint}/openai/v1/chat/completions``, ``.../v1/responses``). The deployment
defaults to the model id.

Credentials: an ``api-key`` header (``AZURE_OPENAI_API_KEY``, ``StreamOptions.api_key``), or a
Microsoft Entra ID bearer token from ``token_provider`` (called for each request).

Azure's streams add ``prompt_filter_results`` (a first chunk with no choices),
``content_filter_results`` per choice and ``obfuscation`` padding; the parsers pass over them.
A ``content_filter`` finish, an incomplete response for ``content_filter``, or a
``content_filter`` error code end the call as ``content_filtered``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast
from urllib.parse import quote

import msgspec

from .openai_chat import OpenAIChatCompat, OpenAIChatProvider, openai_chat_payload
from .openai_responses import OpenAIResponsesProvider, responses_payload

if TYPE_CHECKING:
    from agentloop import ModelSpec, StreamOptions
    from agentloop.stream import AssistantMessageEvent, LlmContext

__all__ = ["AzureChatProvider", "AzureResponsesProvider"]

TokenProvider = Callable[[], str | Awaitable[str]]
DEFAULT_CHAT_API_VERSION = "2024-10-21"
DEFAULT_RESPONSES_API_VERSION = "2025-04-01-preview"


def _endpoint(endpoint: str | None, kwargs: dict[str, Any]) -> None:
    if "base_url" in kwargs and kwargs["base_url"]:
        return
    value = endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT")
    if not value:
        raise ValueError("Azure OpenAI needs an endpoint (argument or AZURE_OPENAI_ENDPOINT)")
    kwargs["base_url"] = value.rstrip("/")


class _AzureMixin:
    """Shared addressing and credentials (mixed into the chat and Responses providers)."""

    base_url: str
    deployment: str | None
    api_version: str
    token_provider: TokenProvider | None

    def _deployment(self, model: ModelSpec) -> str:
        return self.deployment or model.model_id

    def _query(self) -> str:
        return "" if self.api_version == "v1" else f"?api-version={quote(self.api_version)}"

    def headers(
        self, api_key: str | None, model: ModelSpec, options: StreamOptions
    ) -> dict[str, str]:
        if self.token_provider is not None:
            return {"authorization": f"Bearer {api_key}"} if api_key else {}
        return {"api-key": api_key} if api_key else {}

    def _authorised(
        self,
        call: Callable[
            [ModelSpec, LlmContext, StreamOptions], AsyncIterator[AssistantMessageEvent]
        ],
        model: ModelSpec,
        context: LlmContext,
        options: StreamOptions,
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        if self.token_provider is None:
            return _generator(call(model, context, options))
        return _with_token(self.token_provider, call, model, context, options)


async def _with_token(
    token_provider: TokenProvider,
    call: Callable[[ModelSpec, LlmContext, StreamOptions], AsyncIterator[AssistantMessageEvent]],
    model: ModelSpec,
    context: LlmContext,
    options: StreamOptions,
) -> AsyncGenerator[AssistantMessageEvent, None]:
    """Fetch a fresh Entra ID token, then stream with it in place of the API key."""
    token = token_provider()
    if not isinstance(token, str):
        token = await token
    stream = _generator(call(model, context, msgspec.structs.replace(options, api_key=token)))
    async with contextlib.aclosing(stream):
        async for event in stream:
            yield event


class AzureChatProvider(_AzureMixin, OpenAIChatProvider):
    """Chat completions on Azure OpenAI.

    Args:
        endpoint: ``https://<resource>.openai.azure.com`` (default ``AZURE_OPENAI_ENDPOINT``).
        deployment: the deployment name (default: the model id).
        api_version: an ``api-version`` value, or ``"v1"`` for the v1 routes.
        token_provider: returns (or awaits) an Entra ID token; sent instead of an API key.
        **kwargs: see ``OpenAIChatProvider``.
    """

    provider_name: ClassVar[str] = "azure"
    env_var: ClassVar[str | None] = "AZURE_OPENAI_API_KEY"
    default_base_url: ClassVar[str] = ""

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        deployment: str | None = None,
        api_version: str = DEFAULT_CHAT_API_VERSION,
        token_provider: TokenProvider | None = None,
        **kwargs: Any,
    ) -> None:
        _endpoint(endpoint, kwargs)
        kwargs.setdefault("compat", OpenAIChatCompat())
        kwargs.setdefault("require_api_key", token_provider is None)
        super().__init__(**kwargs)
        self.deployment = deployment
        self.api_version = api_version
        self.token_provider = token_provider

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        return self._authorised(super().__call__, model, context, options)

    def endpoint(self, model: ModelSpec, options: StreamOptions) -> str:
        if self.api_version == "v1":
            return f"{self.base_url}/openai/v1/chat/completions"
        deployment = quote(self._deployment(model), safe="")
        return f"{self.base_url}/openai/deployments/{deployment}/chat/completions{self._query()}"

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        body = openai_chat_payload(model, context, options, self.compat, cache=self.request_cache)
        body["model"] = self._deployment(model)
        return body


class AzureResponsesProvider(_AzureMixin, OpenAIResponsesProvider):
    """The Responses API on Azure OpenAI. Arguments as for ``AzureChatProvider``."""

    provider_name: ClassVar[str] = "azure"
    env_var: ClassVar[str | None] = "AZURE_OPENAI_API_KEY"
    default_base_url: ClassVar[str] = ""

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        deployment: str | None = None,
        api_version: str = DEFAULT_RESPONSES_API_VERSION,
        token_provider: TokenProvider | None = None,
        **kwargs: Any,
    ) -> None:
        _endpoint(endpoint, kwargs)
        kwargs.setdefault("require_api_key", token_provider is None)
        super().__init__(**kwargs)
        self.deployment = deployment
        self.api_version = api_version
        self.token_provider = token_provider

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        return self._authorised(super().__call__, model, context, options)

    def endpoint(self, model: ModelSpec, options: StreamOptions) -> str:
        if self.api_version == "v1":
            return f"{self.base_url}/openai/v1/responses"
        return f"{self.base_url}/openai/responses{self._query()}"

    def payload(self, model: ModelSpec, context: LlmContext, options: StreamOptions) -> Any:
        body = responses_payload(
            model,
            context,
            options,
            model_name=self._deployment(model),
            cache=self.request_cache,
        )
        body.pop("prompt_cache_key", None)  # not accepted by every api-version
        return body


def _generator(
    stream: AsyncIterator[AssistantMessageEvent],
) -> AsyncGenerator[AssistantMessageEvent, None]:
    # The base class's streams are async generators, whatever its annotation says.
    return cast("AsyncGenerator[AssistantMessageEvent, None]", stream)
