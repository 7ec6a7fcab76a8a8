"""Model strings for agentloop: one factory per provider preset, found through entry points.

``pyproject.toml`` declares each name below in the ``agentloop.providers`` entry-point group, so
``Agent(model="anthropic:claude-sonnet-4-5")`` finds ``anthropic`` here without the core
importing this package. A factory builds the preset's adapter (its key from the preset's
environment variable, ``ANTHROPIC_API_KEY`` and so on) and the model's ``ModelSpec`` from the
catalog (context window, output limit, prices). ``{NAME}_BASE_URL`` (``ANTHROPIC_BASE_URL``,
``OPENAI_BASE_URL``, ...; for Ollama also ``OLLAMA_HOST``) points a provider elsewhere: a proxy,
a gateway, a local server.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agentloop.models import ResolvedModel

from ._presets import create_provider, model_spec

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "anthropic",
    "azure",
    "bedrock",
    "deepseek",
    "factory",
    "gemini",
    "groq",
    "mistral",
    "ollama",
    "openai",
    "openai_responses",
    "openrouter",
    "xai",
]


def _base_url(preset: str) -> str | None:
    url = os.environ.get(f"{preset.upper()}_BASE_URL")
    if url is None and preset == "ollama":
        host = os.environ.get("OLLAMA_HOST")
        if host:
            url = host if "://" in host else f"http://{host}"
    return url or None


def factory(preset: str) -> Callable[[str], ResolvedModel]:
    """The model-string factory of the preset named ``preset``."""

    def resolve(model_id: str) -> ResolvedModel:
        base_url = _base_url(preset)
        provider = create_provider(preset, **({"base_url": base_url} if base_url else {}))
        return ResolvedModel(spec=model_spec(preset, model_id), stream_fn=provider)

    resolve.__name__ = resolve.__qualname__ = preset
    return resolve


anthropic = factory("anthropic")
openai = factory("openai")
openai_responses = factory("openai_responses")
azure = factory("azure")
gemini = factory("gemini")
mistral = factory("mistral")
xai = factory("xai")
bedrock = factory("bedrock")
ollama = factory("ollama")
groq = factory("groq")
deepseek = factory("deepseek")
openrouter = factory("openrouter")
