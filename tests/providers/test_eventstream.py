"""The AWS event-stream decoder on recorded Bedrock bodies, and on corrupted and cut ones."""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from agentloop_providers._eventstream import (
    EventStreamDecoder,
    EventStreamError,
    EventStreamMessage,
    encode_message,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bedrock"
BODIES = sorted(FIXTURES.glob("*.bin"))


def decode_all(data: bytes, step: int | None = None) -> list[EventStreamMessage]:
    decoder = EventStreamDecoder()
    out: list[EventStreamMessage] = []
    if step is None:
        out.extend(decoder.feed(data))
    else:
        for i in range(0, len(data), step):
            out.extend(decoder.feed(data[i : i + step]))
    decoder.close()
    return out


def test_there_are_five_recorded_bodies() -> None:
    assert len(BODIES) == 5


@pytest.mark.parametrize("path", BODIES, ids=lambda p: p.stem)
def test_recorded_body_decodes_whole_and_byte_by_byte(path: Path) -> None:
    data = path.read_bytes()
    whole = decode_all(data)
    assert whole, "no messages"
    for message in whole:
        assert message.message_type == "event"
        assert message.headers[":content-type"] == "application/json"
        payload = json.loads(message.payload)
        assert "p" in payload  # Bedrock's padding field
    types = [m.event_type for m in whole]
    assert types[0] == "messageStart"
    assert types[-2:] == ["messageStop", "metadata"]
    for step in (1, 7, 64):
        pieces = decode_all(data, step)
        assert [(m.headers, m.payload) for m in pieces] == [(m.headers, m.payload) for m in whole]


def test_reasoning_body_content() -> None:
    messages = decode_all((FIXTURES / "converse_stream_reasoning_claude.bin").read_bytes())
    deltas = [json.loads(m.payload) for m in messages if m.event_type == "contentBlockDelta"]
    thinking = "".join(d["delta"].get("reasoningContent", {}).get("text", "") for d in deltas)
    assert thinking.startswith("The user has greeted me with")
    assert any("signature" in d["delta"].get("reasoningContent", {}) for d in deltas)


@pytest.mark.parametrize("where", ["prelude_crc", "headers", "payload", "message_crc"])
def test_corrupt_byte_is_a_crc_error(where: str) -> None:
    data = bytearray((FIXTURES / "converse_stream_text_then_tool_use_nova.bin").read_bytes())
    total, headers_len = struct.unpack_from(">II", data, 0)
    offset = {
        "prelude_crc": 9,
        "headers": 12 + 3,
        "payload": 12 + headers_len + 2,
        "message_crc": total - 1,
    }[where]
    data[offset] ^= 0x01
    with pytest.raises(EventStreamError, match="CRC32 mismatch"):
        decode_all(bytes(data))


def test_corruption_in_a_later_frame_keeps_the_earlier_ones() -> None:
    data = bytearray((FIXTURES / "converse_stream_reasoning_claude.bin").read_bytes())
    first_total = struct.unpack_from(">I", data, 0)[0]
    data[first_total + 20] ^= 0xFF
    decoder = EventStreamDecoder()
    got: list[EventStreamMessage] = []

    def feed_all() -> None:
        for i in range(0, len(data), 5):
            got.extend(decoder.feed(bytes(data[i : i + 5])))

    with pytest.raises(EventStreamError, match="message CRC32"):
        feed_all()
    assert [m.event_type for m in got] == ["messageStart"]


def test_corrupt_length_in_prelude_is_caught_by_the_prelude_crc() -> None:
    data = bytearray((FIXTURES / "converse_stream_reasoning_claude.bin").read_bytes())
    data[2] ^= 0x40  # total length becomes enormous
    with pytest.raises(EventStreamError, match="prelude CRC32"):
        decode_all(bytes(data))


@pytest.mark.parametrize("cut", [1, 11, 12, 40, -1])
def test_truncated_frame_is_an_error(cut: int) -> None:
    data = (FIXTURES / "converse_stream_empty_text_delta_gpt_oss.bin").read_bytes()
    total = struct.unpack_from(">I", data, 0)[0]
    # Keep the first message whole and cut the second one.
    end = total + cut if cut > 0 else len(data) + cut
    decoder = EventStreamDecoder()
    messages = decoder.feed(data[:end])
    assert messages
    assert messages[0].event_type == "messageStart"
    with pytest.raises(EventStreamError, match="truncated"):
        decoder.close()


def test_impossible_lengths_are_rejected() -> None:
    prelude = struct.pack(">II", 8, 0)  # shorter than a prelude and a CRC
    with pytest.raises(EventStreamError, match="out of range"):
        EventStreamDecoder().feed(prelude + struct.pack(">I", zlib.crc32(prelude)))
    prelude = struct.pack(">II", 20, 10)  # headers longer than the message allows
    with pytest.raises(EventStreamError, match="headers length"):
        EventStreamDecoder().feed(prelude + struct.pack(">I", zlib.crc32(prelude)))


def _frame(raw_headers: bytes, payload: bytes) -> bytes:
    total = 16 + len(raw_headers) + len(payload)
    prelude = struct.pack(">II", total, len(raw_headers))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + raw_headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def _header(name: str, kind: int, value: bytes) -> bytes:
    return bytes([len(name)]) + name.encode() + bytes([kind]) + value


def test_every_header_value_type() -> None:
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    raw = b"".join(
        [
            _header("t", 0, b""),
            _header("f", 1, b""),
            _header("byte", 2, struct.pack(">b", -5)),
            _header("short", 3, struct.pack(">h", -300)),
            _header("int", 4, struct.pack(">i", 70000)),
            _header("long", 5, struct.pack(">q", -(2**40))),
            _header("bytes", 6, struct.pack(">H", 3) + b"\x00\x01\x02"),
            _header("str", 7, struct.pack(">H", 4) + "h\u00e9y".encode()),
            _header("ts", 8, struct.pack(">q", 1_700_000_000_000)),
            _header("uuid", 9, ident.bytes),
        ]
    )
    (message,) = decode_all(_frame(raw, b"{}"))
    assert message.headers == {
        "t": True,
        "f": False,
        "byte": -5,
        "short": -300,
        "int": 70000,
        "long": -(2**40),
        "bytes": b"\x00\x01\x02",
        "str": "h\u00e9y",
        "ts": 1_700_000_000_000,
        "uuid": ident,
    }
    assert message.payload == b"{}"


def test_unknown_header_type_and_overrun_are_errors() -> None:
    with pytest.raises(EventStreamError, match="unknown value type"):
        decode_all(_frame(_header("x", 42, b""), b""))
    with pytest.raises(EventStreamError, match="runs past"):
        decode_all(_frame(_header("x", 7, struct.pack(">H", 50) + b"ab"), b""))
    with pytest.raises(EventStreamError, match="malformed"):
        decode_all(_frame(_header("x", 4, b"\x00"), b""))


def test_exception_message() -> None:
    frame = encode_message(
        {
            ":message-type": "exception",
            ":exception-type": "throttlingException",
            ":content-type": "application/json",
        },
        b'{"message":"Too many requests"}',
    )
    (message,) = decode_all(frame)
    assert message.message_type == "exception"
    assert message.event_type == "throttlingException"
    assert "throttlingException" in repr(message)


@settings(max_examples=50, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), min_size=1, max_size=6),
    step=st.integers(min_value=1, max_value=97),
)
def test_roundtrip_any_split(payloads: list[bytes], step: int) -> None:
    data = b"".join(
        encode_message({":event-type": f"e{i}", "n": i, "ok": i % 2 == 0}, p)
        for i, p in enumerate(payloads)
    )
    messages = decode_all(data, step)
    assert [m.payload for m in messages] == payloads
    assert [m.headers["n"] for m in messages] == list(range(len(payloads)))
