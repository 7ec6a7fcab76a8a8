"""The README's first example, run as a newcomer runs it: without a key it fails loudly, in
one line that names the variable to set (it used to print an empty line and exit 0)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _first_example() -> str:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"^```python\n(.*?)^```", text, flags=re.M | re.S)
    assert block is not None
    return block.group(1)


def test_without_a_key_it_exits_non_zero_naming_the_variable(tmp_path: Path) -> None:
    script = tmp_path / "first.py"
    script.write_text(_first_example())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENTLOOP_"))}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert done.stdout == ""  # no empty answer printed
    naming = [line for line in done.stderr.splitlines() if "ANTHROPIC_API_KEY" in line]
    assert len(naming) == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == naming[0]
    assert last.startswith("agentloop.StreamError: anthropic: no API key")
