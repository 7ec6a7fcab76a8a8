"""Classification of model failures into ``ErrorKind``, shared by every adapter.

The rules, in order:

1. The request does not fit the model (one of ``OVERFLOW_WORDINGS``, an overflow error code, or
   HTTP 413) → ``context_overflow``.
2. Rate limiting: HTTP 429, HTTP 529, or an "overloaded"/rate-limit error type or wording →
   ``throttled``, with ``retry_after`` from the ``retry-after-ms``/``retry-after`` headers or
   the body (Gemini's ``RetryInfo``, "try again in 20s"). Exhausted credit (``insufficient_quota``,
   billing) with no retry hint is not transient and is ``other``.
3. HTTP 401/403 or an authentication/permission error type → ``auth``.
4. Content filtering (an error code or wording from a safety system) → ``content_filtered``.
5. HTTP 5xx and 408, and transport failures (connect, reset, idle timeout, a cut stream) →
   ``network``; except a server error whose body says the *request* was invalid (a validation
   error, as llama-cpp-python answers a request it cannot parse with HTTP 500), or that the
   server could not read the *model's output* (llama.cpp's "The model produced output that
   does not match the expected ... format", sent mid-stream as a 500): sending it again
   cannot help, so it is ``other`` and the user reads what the server said.
6. Everything else → ``other``.

A retry hint (``retry-after-ms``, ``retry-after``, a delay in the body) is kept for every kind
the loop retries (``throttled`` and ``network``: a 503 with ``Retry-After: 2`` is retried after
two seconds), and dropped for the others.

Errors sent inside an HTTP 200 stream go through the same rules with their own status (if the
payload carries one).

An overflow error that states the context window (llama.cpp's ``"n_ctx": 512``) carries it in
``ErrorEvent.context_window``, which the loop's recovery trims to.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import ErrorKind
from agentloop.stream import ErrorEvent

from ._secrets import excerpt

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "OVERFLOW_WORDINGS",
    "ErrorInfo",
    "classify",
    "classify_payload",
    "classify_response",
    "decode_body",
    "error_info",
    "is_context_overflow",
    "parse_retry_after",
    "stated_context_window",
]

# --------------------------------------------------------------------------- overflow wordings

OVERFLOW_WORDINGS: tuple[tuple[str, str, str], ...] = (
    # (provider, regular expression (case-insensitive), an example the provider sends)
    ("anthropic", r"prompt is too long", "prompt is too long: 213462 tokens > 200000 maximum"),
    (
        "anthropic",
        r"input length and `?max_tokens`? exceed context limit",
        "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, "
        "decrease input length or `max_tokens` and try again",
    ),
    ("openai", r"context_length_exceeded", "context_length_exceeded"),
    (
        "openai",
        r"maximum context length is \d+",
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130412 tokens. Please reduce the length of the messages.",
    ),
    (
        "openai",
        r"exceeds the context window",
        "Your input exceeds the context window of this model. Please adjust your input and "
        "try again.",
    ),
    (
        "openrouter",
        r"maximum context length",
        "This endpoint's maximum context length is 163840 tokens. However, you requested "
        "about 200000 tokens.",
    ),
    (
        "gemini",
        r"input token count.{0,100}?exceeds the maximum",
        "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",
    ),
    (
        "bedrock",
        r"input is too long for requested model",
        "Input is too long for requested model.",
    ),
    (
        "bedrock",
        r"too many input tokens",
        "The model returned the following errors: too many input tokens",
    ),
    (
        "mistral",
        r"too large for model with \d+ maximum context length",
        "Prompt contains 140000 tokens and 0 draft tokens, too large for model with 131072 "
        "maximum context length",
    ),
    (
        "xai",
        r"maximum prompt length is \d+",
        "This model's maximum prompt length is 131072 but the request contains 537812 tokens.",
    ),
    (
        "groq",
        r"reduce the length of the messages",
        "Please reduce the length of the messages or completion.",
    ),
    (
        "ollama",
        r"input length exceeds the context length",
        "the input length exceeds the context length",
    ),
    (
        "ollama",
        r"prompt too long; exceeded (?:max )?context length",
        "prompt too long; exceeded max context length by 412 tokens",
    ),
    (
        "llama.cpp",
        r"exceeds the available context size",
        "the request exceeds the available context size, try increasing it",
    ),
    (
        "lmstudio",
        r"greater than the context length",
        "The number of tokens to keep from the initial prompt is greater than the context "
        "length. Try to load the model with a larger context length, or provide a shorter input",
    ),
    (
        "github-copilot",
        r"prompt token count of \d+ exceeds the limit of \d+",
        "prompt token count of 135000 exceeds the limit of 128000",
    ),
    ("minimax", r"context window exceeds limit", "invalid params, context window exceeds limit"),
    (
        "moonshot",
        r"exceeded model token limit",
        "Invalid request: Your request exceeded model token limit: 262144",
    ),
    ("generic", r"context[_ ]length[_ ]exceeded", "context length exceeded"),
    ("generic", r"context window (?:is )?(?:exceeded|too small)", "context window exceeded"),
)
"""How each provider says a request overflows the context window: ``(provider, regular
expression (case-insensitive), an example the provider sends)``. ``is_context_overflow`` matches
an error's text against every pattern."""

