"""Score intervals and pass@k against published values."""

from __future__ import annotations

import pytest

from agentloop_eval import pass_at_k, rate_difference, wilson
from agentloop_eval._stats import z_for


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [  # Newcombe (1998), "Two-sided confidence intervals for the single proportion", table I
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_intervals(k: int, n: int, low: float, high: float) -> None:
    estimate, lo, hi = wilson(k, n)
    assert estimate == k / n
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)


@pytest.mark.parametrize(
    ("base", "new", "low", "high"),
    [  # Newcombe (1998), "Interval estimation for the difference between independent
        # proportions", table II, method 10; each row is (base, new) for new - base.
        ((48, 80), (56, 70), 0.0524, 0.3339),
        ((3, 10), (9, 10), 0.1705, 0.8090),
        ((2, 7), (6, 7), 0.0582, 0.8062),
        ((0, 29), (5, 56), -0.0381, 0.1926),
        ((0, 20), (0, 10), -0.1611, 0.2775),
        ((0, 10), (0, 10), -0.2775, 0.2775),
    ],
)
def test_newcombe_difference_intervals(
    base: tuple[int, int], new: tuple[int, int], low: float, high: float
) -> None:
    d, lo, hi = rate_difference(*base, *new)
    assert d == pytest.approx(new[0] / new[1] - base[0] / base[1])
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)


def test_edges() -> None:
    assert wilson(0, 0) == (0.0, 0.0, 1.0)
    assert z_for(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert wilson(5, 10, 0.99).low < wilson(5, 10, 0.95).low  # wider with more confidence
    for bad in ((3, 2), (-1, 2)):
        with pytest.raises(ValueError, match="invalid counts"):
            wilson(*bad)
    with pytest.raises(ValueError, match="confidence"):
        wilson(1, 2, 1.0)


def test_pass_at_k() -> None:
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert pass_at_k(10, 5, 3) == pytest.approx(1 - 10 / 120)
    assert pass_at_k(3, 0, 3) == 0.0 and pass_at_k(3, 1, 3) == 1.0
    with pytest.raises(ValueError, match="pass@4 needs at least 4 runs"):
        pass_at_k(3, 1, 4)
