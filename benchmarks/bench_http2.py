"""HTTP/2 against HTTP/1.1, over TLS on loopback: is ``HttpProvider(http2=True)`` worth it?

Needs what the project does not depend on: hypercorn (the server, in its own process) and
openssl (a throwaway certificate), besides ``h2`` (the ``[http2]`` extra):

    pip install hypercorn h2 && python -m benchmarks.bench_http2

Two figures per protocol, interleaved: one answer of ``--deltas`` deltas read by the OpenAI
chat adapter on a warm connection (deltas per second, time to the first delta), and ten
answers started at once on a new client (time to the median first delta: HTTP/1.1 opens ten
connections, each with its TLS handshake; HTTP/2 one).
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

import agentloop as al
from agentloop.stream import LlmContext, TextDelta
from agentloop_providers.openai_chat import OpenAIChatProvider

from ._common import base_parser, emit_json

__all__ = ["main"]

_APP = """
N = int(__import__("os").environ["BENCH_DELTAS"])
BODY = ("".join('data: {"choices":[{"index":0,"delta":{"content":"tok%d "},"finish_reason":null}]}\\n\\n' % i
                for i in range(N))
        + 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
          '"usage":{"prompt_tokens":5,"completion_tokens":1}}\\n\\ndata: [DONE]\\n\\n').encode()
CHUNKS = [BODY[i:i + 16384] for i in range(0, len(BODY), 16384)]

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})
    for chunk in CHUNKS:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
"""
MODEL = al.ModelSpec(provider="bench", model_id="m")
CONTEXT = LlmContext(messages=[al.UserMessage.from_text("go")])
OPTIONS = al.StreamOptions(api_key="sk-bench")


async def _answer(provider: OpenAIChatProvider) -> tuple[float, float]:
    started = time.perf_counter()
    first = 0.0
    deltas = 0
    async for event in provider(MODEL, CONTEXT, OPTIONS):
        if isinstance(event, TextDelta):
            deltas += 1
            if deltas == 1:
                first = time.perf_counter() - started
    return deltas / (time.perf_counter() - started), first * 1000


async def _ten_at_once(base: str, http2: bool) -> float:
    async with httpx.AsyncClient(http2=http2, verify=False, timeout=60) as client:
        provider = OpenAIChatProvider(base_url=base, api_key="k", client=client)
        firsts: list[float] = []

        async def one() -> None:
            firsts.append((await _answer(provider))[1])

        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(one)
    return statistics.median(firsts)


async def _measure(base: str, repeat: int) -> dict[str, Any]:
    rows: dict[str, dict[str, list[float]]] = {"http1": {}, "http2": {}}
    clients = {v: httpx.AsyncClient(http2=v == "http2", verify=False, timeout=60) for v in rows}
    providers = {
        v: OpenAIChatProvider(base_url=base, api_key="k", client=c) for v, c in clients.items()
    }
    for _ in range(repeat):
        for version, provider in providers.items():
            rate, first = await _answer(provider)
            rows[version].setdefault("deltas_per_s", []).append(rate)
            rows[version].setdefault("first_delta_ms", []).append(first)
            at_once = await _ten_at_once(base, version == "http2")
            rows[version].setdefault("ten_at_once_first_delta_ms", []).append(at_once)
    response = await clients["http2"].post(f"{base}/chat/completions", content=b"{}")
    for client in clients.values():
        await client.aclose()
    return {
        "negotiated": response.http_version,
        **{v: {k: statistics.median(x) for k, x in r.items()} for v, r in rows.items()},
    }


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--deltas", type=int, default=10_000)
    args = parser.parse_args()
    if (
        shutil.which("hypercorn") is None
        and not Path(sys.executable).with_name("hypercorn").exists()
    ):
        emit_json({"skipped": "needs hypercorn and h2: pip install hypercorn h2"})
        return
    hypercorn = str(Path(sys.executable).with_name("hypercorn"))
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
             f"{work}/key.pem", "-out", f"{work}/cert.pem", "-days", "1", "-subj",
             "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
            check=True, capture_output=True,
        )  # fmt: skip
        Path(work, "bench_app.py").write_text(_APP)
        port = _free_port()
        server = subprocess.Popen(
            [hypercorn, "--certfile", f"{work}/cert.pem", "--keyfile", f"{work}/key.pem",
             "-b", f"127.0.0.1:{port}", "bench_app:app"],
            cwd=work, env={**os.environ, "BENCH_DELTAS": str(args.deltas)},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,  # hypercorn's worker is a process of its own: stop both
        )  # fmt: skip
        try:
            base = f"https://127.0.0.1:{port}/v1"
            _wait_up(base)
            result = anyio.run(_measure, base, 2 if args.smoke else args.repeat)
        finally:
            os.killpg(server.pid, signal.SIGKILL)  # the server and the worker it spawned
            server.wait()
    emit_json({"benchmark": "bench_http2", "deltas": args.deltas, **result})


def _free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_up(base: str) -> None:
    for _ in range(200):
        try:
            httpx.post(f"{base}/chat/completions", verify=False, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)  # the server process is starting
    raise RuntimeError("hypercorn did not start")


if __name__ == "__main__":
    main()
