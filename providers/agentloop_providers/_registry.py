"""Model strings for agentloop: one factory per provider preset, found through entry points.

``pyproject.toml`` declares each name below in the ``agentloop.providers`` entry-point group, so
``Agent(model="anthropic:claude-sonnet-4-5")`` finds ``anthropic`` here without the core
importing this package. A factory builds the preset's adapter (its key from the preset's
environment variable, ``ANTHROPIC_API_KEY`` and so on) and the model's ``ModelSpec`` from the
catalog (context window, output limit, prices). ``{NAME}_BASE_URL`` (``ANTHROPIC_BASE_URL``,
``OPENAI_BASE_URL``, ...; for Ollama also ``OLLAMA_HOST``) points a provider elsewhere: a proxy,
a gateway, a local server.

Local OpenAI-compatible servers have presets of their own, each with the quirks of its server
(see ``OpenAIChatCompat``) and no key needed: ``llamacpp`` (llama.cpp's ``llama-server``,
``LLAMACPP_BASE_URL``, default ``http://127.0.0.1:8080/v1``), ``llamacpp_python``
(``python -m llama_cpp.server``, ``LLAMACPP_PYTHON_BASE_URL``, port 8000), ``vllm``
(``VLLM_BASE_URL``, port 8000), ``lmstudio`` (``LMSTUDIO_BASE_URL``, port 1234) and
``ollama_openai`` (Ollama's ``/v1``, ``OLLAMA_OPENAI_BASE_URL`` or ``OLLAMA_HOST``, port 11434).
The model id is what the server calls its model (llama.cpp serves one model whatever the id).
A model string may set the context window, which a local server's depends on how it was
started: ``llamacpp:qwen?context_window=8192`` (see ``_context_window``).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import msgspec

from agentloop import UnknownModel
from agentloop.models import ResolvedModel

from ._context_window import split_model_options
from ._presets import create_provider, model_spec

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop import ModelSpec

logger = logging.getLogger("agentloop.models")

__all__ = [
    "anthropic",
    "azure",
    "bedrock",
    "deepseek",
    "factory",
    "gemini",
    "groq",
    "llamacpp",
    "llamacpp_python",
    "lmstudio",
    "mistral",
    "ollama",
    "ollama_openai",
    "openai",
    "openai_responses",
    "openrouter",
    "vllm",
    "xai",
]


def _base_url(preset: str) -> str | None:
    url = os.environ.get(f"{preset.upper()}_BASE_URL")
    if url is None and preset in ("ollama", "ollama_openai"):
        host = os.environ.get("OLLAMA_HOST")
        if host:
            url = host if "://" in host else f"http://{host}"
            if preset == "ollama_openai":
                url = url.rstrip("/") + "/v1"
    return url or None


_LOCAL = frozenset({"llamacpp", "llamacpp_python", "vllm", "lmstudio", "ollama", "ollama_openai"})
_told: set[tuple[str, str]] = set()


def _tell_unknown(preset: str, spec: ModelSpec) -> None:
    """Say once per model that the catalog does not know it (no window, no prices)."""
    if spec.context_window is not None or (preset, spec.model_id) in _told:
        return
    _told.add((preset, spec.model_id))
    # A local server's model is the user's own: no catalog can know it, so only INFO.
    level = logging.INFO if preset in _LOCAL else logging.WARNING
    logger.log(
        level,
        "model %r is not in the %s catalog: its context window and prices are unknown, so "
        "context management cannot trim to fit and costs count as 0; pass "
        "ModelSpec(context_window=..., pricing=...) (with stream_fn) to set them, or add "
        "?context_window=N to the model string",
        spec.model_id,
        preset,
    )


def factory(preset: str) -> Callable[[str], ResolvedModel]:
    """The model-string factory of the preset named ``preset``."""

    def resolve(model_id: str) -> ResolvedModel:
        try:
            bare, window = split_model_options(model_id)
        except ValueError as exc:
            raise UnknownModel(f"{preset}:{model_id}: {exc}") from None
        base_url = _base_url(preset)
        provider = create_provider(preset, **({"base_url": base_url} if base_url else {}))
        spec = model_spec(preset, bare)
        if window is not None:
            spec = msgspec.structs.replace(spec, context_window=window)
        _tell_unknown(preset, spec)
        return ResolvedModel(spec=spec, stream_fn=provider)

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
llamacpp = factory("llamacpp")
llamacpp_python = factory("llamacpp_python")
vllm = factory("vllm")
lmstudio = factory("lmstudio")
ollama_openai = factory("ollama_openai")