_OVERFLOW_RE = re.compile("|".join(f"(?:{p})" for _, p, _ in OVERFLOW_WORDINGS), re.IGNORECASE)
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})

_THROTTLE_TYPES = frozenset(
    {
        "overloaded_error",
        "rate_limit_error",
        "rate_limit_exceeded",
        "rate_limited",
        "resource_exhausted",
        "too_many_requests",
        "throttlingexception",
        "servicequotaexceededexception",
        "modelnotreadyexception",
        "server_overloaded",
        "slow_down",
    }
)
_THROTTLE_RE = re.compile(
    r"overloaded|rate.?limit|too many requests|resource.?exhausted|throttl|over capacity|server busy",
    re.I,
)
_QUOTA_RE = re.compile(r"insufficient_quota|billing", re.I)
_AUTH_TYPES = frozenset(
    {
        "authentication_error",
        "permission_error",
        "invalid_api_key",
        "unauthenticated",
        "permission_denied",
        "accessdeniedexception",
        "unrecognizedclientexception",
        "expiredtokenexception",
        "unauthorized",
    }
)
_FILTER_TYPES = frozenset(
    {"content_filter", "content_policy_violation", "responsible_ai_policy_violation", "safety"}
)
_FILTER_RE = re.compile(
    r"content management policy|content[_ ]filter|content[_ ]policy|flagged by|safety system",
    re.I,
)
_NETWORK_TYPES = frozenset(
    {
        "api_error",
        "server_error",
        "internal_server_error",
        "internal",
        "unavailable",
        "service_unavailable",
        "internalserverexception",
        "serviceunavailableexception",
        "modelstreamerrorexception",
        "timeout",
    }
)
# A server error caused by the request itself: the same request fails the same way again.
_INVALID_REQUEST_RE = re.compile(
    r"validation errors?\b|requestvalidationerror|invalid[_ ]request|field required|"
    r"input should be|unprocessable entity|json decode error|could not parse",
    re.I,
)
# A server error about the model's output, not the server's state: a parser that rejected what
# the model wrote. The same request fails the same way again, at the cost of a generation.
_MODEL_OUTPUT_RE = re.compile(
    r"output that does not match the expected|failed to parse tool call|"
    r"failed to parse (?:the )?model output",
    re.I,
)
_RETRY_IN_RE = re.compile(r"(?:try again|retry) in (\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?)\b", re.I)
_RETRIED = frozenset({ErrorKind.THROTTLED, ErrorKind.NETWORK})  # kinds a retry hint applies to
_MAX_BODY_SHOWN = 500  # of a body that is not a provider's error object
_MAX_MESSAGE_SHOWN = 4000  # of the message an error object carries
_MAX_LABEL_SHOWN = 100


def is_context_overflow(message: str) -> bool:
    """Whether ``message`` is one of the known context-window overflow wordings."""
    return _OVERFLOW_RE.search(message) is not None


# --------------------------------------------------------------------------- retry-after


