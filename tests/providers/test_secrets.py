"""API keys never leak: checked before use, redacted everywhere, before any excerpt is taken.

The end-to-end test runs a real ``Agent`` against a server on 127.0.0.1 that echoes the key in
every way it can (JSON bodies, a plain-text body that is cut in the middle of the key, an error
inside a 200 stream, percent-encoded and escaped forms, response headers that httpcore's DEBUG
trace prints) and scans everything a user or an operator could see: the result, every event,
the raised exception with its traceback, the checkpoint, both session stores' files and every
log record. A leak is any eight characters of the key, in any of its forms.
"""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
import msgspec
import pytest

import agentloop as al
from agentloop import ErrorKind, ModelSpec, StopReason, StreamOptions
from agentloop.retry import ExponentialBackoff
from agentloop_providers._eventstream import encode_message
from agentloop_providers._secrets import InvalidApiKey, excerpt, redact
from agentloop_providers._sigv4 import AwsCredentials
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.bedrock import BedrockProvider
from agentloop_providers.openai_chat import OpenAIChatProvider

from ._loopback import Reply, serve
from ._loopback_ii import context
from ._util import collect

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

KEY = "sk-Zq7/Yx+3Lm9pQ2wRt5vN8bK1cF4hJ6dS0aGe=="
FORMS = (KEY, KEY.replace("/", "\\/"), quote(KEY, safe=""), repr(KEY)[1:-1])
MODEL = ModelSpec(provider="anthropic", model_id="claude-test")


def leaks(text: str) -> list[str]:
    """Every eight-character piece of a form of the key found in ``text``."""
    return sorted(
        {form[i : i + 8] for form in FORMS for i in range(len(form) - 7) if form[i : i + 8] in text}
    )


# --------------------------------------------------------------------------- keys are checked


@pytest.mark.parametrize(
    ("bad", "what"),
    [
        (KEY + "\n", "line break"),
        (KEY + "\r\n", "line break"),
        (" " + KEY, "whitespace"),
        (KEY[:10] + "\t" + KEY[10:], "whitespace"),
        (KEY + "\x00", "control character"),
        (KEY + "é", "outside printable ASCII"),
    ],
)
def test_a_key_with_whitespace_is_refused_by_the_constructor(bad: str, what: str) -> None:
    with pytest.raises(InvalidApiKey, match=what) as caught:
        AnthropicProvider(api_key=bad)
    assert isinstance(caught.value, ValueError)
    shown = "".join(traceback.format_exception(caught.value))
    assert leaks(shown) == []


@pytest.mark.parametrize("source", ["options", "environment"])
async def test_a_key_with_a_newline_from_the_loop_or_the_environment_is_an_auth_error(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200)

    options = StreamOptions()
    if source == "options":
        options = StreamOptions(api_key=KEY + "\n")
    else:
        monkeypatch.setenv("OPENAI_API_KEY", KEY + "\n")
    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        events, message = await collect(
            OpenAIChatProvider(client=client), MODEL, context(), options
        )
    assert sent == []
    assert message.error_kind is ErrorKind.AUTH
    assert "line break" in (message.error_message or "")
    assert leaks(repr(events) + repr(message)) == []


# --------------------------------------------------------------------------- redaction


def test_every_form_of_the_key_is_redacted() -> None:
    text = " | ".join([*FORMS, repr(KEY), msgspec.json.encode(KEY).decode()])
    assert leaks(redact(text, KEY)) == []


def test_a_key_cut_by_an_excerpt_loses_its_start_too() -> None:
    for keep in range(1, len(KEY)):
        text = excerpt("x" * 50 + KEY, 50 + keep)
        assert leaks(redact(text, KEY)) == []
        assert KEY[: max(keep, 4)] not in redact(text, KEY) or keep < 4


