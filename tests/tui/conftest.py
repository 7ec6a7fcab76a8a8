"""The terminal UI runs on asyncio (Textual's event loop): its async tests run on that backend
only; the library below it is tested on both in its own folders."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
