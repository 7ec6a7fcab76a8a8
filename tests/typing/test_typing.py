"""Typed output is typed: ``output_types.py`` passes mypy and pyright, and runs.

mypy checks the file with the rest of the project (``nox -s types``, CI). This test runs pyright
on it (the ``pyright[nodejs]`` package, in the dev extra) and executes it on both backends.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from . import output_types

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.mark.anyio
async def test_the_typing_examples_run() -> None:
    await output_types.check()


def test_pyright_sees_the_output_types() -> None:
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    assert pyright is not None, "pyright is part of the dev extra"
    done = subprocess.run(
        [pyright, "--pythonpath", sys.executable, str(HERE / "output_types.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 errors" in done.stdout
