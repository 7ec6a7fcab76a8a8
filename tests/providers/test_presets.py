"""The provider preset catalog: data integrity, lookups and pricing."""

from __future__ import annotations

import pytest

from agentloop import ModelSpec, Pricing, StopReason, StreamOptions, Usage
from agentloop.stream import Accumulator, Done
from agentloop_providers._presets import (
    UnknownPreset,
    create_provider,
    get_preset,
    model_info,
    model_spec,
    presets,
)

WIRE_APIS = {
    "anthropic",
    "openai_chat",
    "openai_responses",
    "azure",
    "gemini",
    "mistral",
    "xai",
    "bedrock",
    "ollama",
}


def test_every_preset_is_complete_and_consistent() -> None:
    catalog = presets()
    assert {"openai", "anthropic", "gemini", "mistral", "xai", "bedrock", "azure"} <= set(catalog)
    for name, preset in catalog.items():
        assert preset.name == name
        assert preset.api in WIRE_APIS, name
        assert preset.base_url.startswith(("https://", "http://127.0.0.1")), name
        if preset.models_from:
            assert preset.models_from in catalog
        for model_id, info in preset.models.items():
            assert info.context_window is None or info.context_window >= 8192, model_id
            if info.pricing is not None:
                p = info.pricing
                assert 0 < p.input < 100, model_id
                assert 0 < p.output < 200, model_id
                assert p.output >= p.input, model_id
                assert p.cache_read <= p.input, model_id
        # The default model has an entry wherever the preset lists models.
        if preset.models or preset.models_from:
            assert model_info(name, preset.default_model) is not None, name


def test_key_env_vars() -> None:
    assert get_preset("openai").api_key_env == "OPENAI_API_KEY"
    assert get_preset("gemini").api_key_env == "GEMINI_API_KEY"
    assert get_preset("mistral").api_key_env == "MISTRAL_API_KEY"
    assert get_preset("xai").api_key_env == "XAI_API_KEY"
    assert get_preset("azure").api_key_env == "AZURE_OPENAI_API_KEY"
    # Bedrock signs with AWS credentials, or takes a Bedrock API key as a bearer token.
    assert get_preset("bedrock").api_key_env == "AWS_BEARER_TOKEN_BEDROCK"


def test_model_spec_fills_in_pricing_and_window() -> None:
    spec = model_spec("gemini", "gemini-2.5-flash")
    assert spec == ModelSpec(
        provider="gemini",
        model_id="gemini-2.5-flash",
        context_window=1048576,
        max_output_tokens=65536,
        pricing=Pricing(input=0.3, output=2.5, cache_read=0.075),
    )
    default = model_spec("mistral")
    assert default.model_id == get_preset("mistral").default_model
    assert default.pricing is not None


def test_lookups_by_dated_variant_region_prefix_and_shared_catalog() -> None:
    dated = model_info("openai", "gpt-4o-2024-08-06")
    assert dated is not None
    assert dated == model_info("openai", "gpt-4o")
    # The longest catalogued id wins: gpt-4o-mini, not gpt-4o.
    assert model_info("openai", "gpt-4o-mini-2024-07-18") == model_info("openai", "gpt-4o-mini")
    assert model_info("openai", "gpt-4oxyz") is None
    assert model_info("bedrock", "us.amazon.nova-micro-v1:0") == model_info(
        "bedrock", "amazon.nova-micro-v1:0"
    )
    assert model_info("azure", "gpt-4.1") == model_info("openai", "gpt-4.1")
    unknown = model_spec("openai", "not-a-model")
    assert unknown.pricing is None
    assert unknown.context_window is None


def test_unknown_provider() -> None:
    with pytest.raises(UnknownPreset, match="known: "):
        get_preset("nope")
    with pytest.raises(UnknownPreset):
        model_spec("nope")


def test_pricing_prices_usage_the_accumulator_reports() -> None:
    spec = model_spec("anthropic", "claude-sonnet-4-5")
    assert spec.pricing is not None
    acc = Accumulator(spec)
    usage = Usage(input=1_000_000, output=200_000, cache_read=500_000, cache_write=100_000)
    acc.push(Done(stop_reason=StopReason.STOP, usage=usage))
    message = acc.finish(spec.pricing.cost(usage))
    assert message.cost.input == pytest.approx(3.0)
    assert message.cost.output == pytest.approx(3.0)
    assert message.cost.cache_read == pytest.approx(0.15)
    assert message.cost.cache_write == pytest.approx(0.375)
    assert message.cost.total == pytest.approx(6.525)


def test_create_provider_uses_the_preset_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    groq = create_provider("groq")
    assert type(groq).__name__ == "OpenAIChatProvider"
    assert groq.base_url == "https://api.groq.com/openai/v1"
    assert groq.provider_name == "groq"
    # The OpenAI key is never sent to another provider.
    assert groq.api_key_for(StreamOptions()) is None
    monkeypatch.setenv("GROQ_API_KEY", "gsk-1")
    assert groq.api_key_for(StreamOptions()) == "gsk-1"
    assert create_provider("openai").api_key_for(StreamOptions()) == "sk-openai"


def test_create_provider_for_each_wire_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    expected = {
        "anthropic": ("AnthropicProvider", "https://api.anthropic.com"),
        "openai_responses": ("OpenAIResponsesProvider", "https://api.openai.com/v1"),
        "gemini": ("GeminiProvider", "https://generativelanguage.googleapis.com/v1beta"),
        "mistral": ("MistralProvider", "https://api.mistral.ai/v1"),
        "xai": ("XaiChatProvider", "https://api.x.ai/v1"),
        "bedrock": ("BedrockProvider", "https://bedrock-runtime.eu-central-1.amazonaws.com"),
        "ollama": ("OllamaProvider", "http://127.0.0.1:11434"),
    }
    for name, (cls, url) in expected.items():
        provider = create_provider(name)
        assert (type(provider).__name__, provider.base_url) == (cls, url), name
        assert provider.env_var == get_preset(name).api_key_env
    azure = create_provider("azure", endpoint="https://res.openai.azure.com", api_key="k")
    assert type(azure).__name__ == "AzureChatProvider"
    assert azure.base_url == "https://res.openai.azure.com"
    with pytest.raises(UnknownPreset):
        create_provider("nope")
