"""A scripted HTTP/1.1 server on 127.0.0.1 for provider tests, on anyio (asyncio and trio).

Each connection takes the next ``Reply`` of the script, records the request, and answers it:
the body goes out in small chunks (chunked transfer encoding) with pauses, optionally held at a
``gate`` until the test says go, and optionally ended by a fault: a cut (the connection closes
before the body is complete), a reset (RST), or a stall (nothing more is sent until the client
gives up). ``disconnected`` is set when a client goes away before its reply was complete.
"""

from __future__ import annotations

import socket
import struct
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import anyio
import anyio.abc
from anyio.abc import SocketAttribute

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

__all__ = ["LoopbackServer", "RecordedRequest", "Reply", "serve"]


@dataclass
class Reply:
    """One scripted response."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream"
    chunk_size: int = 48
    pause: float = 0.001
    gate_at: int | None = None  # hold after this many body bytes until ``server.gate`` is set
    fault: Literal["cut", "reset", "stall"] | None = None
    fault_at: int | None = None  # body bytes sent before the fault (default: all of them)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class LoopbackServer:
    """Answers each connection with the next reply, or with ``choose(request)`` when given."""

    def __init__(
        self, replies: list[Reply], choose: Callable[[RecordedRequest], Reply] | None = None
    ) -> None:
        self.replies = list(replies)
        self.choose = choose
        self.requests: list[RecordedRequest] = []
        self.gate = anyio.Event()
        self.disconnected = anyio.Event()  # set (again) at each client that went away early
        self.disconnects = 0
        self.sent = 0  # body bytes of the current reply sent so far
        self.completed = 0  # replies sent in full
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            request = await _read_request(stream)
            if request is None:
                return
            self.requests.append(request)
            if self.choose is not None:
                self.replies.insert(0, self.choose(request))
            if not self.replies:
                await _send_plain(stream, 500, b'{"error":{"message":"no scripted reply"}}')
                return
            reply = self.replies.pop(0)
            try:
                await self._answer(stream, reply)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self._gone()

    async def _answer(self, stream: anyio.abc.SocketStream, reply: Reply) -> None:
        if reply.status >= 400 and reply.fault is None and reply.gate_at is None:
            await _send_plain(stream, reply.status, reply.body, reply.headers, reply.content_type)
            self.completed += 1
            return
        head = [f"HTTP/1.1 {reply.status} X", f"content-type: {reply.content_type}"]
        head += ["transfer-encoding: chunked", "connection: close"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        await stream.send(("\r\n".join(head) + "\r\n\r\n").encode())
        body = reply.body
        stop = len(body) if reply.fault_at is None else reply.fault_at
        # Each connection counts its own bytes (connections may overlap); ``self.sent`` shows
        # the latest one's progress.
        sent = self.sent = 0
        while sent < stop:
            if reply.gate_at is not None and sent >= reply.gate_at and not self.gate.is_set():
                if await self._hold(stream):
                    return
            end = min(stop, sent + reply.chunk_size)
            if reply.gate_at is not None and sent < reply.gate_at < end:
                end = reply.gate_at
            piece = body[sent:end]
            await stream.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            sent = self.sent = end
            if reply.pause:
                await anyio.sleep(reply.pause)
        if reply.fault == "cut":
            return  # closing without the last chunk: the body is incomplete
        if reply.fault == "reset":
            sock = stream.extra(SocketAttribute.raw_socket)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if reply.fault == "stall":
            await _until_closed(stream)
            self._gone()
            return
        await stream.send(b"0\r\n\r\n")
        self.completed += 1
        await _until_closed(stream)

    def _gone(self) -> None:
        self.disconnects += 1
        self.disconnected.set()

    async def _hold(self, stream: anyio.abc.SocketStream) -> bool:
        """Wait for the gate; true if the client went away first."""
        gone = False
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                nonlocal gone
                await _until_closed(stream)
                gone = True
                self._gone()
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            await self.gate.wait()
            tg.cancel_scope.cancel()
        return gone


async def _until_closed(stream: anyio.abc.SocketStream) -> None:
    try:
        while True:
            await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return


async def _read_request(stream: anyio.abc.SocketStream) -> RecordedRequest | None:
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            data += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        body += await stream.receive()
    return RecordedRequest(method=method, path=path, headers=headers, body=body)


async def _send_plain(
    stream: anyio.abc.SocketStream,
    status: int,
    body: bytes,
    headers: dict[str, str] | None = None,
    content_type: str = "application/json",
) -> None:
    head = [f"HTTP/1.1 {status} X", f"content-type: {content_type}"]
    head += [f"content-length: {len(body)}", "connection: close"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    await stream.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)


@asynccontextmanager
async def serve(
    replies: list[Reply], choose: Callable[[RecordedRequest], Reply] | None = None
) -> AsyncIterator[LoopbackServer]:
    """Run a ``LoopbackServer`` for ``replies`` inside the caller's task structure."""
    server = LoopbackServer(replies, choose)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    server.port = listener.extra(SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server.handle)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()
