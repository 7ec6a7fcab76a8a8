"""Provider presets and model facts, kept as data in ``presets.json`` beside this module.

A preset says how to reach a provider (wire protocol, base URL, the environment variable that
holds its key, a default model); a model entry gives the context window, the output limit and
the prices per million tokens. ``model_spec`` turns them into an ``agentloop.ModelSpec`` with
``pricing`` and ``context_window`` filled in, so the loop can price usage a provider reports
without a cost::

    spec = model_spec("gemini", "gemini-2.5-flash")
    spec.pricing.cost(usage)

Model ids are looked up exactly, then by the longest catalogued id they extend with a dated or
versioned suffix (``gpt-4o-2024-08-06`` finds ``gpt-4o``); Bedrock's cross-region prefixes
(``us.``, ``eu.``, ``apac.``, ``global.``) are ignored.
"""

from __future__ import annotations

import functools
import importlib
import os
from importlib import resources
from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import AgentError, ModelSpec, Pricing, ThinkingLevel
from agentloop.secrets import register_secret_variable

if TYPE_CHECKING:
    from ._http import HttpProvider

__all__ = [
    "ModelInfo",
    "ProviderPreset",
    "UnknownPreset",
    "create_provider",
    "get_preset",
    "model_info",
    "model_spec",
    "presets",
]

# Wire protocol -> (module, class) of its adapter; imported only when asked for.
_ADAPTERS: dict[str, tuple[str, str]] = {
    "anthropic": ("anthropic", "AnthropicProvider"),
    "openai_chat": ("openai_chat", "OpenAIChatProvider"),
    "openai_responses": ("openai_responses", "OpenAIResponsesProvider"),
    "azure": ("azure", "AzureChatProvider"),
    "gemini": ("gemini", "GeminiProvider"),
    "mistral": ("mistral", "MistralProvider"),
    "xai": ("xai", "XaiChatProvider"),
    "bedrock": ("bedrock", "BedrockProvider"),
    "ollama": ("ollama", "OllamaProvider"),
}
_REGION_PREFIXES = ("us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.")


class UnknownPreset(AgentError, LookupError):
    """No preset has that provider name."""


