"""Error classification: the overflow wordings table, statuses, in-stream errors, retry hints."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx
import pytest
from hypothesis import given, settings, strategies as st

from agentloop import ErrorKind
from agentloop_providers._classify import (
    OVERFLOW_WORDINGS,
    classify_payload,
    classify_response,
    error_info,
    is_context_overflow,
    parse_retry_after,
)


@pytest.mark.parametrize(
    ("provider", "pattern", "example"),
    OVERFLOW_WORDINGS,
    ids=[f"{p}:{e[:40]}" for p, _, e in OVERFLOW_WORDINGS],
)
def test_each_overflow_wording_is_recognised(provider: str, pattern: str, example: str) -> None:
    assert is_context_overflow(example)
    # Through the whole path too: a 400 whose body carries the wording.
    body = httpx.Response(400, json={"error": {"message": example}}).content
    event = classify_response(provider, 400, httpx.Headers(), body)
    assert event.kind is ErrorKind.CONTEXT_OVERFLOW
    assert example in event.message


@pytest.mark.parametrize(
    "message",
    [
        "Overloaded",
        "invalid x-api-key",
        "The model `gpt-5` does not exist",
        "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens",
        "Token limit reached",
    ],
)
def test_other_messages_are_not_overflow(message: str) -> None:
    assert not is_context_overflow(message)


def test_overflow_wordings_cover_the_providers_we_ship() -> None:
    providers = {p for p, _, _ in OVERFLOW_WORDINGS}
    wanted = {"anthropic", "openai", "ollama", "gemini", "bedrock", "mistral", "groq", "xai"}
    assert wanted <= providers


def _response(
    status: int, body: Any, headers: dict[str, str] | None = None, provider: str = "p"
) -> tuple[ErrorKind, float | None, str]:
    raw = body if isinstance(body, bytes) else httpx.Response(status, json=body).content
    event = classify_response(provider, status, httpx.Headers(headers or {}), raw)
    return event.kind, event.retry_after, event.message


ANTHROPIC_OVERLOADED = {
    "type": "error",
    "error": {"type": "overloaded_error", "message": "Overloaded"},
}
OPENAI_RATE = {
    "error": {
        "message": "Rate limit reached for gpt-4o. Please try again in 20s.",
        "type": "requests",
        "code": "rate_limit_exceeded",
    }
}
OPENAI_QUOTA = {
    "error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota",
        "code": "insufficient_quota",
    }
}
GEMINI_429 = {
    "error": {
        "code": 429,
        "message": "You exceeded your current quota.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"},
        ],
    }
}


@pytest.mark.parametrize(
    ("status", "body", "headers", "kind", "retry_after"),
    [
        (429, OPENAI_RATE, {"retry-after": "7"}, ErrorKind.THROTTLED, 7.0),
        (
            429,
            OPENAI_RATE,
            {"retry-after-ms": "1500", "retry-after": "7"},
            ErrorKind.THROTTLED,
            1.5,
        ),
        (429, OPENAI_RATE, {}, ErrorKind.THROTTLED, 20.0),
        (429, b"slow down", {}, ErrorKind.THROTTLED, None),
        (529, ANTHROPIC_OVERLOADED, {}, ErrorKind.THROTTLED, None),
        (429, OPENAI_QUOTA, {}, ErrorKind.OTHER, None),
        (500, {"error": {"message": "internal"}}, {}, ErrorKind.NETWORK, None),
        (502, b"<html>Bad gateway</html>", {}, ErrorKind.NETWORK, None),
        (503, b"", {}, ErrorKind.NETWORK, None),
        (504, b"", {"retry-after": "3"}, ErrorKind.NETWORK, 3.0),  # honoured for 5xx too
        (408, b"", {}, ErrorKind.NETWORK, None),
        (
            401,
            {
                "type": "error",
                "error": {"type": "authentication_error", "message": "invalid x-api-key"},
            },
            {},
            ErrorKind.AUTH,
            None,
        ),
        (403, {"error": {"message": "forbidden"}}, {}, ErrorKind.AUTH, None),
        (
            413,
            {
                "type": "error",
                "error": {
                    "type": "request_too_large",
                    "message": "Request exceeds the maximum size",
                },
            },
            {},
            ErrorKind.CONTEXT_OVERFLOW,
            None,
        ),
        (
            400,
            {"error": {"message": "x", "code": "context_length_exceeded"}},
            {},
            ErrorKind.CONTEXT_OVERFLOW,
            None,
        ),
        (
            400,
            {
                "error": {
                    "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
                    "code": "content_filter",
                }
            },
            {},
            ErrorKind.CONTENT_FILTERED,
            None,
        ),
        (404, {"error": "model 'x' not found"}, {}, ErrorKind.OTHER, None),
        (400, {"message": "The provided model identifier is invalid."}, {}, ErrorKind.OTHER, None),
    ],
)
def test_http_status_and_body(
    status: int,
    body: Any,
    headers: dict[str, str],
    kind: ErrorKind,
    retry_after: float | None,
) -> None:
    got_kind, got_retry, message = _response(status, body, headers)
    assert got_kind is kind
    assert got_retry == retry_after
    assert message.startswith(f"p HTTP {status}")


def test_gemini_retry_info_in_the_body() -> None:
    kind, retry_after, _ = _response(429, GEMINI_429)
    assert kind is ErrorKind.THROTTLED
    assert retry_after == pytest.approx(34.4)


def test_gemini_list_wrapped_error_body() -> None:
    kind, _, message = _response(
        503,
        [{"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}],
    )
    assert kind is ErrorKind.THROTTLED
    assert "The model is overloaded." in message


def test_retry_after_as_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    value = parse_retry_after(httpx.Headers({"retry-after": when}))
    assert value is not None
    assert 20 < value <= 31


@pytest.mark.parametrize("junk", ["soon", "-3", "nan", ""])
def test_unusable_retry_after_is_ignored(junk: str) -> None:
    assert parse_retry_after(httpx.Headers({"retry-after": junk})) is None


def test_retry_in_milliseconds_in_the_message() -> None:
    assert parse_retry_after(None, "Rate limited. Please try again in 250ms.") == 0.25


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ErrorKind.THROTTLED,
        ),
        (
            {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
            ErrorKind.NETWORK,
        ),
        (
            {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}},
            ErrorKind.THROTTLED,
        ),
        (
            {"error": {"message": "prompt is too long: 201000 tokens > 200000 maximum"}},
            ErrorKind.CONTEXT_OVERFLOW,
        ),
        ({"error": {"code": 400, "message": "Token limit reached"}}, ErrorKind.OTHER),
        ({"error": {"code": 502, "message": "upstream failed"}}, ErrorKind.NETWORK),
        (
            {"error": "server busy, please try again.  maximum pending requests exceeded"},
            ErrorKind.THROTTLED,
        ),
        (
            {"error": {"message": "flagged by the safety system", "type": "invalid_request_error"}},
            ErrorKind.CONTENT_FILTERED,
        ),
    ],
)
def test_errors_inside_a_stream(payload: Any, kind: ErrorKind) -> None:
    event = classify_payload("p", payload)
    assert event.kind is kind
    assert event.message.startswith("p stream error")


def test_error_info_shapes() -> None:
    assert error_info({"error": "plain"}).message == "plain"
    info = error_info({"error": {"message": "m", "type": "t", "code": "c", "status_code": 429}})
    assert (info.message, info.type, info.code, info.status) == ("m", "t", "c", 429)
    assert error_info({"detail": "nope"}).message == "nope"
    assert error_info(b"not json").message == "not json"
    assert error_info({"weird": 1}).message == '{"weird":1}'


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["error", "message", "type", "code", "status", "detail", "retryDelay", "x"]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(deadline=None)
@given(status=st.integers(100, 599), body=_json, raw=st.binary(max_size=40))
def test_any_error_body_classifies_without_raising(status: int, body: Any, raw: bytes) -> None:
    for payload in (httpx.Response(200, json=body).content, raw):
        event = classify_response("p", status, httpx.Headers(), payload)
        assert isinstance(event.kind, ErrorKind)
        assert event.message.startswith(f"p HTTP {status}")
    assert isinstance(classify_payload("p", body).kind, ErrorKind)
