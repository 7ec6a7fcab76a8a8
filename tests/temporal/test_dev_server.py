"""The dev server helper: a server found dead is replaced."""

from __future__ import annotations

import os
import signal

import pytest

from .conftest import _Keeper


def test_a_server_found_dead_is_replaced_with_a_warning() -> None:
    keeper = _Keeper()
    try:
        first = keeper.current()
        assert first.serving()
        os.kill(first.pid, signal.SIGKILL)
        first.process.wait(30)
        assert not first.serving()
        with pytest.warns(UserWarning, match="dev server exited"):
            second = keeper.current()
        assert second is not first
        assert second.serving()
        assert keeper.current() is second
    finally:
        if keeper.server is not None:
            keeper.server.stop()
