"""The dev server helper: a busy port is a clear error, a dead server is replaced."""

from __future__ import annotations

import os
import signal
import socket

import pytest

from agentloop_temporal.testing import start_dev_server

from .conftest import _Keeper


def test_a_port_in_use_is_an_error_carrying_the_servers_output() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(RuntimeError, match="did not start"):
            start_dev_server(port=port, timeout=60)


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