async def test_a_plain_text_body_cut_to_500_characters_is_redacted_first() -> None:
    body = ("x" * 480 + KEY + "y" * 200).encode()  # the 500-character cut falls in the key

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, content=body, headers={"content-type": "text/plain"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        provider = AnthropicProvider(client=client, api_key=KEY)
        _, message = await collect(provider, MODEL, context(), StreamOptions())
    assert message.error_kind is ErrorKind.AUTH
    assert leaks(message.error_message or "") == []
    assert "***" in (message.error_message or "")


# --------------------------------------------------------------------------- a whole agent


def _echoing_replies() -> list[Reply]:
    headers = {"x-echo": KEY, "www-authenticate": f'Bearer realm="api", key="{KEY}"'}
    long_in_stream = "y" * 3995 + KEY  # the 4,000-character excerpt cuts into the key
    in_stream = msgspec.json.encode(
        {"type": "error", "error": {"type": "overloaded_error", "message": long_in_stream}}
    )
    final = msgspec.json.encode(
        {
            "type": "error",
            "error": {
                "type": "authentication_error",
                "message": f"invalid x-api-key {KEY!r}; sent as {quote(KEY, safe='')}",
                "key": KEY,
            },
        }
    ).replace(b"/", b"\\/")
    return [
        Reply(
            body=msgspec.json.encode({"error": {"type": "rate_limit_error", "message": KEY}}),
            status=429,
            headers=headers,
            content_type="application/json",
        ),
        Reply(
            body=("x" * 480 + KEY + "y" * 200).encode(),
            status=500,
            headers=headers,
            content_type="text/plain",
        ),
        Reply(body=b"event: error\ndata: " + in_stream + b"\n\n", headers=headers),
        Reply(body=final, status=401, headers=headers, content_type="application/json"),
    ]


async def _run_agent(
    tmp_path: Path, *, key_in: str, store: Any, events: list[Any]
) -> tuple[al.AgentResult, al.Agent, list[Any]]:
    session = await store.create(title="leak test")
    async with serve(_echoing_replies()) as server:
        if key_in == "constructor":
            provider = AnthropicProvider(base_url=server.base_url, api_key=KEY)
            get_api_key = None
        else:
            provider = AnthropicProvider(base_url=server.base_url)

            async def get_api_key(name: str) -> str:
                return KEY

        async with provider:
            agent = al.Agent(
                model=MODEL,
                stream_fn=provider,
                get_api_key=get_api_key,
                retry_strategy=ExponentialBackoff(base_delay=0, jitter=False, max_attempts=5),
                session=al.sessions.SessionRecorder(store, session.id),
            )
            agent.subscribe(events.append)
            result = await agent.prompt("hello", raise_on_error=False)
            await agent.wait_idle()
        assert [r.headers.get("x-api-key") for r in server.requests] == [KEY] * 4
    return result, agent, await store.load(session.id)


def _files_text(root: Path) -> str:
    return "".join(
        p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file()
    )


@pytest.mark.parametrize("key_in", ["constructor", "get_api_key"])
@pytest.mark.parametrize("store_kind", ["jsonl", "sqlite"])
async def test_an_echoing_server_leaks_nothing_anywhere(
    key_in: str, store_kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "agentloop", "agentloop_providers"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    if store_kind == "jsonl":
        store: Any = al.sessions.JsonlSessionStore(tmp_path / "sessions")
    else:
        store = al.sessions.SqliteSessionStore(tmp_path / "sessions.db")
    events: list[Any] = []
    result, agent, stored = await _run_agent(tmp_path, key_in=key_in, store=store, events=events)

    assert result.stop_reason is StopReason.ERROR
    assert result.error_kind is ErrorKind.AUTH
    kinds = [e.kind for e in events if type(e) is al.StreamRetry]
    assert kinds == [ErrorKind.THROTTLED, ErrorKind.NETWORK, ErrorKind.THROTTLED]
    with pytest.raises(al.AgentError) as raised:
        result.raise_for_error()
    seen = {
        "result.error": result.error or "",
        "result": msgspec.json.encode(result).decode(),
        "events": repr(events),
        "exception": "".join(traceback.format_exception(raised.value)),
        "checkpoint": msgspec.json.encode(agent.checkpoint()).decode(),
        "stored messages": msgspec.json.encode(stored).decode(),
        "store files": _files_text(tmp_path),
        "log text": caplog.text,
        "log records": "".join(
            f"{r.getMessage()} {r.exc_text or ''} {r.args!r}" for r in caplog.records
        ),
    }
    assert "receive_response_headers" in caplog.text  # httpcore's trace was on
    assert "***" in seen["result.error"]
    assert {where: leaks(text) for where, text in seen.items() if leaks(text)} == {}


async def test_bedrock_keeps_its_aws_secret_and_session_token_out_too() -> None:
    secret, token = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzEXAMPLEKEY", "FwoGZXIvYXdzEB4aDEXAMPLETOKEN0123"
    credentials = AwsCredentials("AKIDEXAMPLE", secret, token)
    echo = msgspec.json.encode({"message": f"signature for {secret} with token {token} is bad"})
    frame = encode_message(
        {":message-type": "exception", ":exception-type": "throttlingException"}, echo
    )
    replies = [
        httpx.Response(403, content=echo, headers={"content-type": "application/json"}),
        httpx.Response(
            200, content=frame, headers={"content-type": "application/vnd.amazon.eventstream"}
        ),
    ]

    def respond(request: httpx.Request) -> httpx.Response:
        return replies.pop(0)

    model = ModelSpec(provider="bedrock", model_id="m")
    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        provider = BedrockProvider(region="us-east-1", credentials=credentials, client=client)
        _, denied = await collect(provider, model, context(), StreamOptions())
        _, throttled = await collect(provider, model, context(), StreamOptions())
    assert denied.error_kind is ErrorKind.AUTH
    assert throttled.error_kind is ErrorKind.THROTTLED
    for message in (denied, throttled):
        shown = message.error_message or ""
        assert secret[8:24] not in shown
        assert token[8:24] not in shown
        assert "***" in shown
