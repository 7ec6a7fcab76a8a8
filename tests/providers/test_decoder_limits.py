"""The frame decoders are bounded and linear, and a provider ends an oversized frame cleanly.

Memory is measured with ``tracemalloc`` (Python allocations: what a buffer costs), the input is
made one network-sized chunk at a time so that the test itself holds almost nothing, and the
bounds are generous: they tell bounded from unbounded and linear from quadratic, not one
machine from another.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
import zlib
from typing import TYPE_CHECKING, Any, Self

import httpx
import pytest

from agentloop import ErrorKind, ModelSpec, StopReason, StreamOptions
from agentloop.stream import Accumulator, ErrorEvent
from agentloop_providers import FrameTooLarge
from agentloop_providers._eventstream import EventStreamDecoder, encode_message
from agentloop_providers._frames import DEFAULT_MAX_EVENT_BYTES
from agentloop_providers._ndjson import NDJSONDecoder
from agentloop_providers._sse import SSEDecoder
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.bedrock import BedrockProvider
from agentloop_providers.ollama import OllamaProvider

from ._fuzz import CREDS
from ._loopback_ii import context
from ._util import opened

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

MB = 1024 * 1024
CHUNK = 64 * 1024


def _chunks(total: int, make: Callable[[int], bytes]) -> Iterator[bytes]:
    """``total`` bytes as fresh ``CHUNK``-sized objects (the way a socket hands them over)."""
    for start in range(0, total, CHUNK):
        yield make(min(CHUNK, total - start))


def _no_newline(size: int) -> bytes:
    return b"a" * size


def _data_lines(size: int) -> bytes:
    # Two-byte values: one-byte ones are shared singletons and would cost nothing to hold.
    line = b"data: ab\n"
    return (line * (size // len(line) + 1))[:size]


class _Peak:
    """The most memory allocated (``tracemalloc``) inside the block, above what was held before."""

    def __enter__(self) -> Self:
        tracemalloc.start()
        self.base = tracemalloc.get_traced_memory()[0]
        self.bytes = 0
        return self

    def __exit__(self, *exc: object) -> None:
        self.bytes = tracemalloc.get_traced_memory()[1] - self.base
        tracemalloc.stop()


def _feed(feed: Callable[[bytes], Any], chunks: Iterator[bytes], fed: list[int]) -> None:
    for chunk in chunks:
        fed[0] += len(chunk)
        feed(chunk)


def _feed_until_too_large(feed: Callable[[bytes], Any], chunks: Iterator[bytes]) -> tuple[int, int]:
    """Feed until ``FrameTooLarge``; returns (bytes fed, peak memory)."""
    fed = [0]
    with _Peak() as peak, pytest.raises(FrameTooLarge):
        _feed(feed, chunks, fed)
    return fed[0], peak.bytes


@pytest.mark.parametrize(
    ("what", "make"),
    [("a 50 MB line without a newline", _no_newline), ("50 MB of data lines", _data_lines)],
)
@pytest.mark.parametrize("cap", [1 * MB, DEFAULT_MAX_EVENT_BYTES])
def test_sse_stops_at_the_cap_with_memory_a_small_multiple_of_it(
    what: str, make: Callable[[int], bytes], cap: int
) -> None:
    decoder = SSEDecoder(max_line_bytes=cap, max_event_bytes=cap)
    fed, peak = _feed_until_too_large(decoder.feed, _chunks(50 * MB, make))
    assert fed <= cap + CHUNK  # it stopped as soon as the cap was passed
    assert peak < 3 * cap + 4 * CHUNK, f"{what}: peak {peak / MB:.1f} MB for a cap of {cap / MB}"


def test_sse_the_default_caps_are_16_mib() -> None:
    decoder = SSEDecoder()
    fed, _ = _feed_until_too_large(decoder.feed, _chunks(50 * MB, _no_newline))
    assert DEFAULT_MAX_EVENT_BYTES < fed <= DEFAULT_MAX_EVENT_BYTES + CHUNK
    assert DEFAULT_MAX_EVENT_BYTES == 16 * MB


def test_sse_one_huge_read_is_bounded_too() -> None:
    decoder = SSEDecoder(max_event_bytes=1 * MB)
    body = _data_lines(20 * MB)
    with _Peak() as peak, pytest.raises(FrameTooLarge):
        decoder.feed(body)
    assert peak.bytes < 4 * MB  # lines are cut from small slices, not from the whole read


def test_sse_events_under_the_cap_pass_whole() -> None:
    payload = b"x" * (MB - 100)
    decoder = SSEDecoder(max_line_bytes=MB, max_event_bytes=MB)
    events = [e for i in range(0, len(payload), 4096) for e in decoder.feed(payload[i : i + 4096])]
    events += decoder.feed(b"\n\n")
    assert events == []  # a line without "data:" is no event
    events = decoder.feed(b"data: " + payload[:1000] + b"\n\n")
    assert [len(e.data) for e in events] == [1000]


def test_ndjson_a_50_mb_line_stops_at_the_cap() -> None:
    decoder: NDJSONDecoder[Any] = NDJSONDecoder(max_line_bytes=1 * MB)
    fed, peak = _feed_until_too_large(decoder.feed, _chunks(50 * MB, _no_newline))
    assert fed <= MB + CHUNK
    assert peak < 3 * MB + 4 * CHUNK


def _ndjson_seconds(line_bytes: int, lines: int, chunk: int) -> float:
    """Seconds to decode ``lines`` JSON strings of ``line_bytes`` each, fed ``chunk`` at a time."""
    one = b'"' + b"x" * (line_bytes - 3) + b'"\n'
    decoder: NDJSONDecoder[Any] = NDJSONDecoder()
    values = 0
    started = time.perf_counter()
    for _ in range(lines):
        for i in range(0, len(one), chunk):
            values += len(decoder.feed(one[i : i + chunk]))
    elapsed = time.perf_counter() - started
    assert values == lines
    return elapsed


def test_ndjson_is_linear_in_long_lines_cut_in_small_reads() -> None:
    # 4 lines of 15 MB in 4 KB reads: the quadratic decoder this replaces copied each line's
    # prefix on every read, ~110 GB in all (minutes); a linear one copies each byte twice.
    seconds = _ndjson_seconds(15 * MB, 4, 4096)
    assert seconds < 10, f"{seconds:.1f}s for 60 MB"


def test_ndjson_is_linear_in_many_short_lines() -> None:
    seconds = _ndjson_seconds(200, 100_000, 4096)  # 20 MB in 100,000 lines
    assert seconds < 10, f"{seconds:.1f}s for 100,000 lines"


def test_event_stream_refuses_a_message_over_the_cap_before_buffering_it() -> None:
    prelude = struct.pack(">II", 2 * MB, 0)
    head = prelude + struct.pack(">I", zlib.crc32(prelude))
    decoder = EventStreamDecoder(max_message_bytes=MB)
    with pytest.raises(FrameTooLarge):
        decoder.feed(head)
    assert EventStreamDecoder(max_message_bytes=3 * MB).feed(head) == []  # waits for the rest


# --------------------------------------------------------------------------- through a provider


class _Lazy(httpx.AsyncByteStream):
    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.sent += len(chunk)
            yield chunk


async def _call(provider_cls: Any, body: _Lazy, content_type: str, **kwargs: Any) -> Any:
    """One call with ``max_event_bytes=1 MiB``; the message, and the body bytes the server had
    sent when the error event arrived."""

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=body, headers={"content-type": content_type})

    model = ModelSpec(provider=provider_cls.provider_name, model_id="m")
    accumulator = Accumulator(model)
    sent = -1
    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        provider = provider_cls(client=client, max_event_bytes=MB, **kwargs)
        async with opened(provider, model, context(), StreamOptions(api_key="k")) as stream:
            async for event in stream:
                accumulator.push(event)
                if isinstance(event, ErrorEvent):
                    sent = body.sent
    return accumulator.finish(), sent


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("provider_cls", "content_type", "make"),
    [
        (AnthropicProvider, "text/event-stream", _no_newline),
        (AnthropicProvider, "text/event-stream", _data_lines),
        (OllamaProvider, "application/x-ndjson", _no_newline),
    ],
)
async def test_a_provider_ends_an_oversized_frame_as_a_typed_error(
    provider_cls: Any, content_type: str, make: Callable[[int], bytes]
) -> None:
    body = _Lazy(_chunks(50 * MB, make))
    message, sent = await _call(provider_cls, body, content_type)
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.OTHER
    assert "longer than 1,048,576 bytes (the max_event_bytes limit)" in (
        message.error_message or ""
    )
    assert 0 < sent <= MB + CHUNK  # it stopped reading there


@pytest.mark.anyio
async def test_bedrock_ends_an_oversized_message_as_a_typed_error() -> None:
    big = encode_message({":message-type": "event", ":event-type": "x"}, b"x" * (2 * MB))
    body = _Lazy(iter([big[i : i + CHUNK] for i in range(0, len(big), CHUNK)]))
    message, sent = await _call(
        BedrockProvider,
        body,
        "application/vnd.amazon.eventstream",
        region="us-east-1",
        credentials=CREDS,
    )
    assert message.error_kind is ErrorKind.OTHER
    assert "max_event_bytes" in (message.error_message or "")
    assert sent == CHUNK  # refused on its prelude
