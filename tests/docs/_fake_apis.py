"""Fake provider APIs on 127.0.0.1 for the documentation's examples.

One HTTP/1.1 server, in a thread of its own (the examples run their own event loops), answers
every wire protocol the providers speak with a short streamed text answer, in that protocol's
real format: Anthropic's Messages API, OpenAI's Chat Completions (which OpenAI, Azure, Mistral,
xAI, the gateways and the local servers' presets speak) and Responses APIs, Gemini's
``streamGenerateContent``, Ollama's ``/api/chat`` and Bedrock's ConverseStream.
``environment()`` gives the variables that point each provider there.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import anyio.from_thread

from agentloop_providers._eventstream import encode_message
from tests._http import RequestReader

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "ANSWER",
    "FakeApis",
    "anthropic_body",
    "bedrock_body",
    "gemini_body",
    "ollama_body",
    "openai_body",
    "responses_body",
    "running_fake_apis",
]

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


def responses_body() -> bytes:
    response: dict[str, object] = {"id": "resp_fake", "model": "fake", "output": []}
    message: dict[str, object] = {"type": "message", "id": "msg_fake", "role": "assistant"}
    done = {**message, "status": "completed"}
    done["content"] = [{"type": "output_text", "text": ANSWER, "annotations": []}]
    part = {"item_id": "msg_fake", "output_index": 0, "content_index": 0}
    usage = {"input_tokens": 12, "output_tokens": 6, "total_tokens": 18}
    return _sse(
        [
            (
                "response.created",
                {"type": "response.created", "response": {**response, "status": "in_progress"}},
            ),
            (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**message, "content": []},
                },
            ),
            (
                "response.output_text.delta",
                {"type": "response.output_text.delta", **part, "delta": ANSWER},
            ),
            ("response.output_text.done", {"type": "response.output_text.done", **part}),
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": done},
            ),
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {**response, "status": "completed", "usage": usage},
                },
            ),
        ]
    )


def gemini_body() -> bytes:
    answer: dict[str, object] = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": ANSWER}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 6, "totalTokenCount": 18},
        "modelVersion": "fake",
    }
    return _sse([(None, answer)])


def ollama_body() -> bytes:
    lines = [
        {"model": "fake", "message": {"role": "assistant", "content": ANSWER}, "done": False},
        {
            "model": "fake",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 12,
            "eval_count": 6,
        },
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def bedrock_body() -> bytes:
    events: list[tuple[str, dict[str, object]]] = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": ANSWER}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "end_turn"}),
        (
            "metadata",
            {
                "usage": {"inputTokens": 12, "outputTokens": 6, "totalTokens": 18},
                "metrics": {"latencyMs": 1},
            },
        ),
    ]
    return b"".join(
        encode_message(
            {":event-type": name, ":content-type": "application/json", ":message-type": "event"},
            json.dumps(payload).encode(),
        )
        for name, payload in events
    )


# What each endpoint answers: the end of the request's path (without its query), the body and
# its content type.
_ENDPOINTS = [
    ("/v1/messages", anthropic_body, "text/event-stream"),
    ("/chat/completions", openai_body, "text/event-stream"),
    ("/responses", responses_body, "text/event-stream"),
    (":streamGenerateContent", gemini_body, "text/event-stream"),
    ("/api/chat", ollama_body, "application/x-ndjson"),
    ("/converse-stream", bedrock_body, "application/vnd.amazon.eventstream"),
]


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
            "OPENAI_RESPONSES_BASE_URL": f"{base}/v1",
            "GEMINI_API_KEY": "gemini-docs-example",
            "GEMINI_BASE_URL": f"{base}/v1beta",
            "AZURE_OPENAI_API_KEY": "azure-docs-example",
            "AZURE_OPENAI_ENDPOINT": base,
            "AWS_BEARER_TOKEN_BEDROCK": "bedrock-docs-example",
            "BEDROCK_BASE_URL": base,
            "OLLAMA_BASE_URL": base,
            # Hosted Chat Completions APIs, and the local servers' presets, which speak it too.
            **{
                f"{name}_API_KEY": f"{name.lower()}-docs-example"
                for name in ("MISTRAL", "XAI", "GROQ", "DEEPSEEK", "OPENROUTER")
            },
            **{
                f"{name}_BASE_URL": f"{base}/v1"
                for name in (
                    "MISTRAL",
                    "XAI",
                    "GROQ",
                    "DEEPSEEK",
                    "OPENROUTER",
                    "LLAMACPP",
                    "LLAMACPP_PYTHON",
                    "VLLM",
                    "LMSTUDIO",
                    "OLLAMA_OPENAI",
                )
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
                bare = path.partition("?")[0]
                found = [(b, k) for end, b, k in _ENDPOINTS if bare.endswith(end)]
                if found:
                    make, kind = found[0]
                    body, status = make(), 200
                else:
                    body, status = b'{"error": {"message": "unknown endpoint"}}', 404
                    kind = "application/json"
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