def _seconds(value: str) -> float | None:
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError, OSError):
            return None
        return max(0.0, seconds)
    return seconds if seconds >= 0 and math.isfinite(seconds) else None  # nor NaN, nor inf


def parse_retry_after(headers: Mapping[str, str] | None, body: Any = None) -> float | None:
    """The provider's retry hint in seconds, from headers or an error body, if it gave one.

    ``retry-after-ms`` (milliseconds) wins over ``retry-after`` (seconds or an HTTP date); then
    the body: Gemini's ``RetryInfo.retryDelay`` ("34.4s"), or "try again in 20s"/"in 250ms".
    """
    if headers:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            value = _seconds(ms)
            if value is not None:
                return value / 1000.0
        seconds = headers.get("retry-after")
        if seconds is not None:
            value = _seconds(seconds)
            if value is not None:
                return value
    if body is None:
        return None
    delay = _find_retry_delay(body)
    if delay is not None:
        return delay
    text = body if isinstance(body, str) else _text_of(body)
    match = _RETRY_IN_RE.search(text)
    if match is None:
        return None
    amount = float(match.group(1))
    return amount / 1000.0 if match.group(2).lower() == "ms" else amount


def _find_retry_delay(body: Any, depth: int = 0) -> float | None:
    if depth > 6:
        return None
    if isinstance(body, dict):
        delay = body.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            return _seconds(delay[:-1])
        for value in body.values():
            if isinstance(value, dict | list):
                found = _find_retry_delay(value, depth + 1)
                if found is not None:
                    return found
    elif isinstance(body, list):
        for value in body:
            found = _find_retry_delay(value, depth + 1)
            if found is not None:
                return found
    return None


def _text_of(body: Any) -> str:
    try:
        return msgspec.json.encode(body).decode()
    except (TypeError, ValueError, RecursionError, msgspec.EncodeError):
        return f"(an unreadable {type(body).__name__})"


_UNREADABLE = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


def decode_body(body: bytes) -> Any:
    """An error body as JSON, or as text when it is not JSON (or nested too deep to read)."""
    if not body:
        return ""
    try:
        return msgspec.json.decode(body)
    except _UNREADABLE:
        return body.decode("utf-8", "replace").strip()


# --------------------------------------------------------------------------- payloads


