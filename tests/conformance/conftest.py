"""Under the ``thorough`` profile (``profiles.py``) one property runs for many minutes: lift
the per-test timeout for this directory's tests then."""

from __future__ import annotations

from pathlib import Path

import pytest

from .profiles import PROFILE

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if PROFILE != "thorough":
        return
    for item in items:
        if _HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.timeout(0))
