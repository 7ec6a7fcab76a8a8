"""Hypothesis settings for the conformance suite, chosen by ``HYPOTHESIS_PROFILE``.

* ``ci`` (default): bounded so the whole suite runs in a few minutes on two cores;
  derandomized (a fixed seed per test) and without an example database, so every run checks the
  same examples and a failure reproduces anywhere.
* ``thorough``: ten times the examples (and longer state-machine runs) from fresh random seeds,
  for a night.

Both disable the deadline (a run on a loaded machine can be slow) and the health checks on
slow or large data generation (scenarios are big by design). The settings apply to this
directory's tests only (``@CONFORMANCE``), never to the rest of the test suite; any other value
of ``HYPOTHESIS_PROFILE`` selects ``ci`` here.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["CONFORMANCE", "PROFILE"]

_SUPPRESSED = [HealthCheck.too_slow, HealthCheck.data_too_large]

_PROFILES = {
    "ci": settings(
        max_examples=500,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=_SUPPRESSED,
        print_blob=True,
    ),
    "thorough": settings(
        max_examples=10_000,
        stateful_step_count=100,
        database=None,
        deadline=None,
        suppress_health_check=_SUPPRESSED,
        print_blob=True,
    ),
}

_requested = os.environ.get("HYPOTHESIS_PROFILE", "ci")
PROFILE = _requested if _requested in _PROFILES else "ci"
CONFORMANCE = _PROFILES[PROFILE]
