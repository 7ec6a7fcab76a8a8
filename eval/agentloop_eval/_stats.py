"""The statistics of pass rates: score intervals, their difference, and pass@k.

A case run ``n`` times that passed ``k`` times has an observed pass rate ``k / n``; with models
that sample, the true rate is uncertain. ``wilson`` gives the Wilson score interval of a rate
(good at small ``n`` and near 0 and 1, where the textbook ``p ± z·se`` fails), and
``rate_difference`` the Newcombe hybrid score interval of the difference of two independent
rates (Newcombe 1998, method 10), which is what the gate compares with a baseline.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import NamedTuple

__all__ = ["Interval", "pass_at_k", "rate_difference", "wilson", "z_for"]


class Interval(NamedTuple):
    """An estimate and the interval around it."""

    estimate: float
    low: float
    high: float


def z_for(confidence: float) -> float:
    """The two-sided normal quantile for ``confidence`` (1.96 for 0.95).

    Raises:
        ValueError: ``confidence`` is not strictly between 0 and 1.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
    return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


def wilson(successes: int, trials: int, confidence: float = 0.95) -> Interval:
    """The Wilson score interval of a proportion; ``(0, 0, 1)`` when there were no trials.

    Raises:
        ValueError: the counts are negative or ``successes > trials``, or ``confidence`` is
            not strictly between 0 and 1.
    """
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"invalid counts: {successes} of {trials}")
    z = z_for(confidence)
    if trials == 0:
        return Interval(0.0, 0.0, 1.0)
    p = successes / trials
    z2n = z * z / trials
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / trials + z2n / (4.0 * trials))
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half))


def rate_difference(
    base_successes: int,
    base_trials: int,
    new_successes: int,
    new_trials: int,
    confidence: float = 0.95,
) -> Interval:
    """The difference ``new rate - base rate`` and its Newcombe hybrid score interval.

    Raises:
        ValueError: as ``wilson``.
    """
    p1, l1, u1 = wilson(base_successes, base_trials, confidence)
    p2, l2, u2 = wilson(new_successes, new_trials, confidence)
    d = p2 - p1
    low = d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)
    high = d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)
    return Interval(d, max(-1.0, low), min(1.0, high))


def pass_at_k(trials: int, successes: int, k: int) -> float:
    """The chance that at least one of ``k`` runs passes, estimated without bias from ``trials``
    runs of which ``successes`` passed: ``1 - C(n - c, k) / C(n, k)``.

    Raises:
        ValueError: ``k`` is not between 1 and ``trials``, or the counts are invalid.
    """
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"invalid counts: {successes} of {trials}")
    if not 1 <= k <= trials:
        raise ValueError(f"pass@{k} needs at least {k} runs, not {trials}")
    if trials - successes < k:
        return 1.0
    return 1.0 - math.comb(trials - successes, k) / math.comb(trials, k)
