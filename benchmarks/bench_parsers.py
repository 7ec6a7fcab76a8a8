"""SSE parser throughput: agentloop_providers' own parser against httpx-sse, on the fixtures.

Run: ``python benchmarks/bench_parsers.py [--repeat N] [--quick]``. Prints one JSON object:
MB/s per parser, per network chunk size, for two paths:

- ``parser``: bytes already in memory, handed to the parser chunk by chunk (ours takes bytes;
  httpx-sse's line decoder takes text, so its path includes the incremental UTF-8 decode).
- ``response``: through an ``httpx.Response`` body iterator, as a provider reads it
  (``iter_bytes`` → ours; ``EventSource.iter_sse`` → httpx-sse).

It also checks that both parsers give the same events on every fixture, and reports the
fixtures where they differ (with the reason) under ``disagreements``; and it times each
adapter's whole parse path (bytes → frames → ``AssistantMessageEvent``) in microseconds per
event, under ``adapters``.
"""

from __future__ import annotations

import argparse
import codecs
import json
import platform
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import httpx_sse
from httpx_sse._decoders import SSEDecoder as HttpxSSEDecoder, SSELineDecoder

from agentloop_providers._ndjson import NDJSONDecoder
from agentloop_providers._sse import SSEDecoder
from agentloop_providers.anthropic import AnthropicStreamParser
from agentloop_providers.ollama import OllamaStreamParser
from agentloop_providers.openai_chat import OpenAIChatStreamParser

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
PROVIDERS = ("anthropic", "openai_chat")
CHUNK_SIZES = (64, 1024, 16384)

Event = tuple[str, str, str, int | None]


def fixture_bodies() -> dict[str, bytes]:
    return {
        f"{p.parent.name}/{p.name}": p.read_bytes()
        for provider in PROVIDERS
        for p in sorted((FIXTURES / provider).glob("*.sse"))
    }


def chunked(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


# --------------------------------------------------------------------------- the parsers


def ours(chunks: list[bytes]) -> list[Event]:
    decoder = SSEDecoder()
    out: list[Event] = []
    for chunk in chunks:
        out.extend((e.event, e.data, e.id, e.retry) for e in decoder.feed(chunk))
    out.extend((e.event, e.data, e.id, e.retry) for e in decoder.close())
    return out


def theirs(chunks: list[bytes]) -> list[Event]:
    text = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines = SSELineDecoder()
    decoder = HttpxSSEDecoder()
    out: list[Event] = []

    def take(line: str) -> None:
        sse = decoder.decode(line.rstrip("\n"))
        if sse is not None:
            out.append((sse.event, sse.data, sse.id, sse.retry))

    for chunk in chunks:
        for line in lines.decode(text.decode(chunk)):
            take(line)
    for line in lines.flush():
        take(line)
    return out


def _response(chunks: list[bytes]) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(chunks))


def ours_response(chunks: list[bytes]) -> list[Event]:
    decoder = SSEDecoder()
    out: list[Event] = []
    for chunk in _response(chunks).iter_bytes():
        out.extend((e.event, e.data, e.id, e.retry) for e in decoder.feed(chunk))
    out.extend((e.event, e.data, e.id, e.retry) for e in decoder.close())
    return out


def theirs_response(chunks: list[bytes]) -> list[Event]:
    source = httpx_sse.EventSource(_response(chunks))
    return [(e.event, e.data, e.id, e.retry) for e in source.iter_sse()]


# --------------------------------------------------------------------------- measuring


def throughput(
    fn: Callable[[list[bytes]], list[Event]], corpus: list[list[bytes]], repeat: int
) -> float:
    """MB/s over ``corpus`` (lists of chunks), best of ``repeat`` passes."""
    size = sum(len(c) for chunks in corpus for c in chunks)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for chunks in corpus:
            fn(chunks)
        best = min(best, time.perf_counter() - start)
    return size / best / 1e6


