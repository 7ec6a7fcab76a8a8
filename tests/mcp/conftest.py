"""Every MCP test also checks that nothing logged a RuntimeError (misnested cancel scopes, a
scope left in the wrong task) while it ran: the SDK reports some of them only in logs."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator


def _is_runtime_error(record: logging.LogRecord) -> bool:
    exc = record.exc_info[1] if record.exc_info else None
    for _ in range(20):
        if exc is None:
            break
        if isinstance(exc, RuntimeError):
            return True
        if isinstance(exc, BaseExceptionGroup):
            return any(isinstance(e, RuntimeError) for e in exc.exceptions)
        exc = exc.__cause__ or exc.__context__
    return "RuntimeError" in record.getMessage()


@pytest.fixture(autouse=True)
def no_runtime_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.WARNING)
    yield
    records = caplog.get_records("setup") + caplog.get_records("call")
    bad = [r for r in records if _is_runtime_error(r)]
    assert not bad, [f"{r.name}: {r.getMessage()}" for r in bad]
