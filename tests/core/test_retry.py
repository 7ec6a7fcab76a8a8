"""Retry strategies: which model failures are retried, and after how long."""

from __future__ import annotations

import random

import pytest

from agentloop import (
    ContextWindowOverflow,
    ErrorKind,
    ModelError,
    ModelThrottled,
    NetworkError,
    StreamError,
)
from agentloop._errors import error_for_kind
from agentloop._retry import NoRetry
from agentloop.retry import ExponentialBackoff, RetryStrategy

THROTTLED = ModelThrottled("429")
NETWORK = NetworkError("connection reset")


def test_max_attempts_counts_every_attempt() -> None:
    backoff = ExponentialBackoff(max_attempts=3)
    assert backoff.should_retry(THROTTLED, 1)
    assert backoff.should_retry(THROTTLED, 2)
    assert not backoff.should_retry(THROTTLED, 3)
    assert not backoff.should_retry(THROTTLED, 4)
    once = ExponentialBackoff(max_attempts=1)
    assert not once.should_retry(NETWORK, 1)


def test_default_is_four_attempts() -> None:
    backoff: RetryStrategy = ExponentialBackoff()
    assert [backoff.should_retry(NETWORK, n) for n in range(1, 6)] == [
        True,
        True,
        True,
        False,
        False,
    ]


@pytest.mark.parametrize("bad", [0, -1])
def test_max_attempts_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        ExponentialBackoff(max_attempts=bad)


@pytest.mark.parametrize(
    ("error", "retried"),
    [
        (ModelThrottled("rate limited"), True),
        (NetworkError("502"), True),
        (error_for_kind(ErrorKind.THROTTLED, "x"), True),
        (error_for_kind(ErrorKind.NETWORK, "x"), True),
        (ContextWindowOverflow("too long"), False),
        (StreamError("bad key", kind=ErrorKind.AUTH), False),
        (StreamError("filtered", kind=ErrorKind.CONTENT_FILTERED), False),
        (StreamError("odd"), False),
        (ModelError("plain"), False),
    ],
)
def test_only_throttling_and_network_errors_are_retried(error: ModelError, retried: bool) -> None:
    assert ExponentialBackoff(max_attempts=10).should_retry(error, 1) is retried


def test_growth_and_cap_without_jitter() -> None:
    backoff = ExponentialBackoff(base_delay=0.5, multiplier=2.0, max_delay=5.0, jitter=False)
    assert [backoff.delay(n) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    triple = ExponentialBackoff(base_delay=1.0, multiplier=3.0, max_delay=100.0, jitter=False)
    assert [triple.delay(n) for n in range(1, 5)] == [1.0, 3.0, 9.0, 27.0]


def test_huge_attempt_numbers_stay_capped() -> None:
    backoff = ExponentialBackoff(base_delay=1.0, multiplier=2.0, max_delay=30.0, jitter=False)
    assert backoff.delay(1000) == 30.0


def test_full_jitter_stays_within_bounds() -> None:
    backoff = ExponentialBackoff(
        base_delay=1.0, multiplier=2.0, max_delay=8.0, rng=random.Random(1234)
    )
    for attempt in range(1, 7):
        ceiling = min(8.0, 2.0 ** (attempt - 1))
        draws = [backoff.delay(attempt) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in draws)
        # Full jitter spreads over the whole range, not just near the ceiling.
        assert min(draws) < ceiling * 0.25
        assert max(draws) > ceiling * 0.75


def test_jitter_is_reproducible_with_a_seeded_rng() -> None:
    a = ExponentialBackoff(rng=random.Random(7))
    b = ExponentialBackoff(rng=random.Random(7))
    assert [a.delay(n) for n in range(1, 10)] == [b.delay(n) for n in range(1, 10)]


def test_retry_after_replaces_the_computed_delay() -> None:
    backoff = ExponentialBackoff(base_delay=0.5, max_delay=1.0, jitter=False)
    hinted = ModelThrottled("slow down", retry_after=7.5)
    assert backoff.should_retry(hinted, 1)
    assert backoff.delay(1, hinted) == 7.5
    assert backoff.delay(3, hinted) == 7.5
    # Without a hint the error does not change the delay.
    assert backoff.delay(2, THROTTLED) == 1.0
    # A negative hint never becomes a negative sleep.
    assert backoff.delay(1, ModelThrottled("x", retry_after=-3.0)) == 0.0


def test_retry_after_is_honoured_with_jitter_too() -> None:
    backoff = ExponentialBackoff(rng=random.Random(0))
    assert backoff.delay(1, NetworkError("503", retry_after=2.0)) == 2.0


def test_retry_after_above_the_limit_is_not_retried() -> None:
    backoff = ExponentialBackoff(max_retry_after=60.0)
    assert backoff.should_retry(ModelThrottled("x", retry_after=60.0), 1)
    assert not backoff.should_retry(ModelThrottled("x", retry_after=60.5), 1)
    assert not backoff.should_retry(NetworkError("x", retry_after=3600.0), 1)


def test_no_retry() -> None:
    never: RetryStrategy = NoRetry()  # typed: both satisfy the protocol
    assert not never.should_retry(THROTTLED, 1)
    assert not never.should_retry(NETWORK, 1)
    assert never.delay(1) == 0.0
