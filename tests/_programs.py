"""Programs some tests drive (ripgrep, tmux): a test that needs one skips, naming it, when it
is missing — except where ``AGENTLOOP_REQUIRE_PROGRAMS`` is set (``.ci/run`` sets it after
installing them), where a missing program fails the test instead of hiding it."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

__all__ = ["missing", "require"]


def require(program: str, install: str) -> str:
    """The path of ``program``; skips the test (or fails it, in CI) when it is not installed."""
    path = shutil.which(program)
    if path is not None:
        return path
    missing(f"needs {program}, which is not installed ({install})")


def missing(message: str) -> NoReturn:
    """Skip the test, saying what it needs; fail it where ``AGENTLOOP_REQUIRE_PROGRAMS`` is
    set (CI installed everything, so a missing piece there is a broken install)."""
    if os.environ.get("AGENTLOOP_REQUIRE_PROGRAMS"):
        pytest.fail(f"{message}; AGENTLOOP_REQUIRE_PROGRAMS is set")
    pytest.skip(message)
