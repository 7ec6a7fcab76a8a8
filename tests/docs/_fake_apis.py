"""Fake provider APIs on 127.0.0.1 for the documentation's examples.

One HTTP/1.1 server, in a thread of its own (the examples run their own event loops), answers
Anthropic's Messages API and OpenAI's Chat Completions API with a short streamed text answer,
in those APIs' real wire formats. ``environment()`` gives the variables that point each
provider there.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import anyio.from_thread

from tests._http import RequestReader

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["ANSWER", "FakeApis", "anthropic_body", "openai_body", "running_fake_apis"]

ANSWER = "Hello from the fake API."


def _sse(events: list[tuple[str | None, dict[str, object] | str]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


def anthropic_body() -> bytes:
    return _sse(
        [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_fake",
                        "type": "message",
                        "role": "assistant",
                        "model": "fake",
                        "content": [],
                        "stop_reason": None,
                        "usage": {"input_tokens": 12, "output_tokens": 1},
                    },
                },
            ),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": ANSWER},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 6},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def openai_body() -> bytes:
    chunk = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": "fake"}
    return _sse(
        [
            (
                None,
                {
                    **chunk,
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER}}],
                },
            ),
            (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            (
                None,
                {
                    **chunk,
                    "choices": [],
                    "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18},
                },
            ),
            (None, "[DONE]"),
        ]
    )


class FakeApis:
    """The fake APIs; with ``keep_alive`` a connection serves any number of requests (as the
    real APIs' do), otherwise each is closed after its answer."""

    def __init__(self, *, keep_alive: bool = False) -> None:
        self.keep_alive = keep_alive
        self.port = 0
        self.requests: list[str] = []
        self.connections = 0

    def environment(self) -> dict[str, str]:
        base = f"http://127.0.0.1:{self.port}"
        return {
            "ANTHROPIC_API_KEY": "sk-ant-docs-example",
            "ANTHROPIC_BASE_URL": base,
            "OPENAI_API_KEY": "sk-docs-example",
            "OPENAI_BASE_URL": f"{base}/v1",
            # The local servers' presets speak Chat Completions too.
            **{
                f"{name}_BASE_URL": f"{base}/v1"
                for name in ("LLAMACPP", "LLAMACPP_PYTHON", "VLLM", "LMSTUDIO", "OLLAMA_OPENAI")
            },
        }

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        self.connections += 1
        async with stream:
            reader = RequestReader(stream)
            while True:
                request = await reader.next()
                if request is None:
                    return
                path = request.path
                self.requests.append(path)
                if path.endswith("/v1/messages"):
                    body, status = anthropic_body(), 200
                elif path.endswith("/chat/completions"):
                    body, status = openai_body(), 200
                else:
                    body, status = b'{"error": {"message": "unknown endpoint"}}', 404
                kind = "text/event-stream" if status == 200 else "application/json"
                close = "" if self.keep_alive else "connection: close\r\n"
                await stream.send(
                    f"HTTP/1.1 {status} OK\r\ncontent-type: {kind}\r\n"
                    f"content-length: {len(body)}\r\n{close}\r\n".encode()
                    + body
                )
                if not self.keep_alive:
                    return

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener:
            task_status.started()
            await listener.serve(self.handle)


@contextmanager
def running_fake_apis(apis: FakeApis | None = None) -> Iterator[FakeApis]:
    """``apis`` (a new ``FakeApis`` by default) serving on 127.0.0.1 in a thread of its own."""
    apis = apis or FakeApis()
    with anyio.from_thread.start_blocking_portal() as portal:
        future, _ = portal.start_task(apis.serve)
        try:
            yield apis
        finally:
            future.cancel()
