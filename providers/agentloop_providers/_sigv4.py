"""AWS Signature Version 4 request signing, for Bedrock (no botocore).

The algorithm, in four steps:

1. the *canonical request*: method, canonical URI, canonical query string, canonical headers,
   the list of signed headers and the hex SHA-256 of the body, one per line;
2. the *string to sign*: ``AWS4-HMAC-SHA256``, the request time, the credential scope
   (``date/region/service/aws4_request``) and the hex SHA-256 of the canonical request;
3. the *signing key*: HMAC-SHA256 chained over the date, region, service and
   ``aws4_request``, starting from ``"AWS4" + secret key``;
4. the signature: hex HMAC-SHA256 of the string to sign under that key, sent in the
   ``Authorization`` header with the access key id, the scope and the signed header names.

Written here rather than taken from botocore: it is ~150 lines, checked against AWS's published
test-suite vectors (tests/providers/test_sigv4.py), and keeps a large dependency out.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from agentloop import AgentError
from agentloop.secrets import register_secret

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "AwsCredentials",
    "MissingCredentials",
    "canonical_query",
    "canonical_request",
    "canonical_uri",
    "sign_headers",
    "signing_key",
    "string_to_sign",
]

ALGORITHM = "AWS4-HMAC-SHA256"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class MissingCredentials(AgentError, LookupError):
    """No AWS credentials were given or found in the environment."""


@dataclass(frozen=True)
class AwsCredentials:
    """An access key pair, with the session token of temporary credentials.

    The secret and the token never appear in ``repr``.
    """

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # Kept out of every surface from now on, whoever's call echoes them (agentloop.secrets).
        register_secret(self.secret_access_key)
        register_secret(self.session_token)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AwsCredentials:
        """Credentials from ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``.

        Raises:
            MissingCredentials: the key id or the secret is not set.
        """
        env = os.environ if environ is None else environ
        key = env.get("AWS_ACCESS_KEY_ID")
        secret = env.get("AWS_SECRET_ACCESS_KEY")
        if not key or not secret:
            raise MissingCredentials(
                "AWS credentials not found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            )
        return cls(key, secret, env.get("AWS_SESSION_TOKEN") or None)


def _encode(text: str) -> str:
    # RFC 3986 unreserved characters stay; everything else is %XX with upper-case hex.
    return quote(text, safe="-_.~")


def canonical_uri(path: str) -> str:
    """The canonical URI of ``path`` as it goes on the wire.

    Every service but S3 encodes the path once more, so a ``%3A`` already in the request path
    (Bedrock model ids contain colons) is signed as ``%253A``.
    """
    if not path:
        return "/"
    return quote(path, safe="/~")


def canonical_query(query: str) -> str:
    """The canonical query string: parameters decoded, re-encoded strictly, sorted."""
    if not query:
        return ""
    pairs: list[tuple[str, str]] = []
    for part in query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        pairs.append((_encode(unquote(name)), _encode(unquote(value))))
    pairs.sort()
    return "&".join(f"{k}={v}" for k, v in pairs)


def _canonical_headers(headers: dict[str, str | list[str]]) -> tuple[str, str]:
    merged: dict[str, list[str]] = {}
    for name, value in headers.items():
        values = value if isinstance(value, list) else [value]
        # Trim, and collapse runs of spaces inside the value to one.
        merged.setdefault(name.lower().strip(), []).extend(" ".join(v.split()) for v in values)
    names = sorted(merged)
    lines = "".join(f"{n}:{','.join(merged[n])}\n" for n in names)
    return lines, ";".join(names)


def canonical_request(
    method: str,
    path: str,
    query: str,
    headers: dict[str, str | list[str]],
    payload_hash: str,
) -> tuple[str, str]:
    """The canonical request and the ``SignedHeaders`` list, for the headers given."""
    lines, signed = _canonical_headers(headers)
    text = "\n".join(
        [method.upper(), canonical_uri(path), canonical_query(query), lines, signed, payload_hash]
    )
    return text, signed


def string_to_sign(amz_date: str, scope: str, canonical: str) -> str:
    """The string to sign for a canonical request made at ``amz_date`` in ``scope``."""
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return f"{ALGORITHM}\n{amz_date}\n{scope}\n{digest}"


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    """The derived key for one day, region and service."""
    key = _hmac(("AWS4" + secret).encode("utf-8"), date)
    key = _hmac(key, region)
    key = _hmac(key, service)
    return _hmac(key, "aws4_request")


def sign_headers(
    *,
    method: str,
    host: str,
    path: str,
    query: str = "",
    headers: dict[str, str | list[str]] | None = None,
    body: bytes = b"",
    credentials: AwsCredentials,
    region: str,
    service: str,
    now: dt.datetime | None = None,
) -> dict[str, str]:
    """The headers that sign a request: ``Authorization``, ``X-Amz-Date`` and the token.

    ``headers`` are the request's own headers to sign besides ``host`` (``content-type`` say);
    ``path`` and ``query`` are as they go on the wire.

    Returns:
        Headers to add to the request, in the casing AWS documents.
    """
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    amz_date = moment.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    to_sign: dict[str, str | list[str]] = {k.lower(): v for k, v in (headers or {}).items()}
    to_sign["host"] = host
    to_sign["x-amz-date"] = amz_date
    out = {"X-Amz-Date": amz_date}
    if credentials.session_token:
        to_sign["x-amz-security-token"] = credentials.session_token
        out["X-Amz-Security-Token"] = credentials.session_token
    payload_hash = hashlib.sha256(body).hexdigest() if body else EMPTY_SHA256
    canonical, signed = canonical_request(method, path, query, to_sign, payload_hash)
    scope = f"{day}/{region}/{service}/aws4_request"
    key = signing_key(credentials.secret_access_key, day, region, service)
    signature = hmac.new(
        key, string_to_sign(amz_date, scope, canonical).encode("utf-8"), hashlib.sha256
    ).hexdigest()
    out["Authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key_id}/{scope}, "
        f"SignedHeaders={signed}, Signature={signature}"
    )
    return out
