"""B10 start-up: what a person waits for before anything happens.

Four wall-clock figures, each the median of ``--repeat`` fresh processes (interleaved):

* ``interpreter``: ``python -c pass``, the floor every other figure contains;
* ``import agentloop``: ``python -c "import agentloop"``;
* ``agentloop --help``;
* ``agentloop run`` to its first request byte: the command is pointed (``OPENAI_BASE_URL``) at
  a socket this script listens on, and the time runs from starting the process to the first
  byte of the request arriving there (nothing is answered; the process is then killed).

``--python PATH`` measures another environment's interpreter (and its ``agentloop`` next to
it): a fresh venv with only ``pip install "anyio-agentloop[coding]"`` is what a user of the
command has. The development environment holds more (trio, rich, h2), which httpx and httpcore
import whenever they are installed: their cost shows in the difference between the two.

Targets (the performance issue): ``--help`` ≤ 100 ms, ``run`` to its first byte ≤ 200 ms,
``import agentloop`` ≤ 60 ms over the interpreter.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import base_parser, emit_json, summary

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["main"]

TARGETS = {"help_ms": 100.0, "run_first_byte_ms": 200.0, "import_over_interpreter_ms": 60.0}


def _wall(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - started) * 1000


def _first_byte(agentloop: str, env: dict[str, str], workdir: str) -> float:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        run_env = {
            **env,
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "OPENAI_API_KEY": "sk-benchmark",
        }
        started = time.perf_counter()
        process = subprocess.Popen(
            [agentloop, "run", "--no-session", "-m", "openai:gpt-4.1", "hello"],
            env=run_env,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            listener.settimeout(60)
            connection, _ = listener.accept()
            with connection:
                connection.recv(1)
            return (time.perf_counter() - started) * 1000
        finally:
            process.kill()
            process.wait()


def measure(python: str, repeat: int, warmup: int) -> dict[str, Any]:
    """The four figures for the environment of ``python``."""
    agentloop = str(Path(python).with_name("agentloop"))
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_"))}
        env.update({"XDG_CONFIG_HOME": f"{home}/config", "XDG_DATA_HOME": f"{home}/data"})
        cases: dict[str, Callable[[], float]] = {
            "interpreter_ms": lambda: _wall([python, "-c", "pass"], env),
            "import_ms": lambda: _wall([python, "-c", "import agentloop"], env),
            "help_ms": lambda: _wall([agentloop, "--help"], env),
            "run_first_byte_ms": lambda: _first_byte(agentloop, env, home),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for round_ in range(warmup + repeat):
            for name, case in cases.items():
                value = case()
                if round_ >= warmup:
                    samples[name].append(value)
    figures = {name: summary(values) for name, values in samples.items()}
    interpreter = figures["interpreter_ms"]["median"]
    over = figures["import_ms"]["median"] - interpreter
    return {
        "python": python,
        "figures": figures,
        "import_over_interpreter_ms": over,
        "targets": {
            "help_ms": figures["help_ms"]["median"] <= TARGETS["help_ms"],
            "run_first_byte_ms": figures["run_first_byte_ms"]["median"]
            <= TARGETS["run_first_byte_ms"],
            "import_over_interpreter_ms": over <= TARGETS["import_over_interpreter_ms"],
        },
    }


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument(
        "--python", action="append", help="an environment's interpreter (repeatable)"
    )
    args = parser.parse_args()
    repeat, warmup = (2, 0) if args.smoke else (args.repeat, args.warmup)
    pythons = args.python or [sys.executable]
    emit_json(
        {
            "benchmark": "b10_startup",
            "targets_ms": TARGETS,
            "environments": [measure(p, repeat, warmup) for p in pythons],
        }
    )


if __name__ == "__main__":
    main()
