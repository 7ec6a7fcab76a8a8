"""A seeded mutation fuzzer over the recorded provider responses in tests/fixtures.

Every adapter gets its recordings (and a proxy stream made here) as a corpus. A mutation is
either structural (one JSON value somewhere in one frame replaced by a value of the wrong type,
deep nesting included; a frame's type renamed, dropped, repeated or swapped; keys removed) or
byte-level (flips, cuts, repeats, stray line endings, random bytes), sometimes combined, and
sometimes with the HTTP status changed to an error status. A case is run through the real
adapter over ``httpx.MockTransport`` in random chunks and folded by the ``Accumulator``: the
outcome must be well-typed events ending in at most one terminal event and a message that
survives a typed ``msgspec`` round trip. Anything else (an exception, an ill-typed event or
message, a case that does not end within its time limit) is an escape.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import anyio
import httpx
import msgspec

from agentloop import AssistantMessage, ModelSpec, StreamOptions
from agentloop.stream import (
    Accumulator,
    AssistantMessageEvent,
    Done,
    ErrorEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from agentloop_providers._eventstream import EventStreamDecoder, encode_message
from agentloop_providers._sigv4 import AwsCredentials
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.azure import AzureChatProvider, AzureResponsesProvider
from agentloop_providers.bedrock import BedrockProvider
from agentloop_providers.gemini import GeminiProvider
from agentloop_providers.mistral import MistralProvider
from agentloop_providers.ollama import OllamaProvider
from agentloop_providers.openai_chat import OpenAIChatProvider
from agentloop_providers.openai_responses import OpenAIResponsesProvider
from agentloop_providers.proxy import ProxyProvider
from agentloop_providers.xai import XaiChatProvider, XaiResponsesProvider

from ._fixtures import FIXTURES, anthropic_messages, wrap_chunks
from ._loopback_ii import context

if TYPE_CHECKING:
    import random
    from collections.abc import AsyncGenerator, AsyncIterator, Callable

    from agentloop_providers._http import HttpProvider

__all__ = ["CORPUS", "Outcome", "Seed", "mutate", "run_case"]

SSE = "text/event-stream"
NDJSON = "application/x-ndjson"
JSON = "application/json"
EVENTSTREAM = "application/vnd.amazon.eventstream"
CREDS = AwsCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
CASE_TIME_LIMIT = 10.0  # seconds; a case that takes longer counts as a hang


@dataclass(frozen=True)
class Seed:
    """One recorded body and the adapter that reads it."""

    name: str
    make: Callable[..., HttpProvider]  # called with client=
    body: bytes
    content_type: str = SSE
    status: int = 200

    @property
    def adapter(self) -> str:
        return self.name.split("/")[0]


def _read(rel: str) -> bytes:
    return (FIXTURES / rel).read_bytes()


def _chunks(rel: str) -> bytes:
    raw = _read(rel)
    first = msgspec.json.decode(raw.splitlines()[0])
    return wrap_chunks(raw, event_names=isinstance(first, dict) and "type" in first)


def _proxy_body() -> bytes:
    events: list[AssistantMessageEvent] = [
        StreamStart(provider="anthropic", model_id="claude"),
        TextStart(index=0),
        TextDelta(index=0, delta="Let me look."),
        TextEnd(index=0),
        ToolCallStart(index=1, id="call_1", name="read"),
        ToolCallDelta(index=1, delta='{"path": "a.txt"}'),
        ToolCallEnd(index=1),
        Done(),
    ]
    encode = msgspec.json.encode
    return b"".join(b"data: " + encode(e) + b"\n\n" for e in events)


def _corpus() -> list[Seed]:
    anthropic = AnthropicProvider
    seeds: list[Seed] = []

    def add(name: str, make: Any, body: bytes, ctype: str = SSE, status: int = 200) -> None:
        seeds.append(Seed(name, make, body, ctype, status))

    for path in sorted((FIXTURES / "anthropic").glob("*.sse")):
        add(f"anthropic/{path.stem}", anthropic, path.read_bytes())
    multi = _read("anthropic/multi_turn_client_and_server_tool.chunks.jsonl")
    for i, body in enumerate(anthropic_messages(multi)):
        add(f"anthropic/multi_turn#{i}", anthropic, body)
    for path in sorted((FIXTURES / "openai_chat").glob("*.sse")):
        add(f"openai_chat/{path.stem}", OpenAIChatProvider, path.read_bytes())
    for path in sorted((FIXTURES / "llamacpp_python").glob("*.sse")):
        if path.stat().st_size < 20_000:  # the long generation adds nothing but time
            add(f"openai_chat/llamacpp_{path.stem}", OpenAIChatProvider, path.read_bytes())
    add(
        "openai_chat/llamacpp_error_500",
        OpenAIChatProvider,
        _read("llamacpp_python/error_500_content_null.json"),
        JSON,
        500,
    )
    for path in sorted((FIXTURES / "ollama").glob("*.ndjson")):
        add(f"ollama/{path.stem}", OllamaProvider, path.read_bytes(), NDJSON)
    add(
        "ollama/nonstream",
        OllamaProvider,
        _read("ollama/chat_tool_call_with_thinking_nonstream.json"),
        JSON,
    )
    add(
        "ollama/error_400",
        OllamaProvider,
        _read("ollama/error_400_model_does_not_support_tools.json"),
        JSON,
        400,
    )
    for path in sorted((FIXTURES / "gemini").glob("*.sse")):
        add(f"gemini/{path.stem}", GeminiProvider, path.read_bytes())
    add(
        "gemini/partial_args",
        GeminiProvider,
        _chunks("gemini/streaming_function_call_partial_args.chunks.jsonl"),
    )
    add("gemini/error_429", GeminiProvider, _read("gemini/error_429_retry_info.json"), JSON, 429)
    add("mistral/magistral_thinking", MistralProvider, _read("mistral/magistral_thinking.sse"))
    add(
        "mistral/tool_call",
        MistralProvider,
        _chunks("mistral/tool_call_single_chunk.chunks.jsonl"),
    )
    add(
        "xai/chat",
        XaiChatProvider,
        _chunks("xai/chat_reasoning_then_tool_call.chunks.jsonl"),
    )
    add(
        "xai/responses",
        XaiResponsesProvider,
        _chunks("xai/responses_reasoning_stream.chunks.jsonl"),
    )

    def azure_chat(*, client: httpx.AsyncClient) -> HttpProvider:
        return AzureChatProvider(endpoint="https://az.example", client=client, api_key="test-key")

    def azure_responses(*, client: httpx.AsyncClient) -> HttpProvider:
        return AzureResponsesProvider(
            endpoint="https://az.example", client=client, api_key="test-key"
        )

    add(
        "azure/chat",
        azure_chat,
        _chunks("azure/chat_model_router_content_filter.chunks.jsonl"),
    )
    add("azure/responses", azure_responses, _chunks("azure/responses_tool_call.chunks.jsonl"))
    for path in sorted((FIXTURES / "openai_responses").iterdir()):
        rel = f"openai_responses/{path.name}"
        body = _chunks(rel) if path.suffix == ".jsonl" else path.read_bytes()
        add(f"openai_responses/{path.name.split('.')[0]}", OpenAIResponsesProvider, body)

    def bedrock(*, client: httpx.AsyncClient) -> HttpProvider:
        return BedrockProvider(region="us-east-1", credentials=CREDS, client=client)

    for path in sorted((FIXTURES / "bedrock").glob("*.bin")):
        add(f"bedrock/{path.stem}", bedrock, path.read_bytes(), EVENTSTREAM)
    add(
        "bedrock/error_400",
        bedrock,
        _read("bedrock/error_400_invalid_model.json"),
        JSON,
        400,
    )

    def proxy(*, client: httpx.AsyncClient) -> HttpProvider:
        return ProxyProvider("https://proxy.example/stream", client=client, token="test-key")

    add("proxy/events", proxy, _proxy_body())
    return seeds


CORPUS: list[Seed] = _corpus()

# --------------------------------------------------------------------------- mutation

_DEEP = "\x00deep\x00"  # stands for a 10,000-deep nesting, spliced in as raw JSON text
_DEEP_RAW = {
    "list": b"[" * 10_000 + b"]" * 10_000,
    "object": b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
}
_HOSTILE: list[Any] = [
    "x",
    "",
    "12",
    0,
    -1,
    7,
    2**31,
    10**30,
    1.5,
    -0.0,
    1e308,
    None,
    True,
    False,
    [],
    {},
    [0],
    ["a", 1],
    [[]],
    {"": None},
    {"type": None},
    {"index": "0"},
    "\u0000\ud7ff\ufffd",
    "a" * 300,
    _DEEP,
]
_BYTES = [b"\n", b"\r", b"\r\n", b"\n\n", b"data: ", b":", b"{", b"}", b"[", b"]", b'"', b"\xff"]


_NOT_JSON = (msgspec.DecodeError, RecursionError, UnicodeDecodeError)


@dataclass
class Outcome:
    """What one mutated case gave (``escape`` is set when an invariant failed)."""

    events: int = 0
    terminal: str = ""
    escape: str | None = None


def _frames_sse(body: bytes) -> list[tuple[int, int]]:
    """The byte ranges of the JSON payloads of ``data:`` lines."""
    out: list[tuple[int, int]] = []
    pos = 0
    for line in body.split(b"\n"):
        if line.startswith(b"data:"):
            start = pos + 5 + (1 if line[5:6] == b" " else 0)
            end = pos + len(line.rstrip(b"\r"))
            out.append((start, end))
        pos += len(line) + 1
    return out


def _frames_lines(body: bytes) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    pos = 0
    for line in body.split(b"\n"):
        if line.strip():
            out.append((pos, pos + len(line.rstrip(b"\r"))))
        pos += len(line) + 1
    return out


def _paths(value: Any, at: tuple[Any, ...] = (), out: list[tuple[Any, ...]] | None = None) -> Any:
    out = [] if out is None else out
    out.append(at)
    if isinstance(value, dict):
        for key, item in value.items():
            _paths(item, (*at, key), out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _paths(item, (*at, i), out)
    return out


def _set(value: Any, at: tuple[Any, ...], new: Any) -> Any:
    if not at:
        return new
    head, rest = at[0], at[1:]
    if isinstance(value, dict):
        return {**value, head: _set(value[head], rest, new)}
    copied = list(value)
    copied[head] = _set(copied[head], rest, new)
    return copied


def _delete(value: Any, at: tuple[Any, ...]) -> Any:
    if len(at) == 1:
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if k != at[0]}
        return [v for i, v in enumerate(value) if i != at[0]]
    head = at[0]
    if isinstance(value, dict):
        return {**value, head: _delete(value[head], at[1:])}
    copied = list(value)
    copied[head] = _delete(copied[head], at[1:])
    return copied


def _encode(value: Any, rng: random.Random) -> bytes:
    raw = msgspec.json.encode(value)
    marker = msgspec.json.encode(_DEEP)
    if marker in raw:
        raw = raw.replace(marker, _DEEP_RAW[rng.choice(("list", "object"))], 1)
    return raw


def _mutate_json(doc: Any, rng: random.Random, types: list[str]) -> tuple[Any, str]:
    paths = _paths(doc)
    at = rng.choice(paths)
    roll = rng.random()
    if roll < 0.12 and types and isinstance(doc, dict) and "type" in doc:
        name = rng.choice(types)
        return {**doc, "type": name}, f"type -> {name!r}"
    if roll < 0.22 and at:
        return _delete(doc, at), f"delete {list(at)}"
    if roll < 0.27 and at:
        parent = at[:-1]
        return _set(doc, parent, _DEEP), f"deep at {list(parent)}"
    new = rng.choice(_HOSTILE)
    shown = "deep" if new is _DEEP else repr(new)[:20]
    return _set(doc, at, new), f"{list(at)} = {shown}"


def _mutate_frames(seed: Seed, body: bytes, rng: random.Random) -> tuple[bytes, str]:
    if seed.content_type == EVENTSTREAM:
        return _mutate_eventstream(body, rng)
    ranges = _frames_sse(body) if seed.content_type == SSE else _frames_lines(body)
    if not ranges:
        return body, "no frames"
    start, end = rng.choice(ranges)
    roll = rng.random()
    if roll < 0.08:
        return body[:start] + body[end:], "frame emptied"
    if roll < 0.16:
        other = rng.choice(ranges)
        frame = body[other[0] : other[1]]
        return body[:start] + frame + body[end:], "frame replaced by another"
    try:
        doc = msgspec.json.decode(body[start:end])
    except _NOT_JSON:
        return body, "not JSON"
    types = _TYPES.get(seed.adapter, [])
    new, what = _mutate_json(doc, rng, types)
    return body[:start] + _encode(new, rng) + body[end:], what


def _mutate_eventstream(body: bytes, rng: random.Random) -> tuple[bytes, str]:
    try:
        messages = EventStreamDecoder().feed(body)
    except ValueError:
        return body, "not event-stream framing"
    if not messages:
        return body, "no frames"
    i = rng.randrange(len(messages))
    message = messages[i]
    roll = rng.random()
    headers = dict(message.headers)
    payload = message.payload
    if roll < 0.1:
        name = rng.choice(_TYPES["bedrock"])
        headers[":event-type"] = name
        what = f"event-type -> {name}"
    elif roll < 0.15:
        name = rng.choice(["exception", "error", "event", "?"])
        headers[":message-type"] = name
        what = f"message-type -> {name}"
    elif roll < 0.2:
        del messages[i]
        return b"".join(_frame(m.headers, m.payload) for m in messages), "frame dropped"
    else:
        try:
            doc = msgspec.json.decode(payload)
        except _NOT_JSON:
            return body, "not JSON"
        new, what = _mutate_json(doc, rng, [])
        payload = _encode(new, rng)
    messages[i] = type(message)(headers, payload)
    return b"".join(_frame(m.headers, m.payload) for m in messages), what


def _frame(headers: dict[str, Any], payload: bytes) -> bytes:
    return encode_message(headers, payload)


def _mutate_bytes(body: bytes, rng: random.Random) -> tuple[bytes, str]:
    if not body:
        return rng.choice(_BYTES), "empty body filled"
    n = len(body)
    i = rng.randrange(n)
    roll = rng.random()
    if roll < 0.2:
        flipped = bytes([body[i] ^ (1 << rng.randrange(8))])
        return body[:i] + flipped + body[i + 1 :], f"flip at {i}"
    if roll < 0.35:
        j = min(n, i + rng.randrange(1, 64))
        return body[:i] + body[j:], f"cut {i}:{j}"
    if roll < 0.5:
        j = min(n, i + rng.randrange(1, 256))
        return body[:j] + body[i:j] + body[j:], f"repeat {i}:{j}"
    if roll < 0.65:
        return body[:i] + rng.choice(_BYTES) + body[i:], f"insert at {i}"
    if roll < 0.75:
        return body[:i], f"truncate at {i}"
    if roll < 0.85:
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        return body[:i] + junk + body[i:], f"junk at {i}"
    j = rng.randrange(n)
    a, b = sorted((i, j))
    return body[:a] + body[b:] + body[a:b], f"rotate {a}:{b}"


_TYPES: dict[str, list[str]] = {}


def _collect_types() -> None:
    for seed in CORPUS:
        names = _TYPES.setdefault(seed.adapter, [])
        if seed.content_type == EVENTSTREAM:
            for message in EventStreamDecoder().feed(seed.body):
                kind = message.event_type
                if kind and kind not in names:
                    names.append(kind)
            continue
        ranges = _frames_sse(seed.body) if seed.content_type == SSE else _frames_lines(seed.body)
        for start, end in ranges:
            try:
                doc = msgspec.json.decode(seed.body[start:end])
            except msgspec.DecodeError:
                continue
            kind = doc.get("type") if isinstance(doc, dict) else None
            if isinstance(kind, str) and kind not in names:
                names.append(kind)


_collect_types()
_ERROR_STATUSES = [400, 401, 403, 408, 413, 429, 500, 503, 529]


@dataclass(frozen=True)
class Mutant:
    seed: Seed
    body: bytes
    status: int
    content_type: str
    cuts: list[int]
    what: str


def mutate(seed: Seed, rng: random.Random) -> Mutant:
    """One mutation of ``seed`` (one to three edits, sometimes a changed HTTP status)."""
    body = seed.body
    whats: list[str] = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if rng.random() < 0.65:
            body, what = _mutate_frames(seed, body, rng)
        else:
            body, what = _mutate_bytes(body, rng)
        whats.append(what)
    status, ctype = seed.status, seed.content_type
    if rng.random() < 0.08:
        status = rng.choice(_ERROR_STATUSES)
        ctype = rng.choice((JSON, "text/plain", ctype))
        whats.append(f"HTTP {status} {ctype}")
    cuts = sorted(rng.randrange(len(body) + 1) for _ in range(rng.randrange(0, 12)))
    return Mutant(seed, body, status, ctype, cuts, "; ".join(whats))


# --------------------------------------------------------------------------- running


class _Pieces(httpx.AsyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


_event_type = msgspec.json.Decoder(AssistantMessageEvent)
_message_type = msgspec.json.Decoder(AssistantMessage)
_encoder = msgspec.json.Encoder()
_MODEL = {
    "bedrock": ModelSpec(provider="bedrock", model_id="us.amazon.nova-micro-v1:0"),
}


async def _consume(
    stream: AsyncIterator[AssistantMessageEvent], accumulator: Accumulator, outcome: Outcome
) -> None:
    async for event in stream:
        outcome.events += 1
        if outcome.terminal:
            outcome.escape = f"event {type(event).__name__} after a terminal event"
            return
        if _event_type.decode(_encoder.encode(event)) != event:
            outcome.escape = f"event changed by a typed round trip: {event!r:.200}"
            return
        if type(event) is Done or type(event) is ErrorEvent:
            outcome.terminal = type(event).__name__
        accumulator.push(event)


async def run_case(mutant: Mutant) -> Outcome:
    """Replay ``mutant`` through its adapter and check every invariant (see the module docs)."""
    body = mutant.body
    bounds = [0, *mutant.cuts, len(body)]
    pieces = [body[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]

    def respond(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": mutant.content_type}
        return httpx.Response(mutant.status, stream=_Pieces(pieces), headers=headers)

    adapter = mutant.seed.adapter
    model = _MODEL.get(adapter, ModelSpec(provider=adapter, model_id="test-model"))
    outcome = Outcome()
    accumulator = Accumulator(model)
    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        provider = mutant.seed.make(client=client)
        options = StreamOptions() if adapter == "bedrock" else StreamOptions(api_key="test-key")
        try:
            with anyio.fail_after(CASE_TIME_LIMIT):
                stream = cast(
                    "AsyncGenerator[AssistantMessageEvent, None]",
                    provider(model, context(), options),
                )
                async with contextlib.aclosing(stream):
                    await _consume(stream, accumulator, outcome)
                message = accumulator.finish()
                _message_type.decode(_encoder.encode(message))
        except TimeoutError:
            outcome.escape = f"no end within {CASE_TIME_LIMIT}s"
        except Exception as exc:  # the point of the fuzzer: nothing may escape
            outcome.escape = f"{type(exc).__name__}: {str(exc)[:200]}"
        if outcome.escape is None and mutant.status >= 400 and outcome.terminal != "ErrorEvent":
            outcome.escape = f"HTTP {mutant.status} did not end in an ErrorEvent"
    return outcome
