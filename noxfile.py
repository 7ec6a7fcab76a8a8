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
