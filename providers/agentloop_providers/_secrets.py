"""API keys: checked before use, and kept out of everything an adapter lets out.

Three rules, applied by ``HttpProvider``:

1. **A key is checked before it is used.** Printable ASCII without spaces, as every provider
   issues them; anything else (a trailing newline read from a file is the usual one) is refused
   with ``InvalidApiKey``, whose message names where the key came from, never the key. A key
   with a newline would otherwise reach the HTTP library, whose "illegal header value" error
   quotes it.
2. **Redaction sees every representation and every key.** ``redact`` replaces the key as it
   is, escaped the way ``repr``/``!r`` and JSON escape it, and percent-encoded; and a key cut
   short by an excerpt (``excerpt`` marks every cut with ``…``) loses the prefix that comes
   before the mark. Not only the call's key: every key the process knows (each key checked
   here is registered; every provider's environment variable) and well-known key shapes, so a
   server echoing another provider's key leaks nothing (``agentloop.secrets``). Error bodies
   are redacted as bytes before anything reads them, so no excerpt is ever taken of an
   unredacted text.
3. **Logs too.** While a call is in flight its keys are tracked, and a filter on the
   loggers of httpx, httpcore and hpack (whose DEBUG traces print response headers, where a
   server may echo a key) and on ``agentloop_providers`` redacts them from every record, the
   formatted exception included.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from typing import TYPE_CHECKING

from agentloop import AgentError
from agentloop.secrets import (
    redact as _core_redact,
    redact_bytes as _core_redact_bytes,
    register_secret,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "CUT",
    "InvalidApiKey",
    "check_api_key",
    "excerpt",
    "redact",
    "redact_bytes",
    "tracking",
]

CUT = "…"
"""Marks the place where ``excerpt`` cut a text."""

_MIN_SECRET = 4  # shorter values would mask ordinary words
_LOGGERS = (
    "agentloop_providers",
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
    "hpack.hpack",
    "hpack.table",
)


class InvalidApiKey(AgentError, ValueError):
    """An API key with characters no provider issues (whitespace, control characters...)."""


def check_api_key(key: str, source: str) -> str:
    """``key``, if it is printable ASCII without spaces.

    Raises:
        InvalidApiKey: it is not; the message says where it came from (``source``) and what
            is wrong with it, and never contains the key.
    """
    for char in key:
        if not ("!" <= char <= "~"):
            if char in "\r\n":
                what = "a line break (a trailing newline from a file or a variable?)"
            elif char.isspace():
                what = "whitespace"
            elif char.isprintable():
                what = "a character outside printable ASCII"
            else:
                what = "a control character"
            raise InvalidApiKey(f"the API key from {source} contains {what}; remove it")
    register_secret(key)  # from now on kept out of every surface, whoever's call echoes it
    return key


def excerpt(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with ``CUT``."""
    return text if len(text) <= limit else text[:limit] + CUT


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every form of each of ``secrets`` (and every cut prefix of one), every
    secret the process knows and every well-known key shape replaced
    (``agentloop.secrets.redact``)."""
    return _core_redact(text, *secrets)


def redact_bytes(data: bytes, *secrets: str | None) -> bytes:
    """``redact`` for a body not yet decoded (bytes that are not UTF-8 are kept as they are)."""
    return _core_redact_bytes(data, *secrets)


# --------------------------------------------------------------------------- logs

_counts: dict[str, int] = {}
_active: tuple[str, ...] = ()  # replaced whole, so a reader on any thread sees a consistent set


class _Redacting(logging.Filter):
    """Redacts the keys of the calls in flight from a record's message and exception."""

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = _active  # the calls' own keys; redact adds every key the process knows
        message = record.getMessage()
        clean = redact(message, *secrets)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text, *secrets)
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = redact(record.exc_text, *secrets)
        return True


_filter = _Redacting()


@functools.cache
def _install() -> None:
    for name in _LOGGERS:
        logging.getLogger(name).addFilter(_filter)


@contextlib.contextmanager
def tracking(*secrets: str | None) -> Iterator[None]:
    """Redact ``secrets`` from the HTTP stack's log records while the block runs."""
    global _active
    _install()
    keys = [s for s in secrets if s and len(s) >= _MIN_SECRET]
    if not keys:
        yield
        return
    for key in keys:
        _counts[key] = _counts.get(key, 0) + 1
    _active = tuple(_counts)
    try:
        yield
    finally:
        for key in keys:
            left = _counts[key] - 1
            if left:
                _counts[key] = left
            else:
                del _counts[key]
        _active = tuple(_counts)
