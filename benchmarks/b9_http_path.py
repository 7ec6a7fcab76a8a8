"""B9 the real HTTP path: a provider adapter reading a streamed answer over loopback HTTP.

A server in its own process (so that its work does not share this process's interpreter)
answers every POST with a server-sent-event stream of ``--deltas`` text deltas in the OpenAI
chat or the Anthropic shape, over HTTP/1.1 keep-alive. Against it, in this process:

* ``floor``: raw httpx reading the same response (``client.stream(...).aiter_lines()``) and
  decoding each ``data:`` line's JSON with msgspec: the least any client must do;
* ``adapter``: the provider (``OpenAIChatProvider`` / ``AnthropicProvider``), its events
  consumed as an application would (``async for event in provider(...)`` and an ``isinstance``
  check per event).

Each figure: deltas per second over the whole answer, and the time to the first delta, medians
of ``--repeat`` interleaved rounds; the ratios (adapter / floor) are the targets (≥ 0.7 for
throughput, ≤ 1.2 for time to first delta). Then the connections: how many TCP connections the
server saw for ten turns through one agent, for ten agents sharing one provider (at once: the
pool opens as many connections as requests run together), and for ten agents each made from
the same model string (one provider, so one pool, each).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from typing import Any

import anyio
import httpx
import msgspec

import agentloop as al
from agentloop.stream import LlmContext, TextDelta
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.openai_chat import OpenAIChatProvider

from ._common import base_parser, emit_json, summary

__all__ = ["main"]

_SERVER = r"""
import asyncio, json, sys
DELTAS = int(sys.argv[1])

def openai_body():
    parts = []
    for i in range(DELTAS):
        parts.append('data: {"id":"c","object":"chat.completion.chunk","model":"m",'
                     '"choices":[{"index":0,"delta":{"content":"tok%d "},"finish_reason":null}]}\n\n' % i)
    parts.append('data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":'
                 '[{"index":0,"delta":{},"finish_reason":"stop"}],'
                 '"usage":{"prompt_tokens":5,"completion_tokens":%d,"total_tokens":%d}}\n\n' % (DELTAS, DELTAS + 5))
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()

def anthropic_body():
    parts = ['event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
             '"role":"assistant","model":"m","content":[],"stop_reason":null,'
             '"usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
             'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
             '"content_block":{"type":"text","text":""}}\n\n']
    for i in range(DELTAS):
        parts.append('event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                     '"delta":{"type":"text_delta","text":"tok%d "}}\n\n' % i)
    parts.append('event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n')
    parts.append('event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
                 '"usage":{"output_tokens":%d}}\n\n' % DELTAS)
    parts.append('event: message_stop\ndata: {"type":"message_stop"}\n\n')
    return "".join(parts).encode()

BODIES = {"/v1/chat/completions": openai_body(), "/v1/messages": anthropic_body()}
connections = 0

async def handle(reader, writer):
    global connections
    connections += 1
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            if length:
                await reader.readexactly(length)
            if path == "/stats":
                body = json.dumps({"connections": connections}).encode()
                ctype = "application/json"
            else:
                body = BODIES[path.split("?")[0]]
                ctype = "text/event-stream"
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n"
                         % (ctype.encode(), len(body)) + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
