"""An OpenAI-compatible Chat Completions server on 127.0.0.1 that plays scripted answers.

Each request to ``/v1/chat/completions`` gets the next scripted answer, streamed in the API's
real wire format (server-sent events of ``chat.completion.chunk``): text, tool calls (their
arguments cut in pieces, as real servers send them), ``finish_reason`` and usage. The request
bodies are kept for the test to inspect. It runs in a thread with its own event loop, so a
test can point a subprocess at it.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.from_thread

from tests._http import RequestReader

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["FakeOpenAI", "running_fake_openai"]


def _chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> str:
    body: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": "m"}
    body["choices"] = (
        [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    )
    body.update(extra)
    return f"data: {json.dumps(body)}\n\n"


def _stream(answer: dict[str, Any]) -> bytes:
    out = [_chunk({"role": "assistant", "content": ""})]
    text = answer.get("text")
    if text:
        out.extend(_chunk({"content": text[i : i + 5]}) for i in range(0, len(text), 5))
    calls = answer.get("tool_calls", [])
    for index, (name, arguments) in enumerate(calls):
        raw = json.dumps(arguments)
        head = {"index": index, "id": f"call_{index}", "type": "function"}
        out.append(_chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]}))
        for i in range(0, len(raw), 7):
            piece = {"index": index, "function": {"arguments": raw[i : i + 7]}}
            out.append(_chunk({"tool_calls": [piece]}))
    out.append(_chunk({}, "tool_calls" if calls else "stop"))
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    out.append(_chunk(None, usage=usage))
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


class FakeOpenAI:
    """The server's state: the answers still to play and the requests received."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []
        self.authorization: list[str] = []
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            request = await RequestReader(stream).next()
            if request is None:
                return
            path, body = request.path, request.body
            if "authorization" in request.headers:
                self.authorization.append(request.headers["authorization"])
            if path.endswith("/chat/completions") and self.answers:
                self.requests.append(json.loads(body))
                payload, status, kind = _stream(self.answers.pop(0)), 200, "text/event-stream"
            else:
                payload = b'{"error": {"message": "no answer scripted"}}'
                status, kind = 400, "application/json"
            response = (
                f"HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\n"
                f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n"
            ).encode() + payload
            await stream.send(response)

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener:
            task_status.started()
            await listener.serve(self.handle)


@contextmanager
def running_fake_openai(answers: list[dict[str, Any]]) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(answers)
    with anyio.from_thread.start_blocking_portal() as portal:
        future, _ = portal.start_task(server.serve)
        try:
            yield server
        finally:
            future.cancel()