class ErrorInfo(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What an error body says: its message, type/code strings and the status it carries."""

    message: str
    type: str = ""
    code: str = ""
    status: int | None = None


def _str(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def error_info(body: Any) -> ErrorInfo:
    """Pull the message, type and code out of any provider's error body.

    Understands ``{"error": {"message", "type", "code"}}`` (OpenAI, Anthropic, Groq, Gemini's
    ``status``), ``{"error": "text"}`` (Ollama), ``{"message": ...}`` (Bedrock, Mistral),
    ``{"detail": ...}`` and Gemini's list-wrapped form; anything else becomes its JSON text.
    Total: a body of any other shape gives an ``ErrorInfo`` too, never an exception.
    """
    try:
        return _error_info(body)
    except Exception:  # noqa: BLE001 (an error body is untrusted input; the status still counts)
        return ErrorInfo(message=f"(an error body of an unexpected shape: {type(body).__name__})")


def _error_info(body: Any) -> ErrorInfo:
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    if isinstance(body, (bytes, bytearray)):
        body = decode_body(bytes(body))
    if isinstance(body, str):
        return ErrorInfo(message=excerpt(body, _MAX_BODY_SHOWN))
    if not isinstance(body, dict):
        return ErrorInfo(message=excerpt(_text_of(body), _MAX_BODY_SHOWN))
    err = body.get("error", body)
    if isinstance(err, str):
        return ErrorInfo(message=err, type=_str(body.get("type")), code=_str(body.get("code")))
    if not isinstance(err, dict):
        err = body
    message = err.get("message") or err.get("detail") or body.get("message") or ""
    if not isinstance(message, str):
        message = _text_of(message)
    if not message:
        message = excerpt(_text_of(body), _MAX_BODY_SHOWN)
    status = err.get("status_code", err.get("code"))
    etype = _str(err.get("type") or err.get("status") or body.get("__type") or body.get("type"))
    if etype == "error":
        etype = ""
    code = err.get("code")
    return ErrorInfo(
        message=message,
        type=etype,
        code="" if isinstance(code, int) else _str(code),
        status=status if isinstance(status, int) and 100 <= status <= 599 else None,
    )


def classify(
    status: int | None,
    info: ErrorInfo,
    *,
    retry_after: float | None = None,
) -> ErrorKind:
    """The ``ErrorKind`` for an error with HTTP ``status`` (``None`` if unknown) and ``info``."""
    text = info.message
    tags = {info.type.lower(), info.code.lower()} - {""}
    if status == 413 or tags & _OVERFLOW_CODES or is_context_overflow(text):
        return ErrorKind.CONTEXT_OVERFLOW
    if retry_after is None and (_QUOTA_RE.search(text) or "insufficient_quota" in tags):
        return ErrorKind.OTHER  # out of credit: waiting will not help
    if status in (429, 529) or tags & _THROTTLE_TYPES or _THROTTLE_RE.search(text):
        return ErrorKind.THROTTLED
    if status in (401, 403) or tags & _AUTH_TYPES:
        return ErrorKind.AUTH
    if tags & _FILTER_TYPES or _FILTER_RE.search(text):
        return ErrorKind.CONTENT_FILTERED
    if status is not None and status >= 500 and _INVALID_REQUEST_RE.search(text):
        return ErrorKind.OTHER  # the server choked on this request: retrying cannot help
    if _MODEL_OUTPUT_RE.search(text):
        return ErrorKind.OTHER  # the server could not read the model's answer
    if status is not None and (status >= 500 or status == 408):
        return ErrorKind.NETWORK
    if tags & _NETWORK_TYPES:
        return ErrorKind.NETWORK
    return ErrorKind.OTHER


def _message(provider: str, status: int | None, info: ErrorInfo, *, in_stream: bool) -> str:
    if in_stream:
        where = f"{provider} stream error" + (f" {status}" if status is not None else "")
    else:
        where = f"{provider} HTTP {status}"
    label = excerpt(info.type or info.code, _MAX_LABEL_SHOWN)
    text = excerpt(info.message.strip(), _MAX_MESSAGE_SHOWN) or "(no message)"
    return f"{where} ({label}): {text}" if label else f"{where}: {text}"


def stated_context_window(body: Any) -> int | None:
    """The context window an error body states (llama.cpp: ``{"error": {"n_ctx": 512}}``)."""
    for holder in (body.get("error"), body) if isinstance(body, dict) else ():
        if isinstance(holder, dict):
            value = holder.get("n_ctx")
            if type(value) is int and 0 < value < 1 << 40:
                return value
    return None


def classify_response(
    provider: str, status: int, headers: Mapping[str, str], body: bytes
) -> ErrorEvent:
    """The ``ErrorEvent`` for an HTTP error response (status >= 400)."""
    parsed = decode_body(body)
    info = error_info(parsed)
    retry_after = parse_retry_after(headers, parsed)
    kind = classify(status, info, retry_after=retry_after)
    return ErrorEvent(
        kind=kind,
        message=_message(provider, status, info, in_stream=False),
        retry_after=retry_after if kind in _RETRIED else None,
        context_window=(
            stated_context_window(parsed) if kind is ErrorKind.CONTEXT_OVERFLOW else None
        ),
    )


def classify_payload(
    provider: str, payload: Any, *, status: int | None = None, usage: Any = None
) -> ErrorEvent:
    """The ``ErrorEvent`` for an error object sent inside a successful (HTTP 200) stream."""
    info = error_info(payload)
    status = info.status if status is None else status
    hint = parse_retry_after(None, payload)
    kind = classify(status, info, retry_after=hint)
    retry_after = hint if kind in _RETRIED else None
    return ErrorEvent(
        kind=kind,
        message=_message(provider, status, info, in_stream=True),
        retry_after=retry_after,
        usage=usage,
        context_window=(
            stated_context_window(payload) if kind is ErrorKind.CONTEXT_OVERFLOW else None
        ),
    )
