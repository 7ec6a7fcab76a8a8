"""Retry strategies for model calls (tools are never retried)."""

from __future__ import annotations

import random

from ._errors import ErrorKind, ModelError, ModelThrottled, NetworkError

__all__ = ["ExponentialBackoff", "NoRetry"]


class ExponentialBackoff:
    """Exponential back-off with full jitter, capped, honouring a provider's retry-after.

    Throttling and network errors are retried, up to ``max_attempts`` attempts in all, and so
    is an answer that ignored a forced tool call (``ErrorKind.TOOL_NOT_CALLED``: another sample
    may comply). A server that sent nothing back in time (``ErrorKind.TIMEOUT``) is not, unless
    ``retry_timeouts``: it has the request, and another wait as long rarely helps.
    Without jitter the n-th delay is ``min(max_delay, base_delay * multiplier ** (n - 1))``;
    with jitter (the default) it is drawn uniformly from zero to that. A provider's
    ``retry_after`` replaces the computed delay; a hint longer than ``max_retry_after`` means
    the call is not retried at all.
    """

    def __init__(
        self,
        *,
        max_attempts: int = 4,
        base_delay: float = 0.5,
        multiplier: float = 2.0,
        max_delay: float = 30.0,
        jitter: bool = True,
        max_retry_after: float = 120.0,
        retry_timeouts: bool = False,
        rng: random.Random | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.multiplier = multiplier
        self.max_delay = max_delay
        self.jitter = jitter
        self.max_retry_after = max_retry_after
        self.retry_timeouts = retry_timeouts
        self._rng = rng

    def should_retry(self, error: ModelError, attempt: int) -> bool:
        """Whether to retry after ``error``, the failure of attempt number ``attempt`` (1..)."""
        if attempt >= self.max_attempts:
            return False
        if not isinstance(error, ModelThrottled | NetworkError) and not (
            error.kind is ErrorKind.TOOL_NOT_CALLED
            or (error.kind is ErrorKind.TIMEOUT and self.retry_timeouts)
        ):
            return False
        return error.retry_after is None or error.retry_after <= self.max_retry_after

    def delay(self, attempt: int, error: ModelError | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1..): the provider's ``retry_after``
        when ``error`` has one, else the computed back-off.
        """
        if error is not None and error.retry_after is not None:
            return max(0.0, error.retry_after)
        ceiling = min(self.max_delay, self.base_delay * self.multiplier ** max(0, attempt - 1))
        if not self.jitter:
            return ceiling
        return (self._rng or random).uniform(0.0, ceiling)


class NoRetry:
    """Never retry."""

    def should_retry(self, error: ModelError, attempt: int) -> bool:
        """Never: one attempt."""
        return False

    def delay(self, attempt: int, error: ModelError | None = None) -> float:
        """Zero (never used: nothing is retried)."""
        return 0.0