def disagreements(bodies: dict[str, bytes]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, body in bodies.items():
        for size in CHUNK_SIZES:
            a, b = ours(chunked(body, size)), theirs(chunked(body, size))
            if a == b:
                continue
            if not body.endswith((b"\n\n", b"\r\n\r\n", b"\r\r")) and a[:-1] == b:
                found[name] = (
                    "body lacks the final blank line: httpx-sse drops the last event "
                    "(the spec's rule), ours dispatches it at close (the terminal event)"
                )
            else:
                found[name] = f"events differ at chunk size {size}"
            break
    return found


def _parse_all(
    corpus: list[list[bytes]], new_decoder: Callable[[], Any], new_parser: Callable[[], Any]
) -> int:
    count = 0
    for chunks in corpus:
        decoder, parser = new_decoder(), new_parser()
        for chunk in chunks:
            for frame in decoder.feed(chunk):
                count += len(parser.feed(frame))
    return count


def adapter_costs(repeat: int, copies: int) -> dict[str, dict[str, float]]:
    """Each adapter's parse path over its fixtures, 1 KiB chunks: MB/s and µs per event."""
    paths: dict[str, tuple[Callable[[], Any], Callable[[], Any], str]] = {
        "anthropic": (SSEDecoder, AnthropicStreamParser, "*.sse"),
        "openai_chat": (SSEDecoder, OpenAIChatStreamParser, "*.sse"),
        "ollama": (NDJSONDecoder, OllamaStreamParser, "*.ndjson"),
    }
    out: dict[str, dict[str, float]] = {}
    for name, (new_decoder, new_parser, pattern) in paths.items():
        corpus = [chunked(p.read_bytes(), 1024) for p in sorted((FIXTURES / name).glob(pattern))]
        corpus *= copies

        events = _parse_all(corpus, new_decoder, new_parser)
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            _parse_all(corpus, new_decoder, new_parser)
            best = min(best, time.perf_counter() - start)
        size = sum(len(c) for chunks in corpus for c in chunks)
        out[name] = {
            "mb_per_s": round(size / best / 1e6, 1),
            "us_per_event": round(best / events * 1e6, 2),
            "events": events,
        }
    return out


def _repeat_corpus(bodies: dict[str, bytes], size: int) -> Iterator[list[bytes]]:
    for body in bodies.values():
        yield chunked(body, size)


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="passes per measurement")
    parser.add_argument("--copies", type=int, default=20, help="copies of the corpus per pass")
    parser.add_argument("--quick", action="store_true", help="a smoke run (1 pass, 1 copy)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat, args.copies = 1, 1
    bodies = fixture_bodies()
    results: dict[str, dict[str, dict[str, float]]] = {"parser": {}, "response": {}}
    for size in CHUNK_SIZES:
        corpus = list(_repeat_corpus(bodies, size)) * args.copies
        key = f"chunk_{size}"
        results["parser"][key] = {
            "agentloop": round(throughput(ours, corpus, args.repeat), 1),
            "httpx_sse": round(throughput(theirs, corpus, args.repeat), 1),
        }
        results["response"][key] = {
            "agentloop": round(throughput(ours_response, corpus, args.repeat), 1),
            "httpx_sse": round(throughput(theirs_response, corpus, args.repeat), 1),
        }
    for path in results.values():
        for row in path.values():
            row["ratio"] = round(row["agentloop"] / row["httpx_sse"], 2)
    report: dict[str, object] = {
        "unit": "MB/s (best of repeats)",
        "fixtures": len(bodies),
        "corpus_bytes": sum(len(b) for b in bodies.values()) * args.copies,
        "python": platform.python_version(),
        "httpx_sse": getattr(httpx_sse, "__version__", "?"),
        "results": results,
        "disagreements": disagreements(bodies),
        "adapters": adapter_costs(args.repeat, args.copies),
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return report


if __name__ == "__main__":
    main()
