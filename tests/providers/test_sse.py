"""The incremental SSE and NDJSON parsers, and the SSE parser against httpx-sse."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import httpx_sse
import pytest
from hypothesis import given, settings, strategies as st

from agentloop_providers._ndjson import NDJSONDecoder, NDJSONError
from agentloop_providers._sse import ServerSentEvent, SSEDecoder

from ._fixtures import FIXTURES

if TYPE_CHECKING:
    from pathlib import Path


def parse(*chunks: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return events


def ev(
    data: str, event: str = "message", id: str = "", retry: int | None = None
) -> ServerSentEvent:  # noqa: A002
    return ServerSentEvent(event, data, id, retry)


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(newline: bytes) -> None:
    body = b"event: a\ndata: 1\n\ndata: 2\ndata: 3\n\n".replace(b"\n", newline)
    assert parse(body) == [ev("1", "a"), ev("2\n3")]


def test_cr_lf_split_between_chunks_is_one_line_ending() -> None:
    assert parse(b"data: 1\r", b"\n\r", b"\ndata: 2\r\n\r\n") == [ev("1"), ev("2")]


def test_comments_are_keep_alives() -> None:
    assert parse(b": ping\n\n: OPENROUTER PROCESSING\n\ndata: x\n\n") == [ev("x")]


def test_field_value_loses_exactly_one_space() -> None:
    assert parse(b"data:a\n\ndata:  b\n\n") == [ev("a"), ev(" b")]


def test_data_without_colon_is_an_empty_line_of_data() -> None:
    assert parse(b"data\ndata\n\n") == [ev("\n")]


def test_an_event_without_data_is_not_dispatched() -> None:
    assert parse(b"event: nothing\n\ndata: x\n\n") == [ev("x")]


def test_id_persists_and_retry_needs_digits() -> None:
    events = parse(b"id: 7\nretry: 1500\ndata: a\n\ndata: b\n\nretry: soon\nid: 8\x00\ndata: c\n\n")
    assert events == [ev("a", id="7", retry=1500), ev("b", id="7"), ev("c", id="7")]


def test_unknown_fields_are_ignored() -> None:
    assert parse(b"foo: bar\ndata: x\n\n") == [ev("x")]


def test_a_leading_bom_is_dropped_even_when_split() -> None:
    assert parse(b"\xef", b"\xbb\xbfdata: x\n\n") == [ev("x")]


def test_multibyte_characters_split_between_chunks() -> None:
    body = "data: héllo → 世界\n\n".encode()
    assert parse(*[body[i : i + 1] for i in range(len(body))]) == [ev("héllo → 世界")]


def test_only_cr_and_lf_end_lines() -> None:
    # U+2028 and friends are line breaks to str.splitlines(), not to SSE.
    assert parse("data: a\u2028b\x0bc\x1cd\n\n".encode()) == [ev("a\u2028b\x0bc\x1cd")]


def test_the_last_event_without_its_blank_line_is_dispatched_at_close() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: b") == [ev("a")]
    assert decoder.close() == [ev("b")]


SSE_FIXTURES = sorted(
    p for provider in ("anthropic", "openai_chat") for p in (FIXTURES / provider).glob("*.sse")
)


@settings(deadline=None)  # a loaded CI machine must not turn into a failure
@given(st.data())
def test_any_chunking_gives_the_same_events(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(SSE_FIXTURES))
    body = path.read_bytes()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=40)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert parse(*pieces) == parse(body)


@settings(deadline=None)
@given(
    st.lists(st.sampled_from([b"\n", b"\r\n", b"\r"]), min_size=1, max_size=8), st.integers(1, 7)
)
def test_mixed_line_endings_in_any_chunking(endings: list[bytes], size: int) -> None:
    lines = [b"data: x", b"", b"event: e", b"data: y", b"data: z", b"", b": c", b""]
    parts: list[bytes] = []
    previous = b""
    for i, line in enumerate(lines):
        ending = endings[i % len(endings)]
        if previous == b"\r" and not line and ending.startswith(b"\n"):
            ending = b"\r"  # CR then LF would be one line ending, swallowing this blank line
        parts.append(line + ending)
        previous = ending
    body = b"".join(parts)
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    assert parse(*pieces) == [ev("x"), ev("y\nz", "e")]


def _httpx_sse(body: bytes) -> list[ServerSentEvent]:
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    return [
        ServerSentEvent(e.event, e.data, e.id, e.retry)
        for e in httpx_sse.EventSource(response).iter_sse()
    ]


@pytest.mark.parametrize("path", SSE_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_agrees_with_httpx_sse_on_every_fixture(path: Path) -> None:
    body = path.read_bytes()
    ours = parse(body)
    theirs = _httpx_sse(body)
    if body.endswith(b"\n\n"):
        assert ours == theirs
    else:
        # The recording lacks the final blank line: httpx-sse drops that last event, as the
        # spec says; we dispatch it (it is the terminal event the message needs).
        assert ours[:-1] == theirs
        assert len(ours) == len(theirs) + 1


# --------------------------------------------------------------------------- NDJSON


def ndjson(*chunks: bytes) -> list[object]:
    decoder: NDJSONDecoder[object] = NDJSONDecoder()
    out: list[object] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.close())
    return out


def test_ndjson_lines_split_anywhere() -> None:
    body = b'{"a": 1}\r\n\n{"b": "\xc3\xa9"}\n[1,2]'
    for size in range(1, len(body) + 1):
        pieces = [body[i : i + size] for i in range(0, len(body), size)]
        assert ndjson(*pieces) == [{"a": 1}, {"b": "é"}, [1, 2]]


def test_ndjson_a_bad_line_raises_with_the_line() -> None:
    decoder: NDJSONDecoder[object] = NDJSONDecoder()
    with pytest.raises(NDJSONError) as info:
        decoder.feed(b'{"ok": 1}\n{"broken": \n')
    assert info.value.line == b'{"broken": '


def test_ndjson_into_a_type() -> None:
    decoder = NDJSONDecoder(dict[str, int])
    assert decoder.feed(b'{"a": 1}\n') == [{"a": 1}]
    with pytest.raises(NDJSONError):
        decoder.feed(b'{"a": "x"}\n')


@settings(deadline=None)
@given(st.data())
def test_ndjson_any_chunking_of_the_ollama_fixtures(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(sorted((FIXTURES / "ollama").iterdir())))
    body = path.read_bytes()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=30)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert ndjson(*pieces) == ndjson(body)
    assert len(ndjson(body)) == body.strip().count(b"\n") + 1