class ModelInfo(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What the catalog knows about one model."""

    context_window: int | None = None
    max_output_tokens: int | None = None
    pricing: Pricing | None = None


class ProviderPreset(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """How to reach one provider.

    ``base_url`` may hold ``{resource}`` (Azure) or ``{region}`` (Bedrock) placeholders;
    ``api_key_env`` names the variable holding the key (optional for Ollama; for Bedrock an
    API key that replaces SigV4 signing); ``key_optional`` says a call may go without one (a
    local server). ``models_from`` names a preset whose model entries this one shares.
    ``compat`` holds ``OpenAIChatCompat`` fields for a Chat Completions server that differs
    from OpenAI's (the field for the output limit, how ``tool_choice`` is sent, ...).
    """

    name: str = ""
    api: str
    base_url: str
    api_key_env: str | None = None
    key_optional: bool = False
    default_model: str
    models: dict[str, ModelInfo] = msgspec.field(default_factory=dict)
    models_from: str | None = None
    compat: dict[str, Any] | None = None


class _Catalog(msgspec.Struct, frozen=True, gc=False):
    providers: dict[str, ProviderPreset]


@functools.cache
def presets() -> dict[str, ProviderPreset]:
    """Every preset in the catalog, by provider name (loaded once)."""
    raw = resources.files(__package__).joinpath("presets.json").read_bytes()
    catalog = msgspec.json.decode(raw, type=_Catalog)
    for preset in catalog.providers.values():
        if preset.api_key_env:  # its value is kept out of every surface (agentloop.secrets)
            register_secret_variable(preset.api_key_env)
    return {
        name: msgspec.structs.replace(preset, name=name)
        for name, preset in catalog.providers.items()
    }


def get_preset(provider: str) -> ProviderPreset:
    """The preset named ``provider``.

    Raises:
        UnknownPreset: there is no such preset.
    """
    try:
        return presets()[provider]
    except KeyError:
        known = ", ".join(sorted(presets()))
        raise UnknownPreset(f"no provider preset {provider!r}; known: {known}") from None


def _models(preset: ProviderPreset) -> dict[str, ModelInfo]:
    if preset.models_from and not preset.models:
        return get_preset(preset.models_from).models
    return preset.models


def model_info(provider: str, model_id: str) -> ModelInfo | None:
    """The catalog entry for ``model_id`` at ``provider``, or ``None`` if it is not known.

    Raises:
        UnknownPreset: there is no preset named ``provider``.
    """
    models = _models(get_preset(provider))
    found = models.get(model_id)
    if found is not None:
        return found
    bare = model_id
    for prefix in _REGION_PREFIXES:
        if bare.startswith(prefix):
            bare = bare[len(prefix) :]
            break
    found = models.get(bare)
    if found is not None:
        return found
    # A dated or versioned variant of a catalogued id: the longest id it extends wins.
    best: str | None = None
    for known in models:
        if bare.startswith(known) and bare[len(known) : len(known) + 1] in ("-", "@", ":"):
            if best is None or len(known) > len(best):
                best = known
    return models[best] if best is not None else None


def model_spec(
    provider: str,
    model_id: str | None = None,
    *,
    thinking_level: ThinkingLevel = ThinkingLevel.OFF,
) -> ModelSpec:
    """A ``ModelSpec`` for ``model_id`` (the preset's default model when omitted).

    ``context_window``, ``max_output_tokens`` and ``pricing`` come from the catalog when it
    knows the model; an unknown model still gets a spec, without them.

    Raises:
        UnknownPreset: there is no preset named ``provider``.
    """
    preset = get_preset(provider)
    mid = model_id or preset.default_model
    info = model_info(provider, mid) or ModelInfo()
    return ModelSpec(
        provider=provider,
        model_id=mid,
        thinking_level=thinking_level,
        context_window=info.context_window,
        max_output_tokens=info.max_output_tokens,
        pricing=info.pricing,
    )


# Waiting, set for every preset from the environment (a slow local model, a reasoning model
# that thinks silently for minutes): see ``HttpProvider``.
_TIMEOUT_VARIABLES = {
    "AGENTLOOP_FIRST_BYTE_TIMEOUT": "first_byte_timeout",
    "AGENTLOOP_IDLE_TIMEOUT": "idle_timeout",
}


def _seconds(variable: str, value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"{variable}={value!r}: expected a number of seconds above 0")
    return seconds


def create_provider(provider: str, **kwargs: Any) -> HttpProvider:
    """An adapter for the preset named ``provider``, pointed at its base URL.

    Its key comes from the preset's ``api_key_env`` (``GROQ_API_KEY`` for ``groq``, say), never
    from another provider's variable. ``kwargs`` go to the adapter's constructor and win over
    the preset (``api_key``, ``client``, ``base_url``, timeouts, ...). Base URLs with
    placeholders (Azure's resource, Bedrock's region) are left to the adapter, which reads
    its own settings.

    ``AGENTLOOP_FIRST_BYTE_TIMEOUT`` and ``AGENTLOOP_IDLE_TIMEOUT`` (seconds) set the
    adapter's ``first_byte_timeout`` and ``idle_timeout`` when ``kwargs`` does not.

    Raises:
        UnknownPreset: there is no preset named ``provider``.
        ValueError: one of those variables is not a positive number.
    """
    preset = get_preset(provider)
    module, name = _ADAPTERS[preset.api]
    cls = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    if "{" not in preset.base_url:
        kwargs.setdefault("base_url", preset.base_url)
    if preset.api == "openai_chat":
        kwargs.setdefault("provider_name", provider)
        kwargs.setdefault(
            "require_api_key", preset.api_key_env is not None and not preset.key_optional
        )
        if preset.compat:
            from .openai_chat import OpenAIChatCompat

            kwargs.setdefault("compat", OpenAIChatCompat(**preset.compat))
    if preset.api == "openai_responses":
        kwargs.setdefault("provider_name", provider)
    for variable, option in _TIMEOUT_VARIABLES.items():
        value = os.environ.get(variable)
        if value and option not in kwargs:
            kwargs[option] = _seconds(variable, value)
    instance: HttpProvider = cls(**kwargs)
    if instance.env_var != preset.api_key_env:
        instance.env_var = preset.api_key_env  # type: ignore[misc]
    # Named in transport errors: where the provider looked, and how to point it elsewhere.
    instance.base_url_env = f"{provider.upper()}_BASE_URL"
    if provider in ("ollama", "ollama_openai"):
        instance.base_url_env += " or OLLAMA_HOST"
    return instance
