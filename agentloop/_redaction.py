"""Secrets kept out of everything the library writes: one registry, one ``redact``.

A key leaks when outside text that holds it (a proxy's error page echoing a request, a
misrouted call answered with another provider's key) reaches a surface: an error message, a
log record, a session file, a report. So text is redacted where it enters (the providers'
error translation, the loop's handling of a model's error) and again where the library writes
(session records, evaluation reports and cassettes, span statuses), against every secret the
process knows:

- values registered with ``register_secret`` (the providers register every key they check:
  one passed in code, one from ``get_api_key`` — a keyring entry, say — one from the
  environment);
- the values of environment variables registered with ``register_secret_variable`` (each
  provider preset's) and of every variable whose name says it holds a secret (``*_API_KEY``,
  ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*ACCESS_KEY*``, ``*CREDENTIAL*``), read when
  redacting, so a key set later is covered too;
- well-known key shapes, whoever's they are: ``sk-...`` and ``sk-ant-...``, AWS access key ids
  (``AKIA...``, ``ASIA...``), Google API keys (``AIza...``), ``gsk_``, ``xai-`` and GitHub
  tokens, and the token after ``Bearer``.

Each secret is replaced in every form it can take in a message (as is, escaped by ``repr`` or
JSON, percent-encoded), and where an excerpt cut one short (``…``), the prefix before the cut.
Values shorter than 8 characters are not registered (they would mask ordinary words).
"""

from __future__ import annotations

import functools
import os
import re
import threading
from urllib.parse import quote, quote_plus

__all__ = [
    "CUT",
    "MASK",
    "redact",
    "redact_bytes",
    "register_secret",
    "register_secret_variable",
    "secrets_now",
]

CUT = "…"
"""Marks the place where an excerpt cut a text."""
MASK = "***"
"""What a secret is replaced with."""

_MIN_GIVEN = 4  # a key handed to ``redact`` explicitly (a call's own): masked from 4 characters
_MIN_KNOWN = 8  # a registered or environment value: shorter ones would mask ordinary words
_MIN_PREFIX = 4  # a cut key leaves at most three characters before the mark

_SECRET_NAME = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD|ACCESS_KEY|CREDENTIAL", re.IGNORECASE)
# Each shape starts where no key character precedes it, so a run is tried once (linear time).
_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-[A-Za-z0-9_-]{20,}"  # OpenAI (sk-proj-...), Anthropic (sk-ant-...), DeepSeek, ...
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key ids
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|(?:gsk|ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{20,}"  # Groq, GitHub
    r"|xai-[A-Za-z0-9]{20,}"  # xAI
    r")"
    r"|(?<![A-Za-z0-9])(?P<bearer>[Bb]earer\s+)[A-Za-z0-9._~+/-]{16,}=*"
)

# What every shape above contains: without one of these, the pattern cannot match.
_SHAPE_HINTS = (
    "sk-", "AKIA", "ASIA", "AIza", "gsk_", "ghp_", "gho_", "ghs_", "ghu_", "github_pat_", "xai-",
    "earer",
)  # fmt: skip

_lock = threading.Lock()
_registered: frozenset[str] = frozenset()  # replaced whole: readers on any thread see one set
_variables: frozenset[str] = frozenset()


def register_secret(value: str | None) -> None:
    """Keep ``value`` out of everything the library writes from now on (values shorter than
    8 characters are ignored). The providers register every API key they check; register
    your own credentials the same way."""
    global _registered
    if value and len(value) >= _MIN_KNOWN and value not in _registered:
        with _lock:
            _registered = _registered | {value}


def register_secret_variable(name: str) -> None:
    """Treat the environment variable ``name`` as a secret: its value, whenever the library
    redacts, is kept out (variables whose names say ``API_KEY``, ``TOKEN``, ``SECRET``,
    ``PASSWORD``, ``ACCESS_KEY`` or ``CREDENTIAL`` are without registering)."""
    global _variables
    if name not in _variables:
        with _lock:
            _variables = _variables | {name}


def secrets_now() -> tuple[str, ...]:
    """Every secret known at this moment: registered values and the secret variables'."""
    variables = _variables
    found = set(_registered)
    for name, value in os.environ.items():
        if len(value) >= _MIN_KNOWN and (name in variables or _SECRET_NAME.search(name)):
            found.add(value)
    return tuple(found)


@functools.lru_cache(maxsize=256)
def _forms(secret: str) -> tuple[str, ...]:
    """The ways ``secret`` can be written into a message, longest first."""
    forms = {
        secret,
        repr(secret)[1:-1],
        secret.encode("unicode_escape").decode("ascii"),
        secret.replace("\\", "\\\\").replace('"', '\\"'),  # JSON
        secret.replace("/", "\\/"),  # JSON, as some servers escape it
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
    }
    return tuple(sorted((f for f in forms if len(f) >= _MIN_GIVEN), key=len, reverse=True))


def _cut_prefixes(text: str, forms: tuple[str, ...]) -> str:
    """``text`` without the start of a secret right before a cut mark."""
    parts = text.split(CUT)
    for i, part in enumerate(parts[:-1]):
        for form in forms:
            for length in range(min(len(form) - 1, len(part)), _MIN_PREFIX - 1, -1):
                if part.endswith(form[:length]):
                    parts[i] = part[:-length] + MASK
                    break
            else:
                continue
            break
    return CUT.join(parts)


def _mask_shape(match: re.Match[str]) -> str:
    return (match.group("bearer") or "") + MASK


def redact(text: str, *given: str | None, known: tuple[str, ...] | None = None) -> str:
    """``text`` with every known secret (see the module notes), each of ``given`` (a call's
    own keys, masked from 4 characters) and every well-known key shape replaced by ``***``.

    ``known`` is a ``secrets_now()`` taken earlier, to redact many texts at the cost of one
    look at the environment.
    """
    secrets = [s for s in given if s and len(s) >= _MIN_GIVEN]
    secrets += secrets_now() if known is None else known
    # Substring searches run at C speed; the usual text, holding no secret, costs one each.
    # Longest first: a secret that contains another is masked whole.
    for secret in sorted(set(secrets), key=len, reverse=True):
        forms = _forms(secret)
        for form in forms:
            if form in text:
                text = text.replace(form, MASK)
        if CUT in text:
            text = _cut_prefixes(text, forms)
    if any(hint in text for hint in _SHAPE_HINTS):
        text = _SHAPES.sub(_mask_shape, text)
    return text


def redact_bytes(data: bytes, *given: str | None, known: tuple[str, ...] | None = None) -> bytes:
    """``redact`` for bytes (what is not UTF-8 is kept as it is); ``data`` itself when nothing
    was replaced."""
    text = data.decode("utf-8", "surrogateescape")
    clean = redact(text, *given, known=known)
    return data if clean == text else clean.encode("utf-8", "surrogateescape")
