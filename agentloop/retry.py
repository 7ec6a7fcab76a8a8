"""Retries of failed model calls (tools are never retried): when, and after how long."""

from ._abc import RetryStrategy as RetryStrategy
from ._public import publish
from ._retry import ExponentialBackoff as ExponentialBackoff, NoRetry as NoRetry

__all__ = ["ExponentialBackoff", "NoRetry", "RetryStrategy"]

publish(__name__, globals(), __all__, force=False)
del publish
