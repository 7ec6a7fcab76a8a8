"""Reading HTTP/1.1 requests, for the fake model APIs the tests serve on 127.0.0.1."""

from __future__ import annotations

from typing import NamedTuple

import anyio
import anyio.abc


class Request(NamedTuple):
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes


class RequestReader:
    """The requests of one connection, one after another (keep-alive)."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self._stream = stream
        self._buffered = b""

    async def next(self) -> Request | None:
        """The next request, or ``None`` once the client has closed the connection."""
        buffered = self._buffered
        while b"\r\n\r\n" not in buffered:
            try:
                chunk = await self._stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return None
            buffered += chunk
        head, _, buffered = buffered.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(buffered) < length:
            buffered += await self._stream.receive()
        self._buffered = buffered[length:]
        return Request(lines[0].split(" ")[1], headers, buffered[:length])
