"""Test helpers for the Providers II adapters: fixture loading, MockTransport clients, replay.

The loopback server is the shared one in ``_loopback`` (re-exported here for convenience).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import httpx

from agentloop import (
    Agent,
    AgentResult,
    AgentTool,
    AssistantMessage,
    ModelSpec,
    StreamOptions,
    UserMessage,
)
from agentloop.stream import Accumulator, AssistantMessageEvent, LlmContext, StreamFn

from ._fixtures import wrap_chunks
from ._loopback import LoopbackServer, RecordedRequest, Reply, serve
from ._util import collect, opened

__all__ = [
    "FIXTURES",
    "agent_run",
    "LoopbackServer",
    "RecordedRequest",
    "Reply",
    "context",
    "fixture_bytes",
    "mock_client",
    "replay",
    "replay_via",
    "serve",
    "split_responses",
]

FIXTURES = Path(__file__).parent.parent / "fixtures"


def fixture_bytes(name: str) -> bytes:
    """A recorded body; a ``.chunks.jsonl`` file becomes an SSE body (named events when its
    payloads carry a ``type``, as the Responses API's do)."""
    data = (FIXTURES / name).read_bytes()
    if name.endswith(".chunks.jsonl"):
        first = json.loads(data.splitlines()[0])
        return wrap_chunks(data, event_names=isinstance(first, dict) and "type" in first)
    return data


def mock_client(
    replies: Sequence[Reply], seen: list[httpx.Request] | None = None
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose transport answers with the scripted replies in order."""
    script = list(replies)

    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            request.read()
            seen.append(request)
        reply = script.pop(0)
        headers = {"content-type": reply.content_type, **reply.headers}
        return httpx.Response(reply.status, headers=headers, stream=httpx.ByteStream(reply.body))

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def context(text: str = "hi") -> LlmContext:
    return LlmContext(system_prompt="Be brief.", messages=[UserMessage.from_text(text)])


async def replay(
    provider: StreamFn,
    model: ModelSpec,
    ctx: LlmContext | None = None,
    options: StreamOptions | None = None,
) -> tuple[AssistantMessage, list[AssistantMessageEvent]]:
    """Run one call and fold its events; the events are returned too."""
    opts = options or StreamOptions(api_key="test-key")
    events, message = await collect(provider, model, ctx or context(), opts)
    return message, events


ProviderFactory = Callable[..., StreamFn]


async def replay_via(
    transport: str,
    make: ProviderFactory,
    model: ModelSpec,
    reply: Reply,
    *,
    ctx: LlmContext | None = None,
    options: StreamOptions | None = None,
) -> tuple[AssistantMessage, list[AssistantMessageEvent], list[RecordedRequest]]:
    """Replay one scripted reply through ``make(...)``, by MockTransport or over loopback.

    ``make`` receives ``client=`` (MockTransport) or ``base_url=`` (the loopback server) and
    returns the provider. The requests the provider sent are returned in the loopback form.
    """
    if transport == "mock":
        seen: list[httpx.Request] = []
        async with mock_client([reply], seen) as client:
            message, events = await replay(make(client=client), model, ctx, options)
        recorded = [
            RecordedRequest(
                method=r.method,
                path=r.url.raw_path.decode("ascii"),
                headers={k.lower(): v for k, v in r.headers.items()},
                body=r.content,
            )
            for r in seen
        ]
        return message, events, recorded
    assert transport == "loopback"
    gate = _gate(reply)
    if gate is not None:
        reply = dataclasses.replace(reply, gate_at=gate)
    async with serve([reply]) as server:
        provider = make(base_url=server.base_url)
        acc = Accumulator(model)
        got: list[AssistantMessageEvent] = []
        opts = options or StreamOptions(api_key="test-key")
        try:
            # A buffering adapter would wait for the held half of the body: fail, not hang.
            with anyio.fail_after(30):
                async with opened(provider, model, ctx or context(), opts) as stream:
                    async for event in stream:
                        if not got and gate is not None:
                            # The first event is here while the server holds half the body.
                            assert server.sent <= gate < len(reply.body)
                            assert not server.gate.is_set()
                            server.gate.set()
                        got.append(event)
                        acc.push(event)
        finally:
            aclose = getattr(provider, "aclose", None)
            if aclose is not None:
                await aclose()
    return acc.finish(), got, server.requests


def _gate(reply: Reply) -> int | None:
    """Half way through the body, but after the first whole frame (``None``: no such point)."""
    body = reply.body
    if reply.status != 200 or len(body) < 16:
        return None
    if reply.content_type == "application/vnd.amazon.eventstream":
        first = int.from_bytes(body[:4], "big")
    else:
        ends = [i + len(sep) for sep in (b"\n\n", b"\r\n\r\n") if (i := body.find(sep)) >= 0]
        if not ends:
            return None
        first = min(ends)
    gate = max(len(body) // 2, first)
    return gate if gate < len(body) else None


def split_responses(data: bytes) -> list[bytes]:
    """Split a chunks file holding several Responses API streams into one SSE body each."""
    bodies: list[list[bytes]] = []
    for line in data.splitlines():
        if not line.strip():
            continue
        if json.loads(line)["type"] == "response.created":
            bodies.append([])
        bodies[-1].append(line)
    return [wrap_chunks(b"\n".join(lines), event_names=True) for lines in bodies]


async def agent_run(
    make: ProviderFactory,
    model: ModelSpec,
    replies: list[Reply],
    tools: Sequence[AgentTool],
    prompt: str = "Go.",
    *,
    options: StreamOptions | None = None,
) -> tuple[AgentResult, list[RecordedRequest]]:
    """A full ``Agent`` run against the loopback server, which plays ``replies`` in order."""
    async with serve(replies) as server:
        provider = make(base_url=server.base_url)
        try:
            agent = Agent(
                model=model,
                stream_fn=provider,
                tools=tools,
                system_prompt="Be brief.",
                stream_options=options or StreamOptions(api_key="test-key"),
            )
            result = await agent.prompt(prompt)
        finally:
            aclose = getattr(provider, "aclose", None)
            if aclose is not None:
                await aclose()
    assert result.messages == agent.messages[-len(result.messages) :]
    return result, server.requests
