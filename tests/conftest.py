"""Every async test runs under both asyncio and trio (anyio's pytest plugin)."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def _moved_names_warn_afresh() -> None:
    """A moved top-level name warns at its first use, then is cached as a plain attribute
    (``agentloop.__getattr__``): forget the cache, so that whichever test (or docs example)
    reads an old name first sees the warning, whatever ran before it."""
    import agentloop

    namespace = vars(agentloop)
    for name in agentloop._MOVED.keys() & namespace.keys():
        del namespace[name]
