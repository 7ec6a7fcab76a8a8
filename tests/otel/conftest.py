"""Each test gets an in-memory OpenTelemetry SDK of its own (the global providers stay unset)."""

from __future__ import annotations

import pytest

from ._helpers import Telemetry


@pytest.fixture
def telemetry() -> Telemetry:
    return Telemetry()