"""

SHAPES = {
    "openai": ("/v1/chat/completions", OpenAIChatProvider),
    "anthropic": ("/v1/messages", AnthropicProvider),
}
MODEL = al.ModelSpec(provider="bench", model_id="m")
CONTEXT = LlmContext(messages=[al.UserMessage.from_text("go")])
OPTIONS = al.StreamOptions(api_key="sk-bench")


async def _floor(client: httpx.AsyncClient, url: str) -> tuple[int, float, float]:
    decode = msgspec.json.decode
    started = time.perf_counter()
    first = 0.0
    deltas = 0
    async with client.stream("POST", url, content=b'{"stream":true}') as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                decode(line[6:])
                deltas += 1
                if deltas == 1:
                    first = time.perf_counter() - started
    return deltas, first, time.perf_counter() - started


async def _adapter(provider: Any) -> tuple[int, float, float]:
    started = time.perf_counter()
    first = 0.0
    deltas = 0
    async for event in provider(MODEL, CONTEXT, OPTIONS):
        if isinstance(event, TextDelta):
            deltas += 1
            if deltas == 1:
                first = time.perf_counter() - started
    return deltas, first, time.perf_counter() - started


async def _connections(base: str, client: httpx.AsyncClient) -> int:
    response = await client.get(f"{base}/stats")
    count: int = response.json()["connections"]
    return count


async def _reuse(base: str) -> dict[str, int]:
    """TCP connections for ten turns of one agent, for ten agents sharing one provider, and
    for ten agents each made from the same model string (each its own provider and pool)."""
    async with httpx.AsyncClient() as stats:
        before = await _connections(base, stats)
        provider = OpenAIChatProvider(base_url=f"{base}/v1", api_key="sk-bench")
        agent = al.Agent(model=MODEL, stream_fn=provider)
        for _ in range(10):
            await agent.prompt("go")
        one_agent = await _connections(base, stats) - before
        before = await _connections(base, stats)
        shared = [al.Agent(model=MODEL, stream_fn=provider) for _ in range(10)]
        async with anyio.create_task_group() as tg:
            for agent in shared:
                tg.start_soon(agent.prompt, "go")
        await provider.aclose()
        ten_shared = await _connections(base, stats) - before
        before = await _connections(base, stats)
        os.environ["OPENAI_BASE_URL"] = f"{base}/v1"
        os.environ["OPENAI_API_KEY"] = "sk-bench"
        agents = [al.Agent(model="openai:gpt-4.1") for _ in range(10)]
        for agent in agents:
            await agent.prompt("go")
        for agent in agents:
            aclose = getattr(agent.stream_fn, "aclose", None)
            if aclose is not None:
                await aclose()
        ten_agents = await _connections(base, stats) - before
    return {
        "one_agent_ten_turns": one_agent,
        "ten_agents_one_provider_at_once": ten_shared,
        "ten_agents_ten_model_strings": ten_agents,
    }


async def _measure(base: str, repeat: int, warmup: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for shape, (path, cls) in SHAPES.items():
        samples: dict[str, list[tuple[int, float, float]]] = {"floor": [], "adapter": []}
        async with httpx.AsyncClient(timeout=60) as client:
            provider = cls(base_url=base + ("/v1" if shape == "openai" else ""), api_key="k")
            async with provider:
                for round_ in range(warmup + repeat):
                    floor = await _floor(client, base + path)
                    adapter = await _adapter(provider)
                    if round_ >= warmup:
                        samples["floor"].append(floor)
                        samples["adapter"].append(adapter)
        row: dict[str, Any] = {}
        for impl, runs in samples.items():
            row[impl] = {
                "deltas": runs[0][0],
                "deltas_per_s": summary([n / total for n, _, total in runs]),
                "first_delta_ms": summary([first * 1000 for _, first, _ in runs]),
            }
        floor_rate = row["floor"]["deltas_per_s"]["median"]
        adapter_rate = row["adapter"]["deltas_per_s"]["median"]
        row["throughput_ratio"] = adapter_rate / floor_rate
        row["first_delta_ratio"] = statistics.median(
            a[1] / f[1] for a, f in zip(samples["adapter"], samples["floor"], strict=True)
        )
        row["targets"] = {
            "throughput": row["throughput_ratio"] >= 0.7,
            "first_delta": row["first_delta_ratio"] <= 1.2,
        }
        out[shape] = row
    out["connections"] = await _reuse(base)
    return out


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--deltas", type=int, default=10_000)
    args = parser.parse_args()
    deltas, repeat, warmup = (200, 2, 0) if args.smoke else (args.deltas, args.repeat, args.warmup)
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(deltas)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        base = f"http://127.0.0.1:{port}"
        result = anyio.run(_measure, base, repeat, warmup, backend=args.backend)
    finally:
        server.kill()
        server.wait()
    emit_json({"benchmark": "b9_http_path", "backend": args.backend, "deltas": deltas, **result})


if __name__ == "__main__":
    main()
