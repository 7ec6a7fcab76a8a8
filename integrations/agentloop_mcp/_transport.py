"""The MCP SDK transports for a spec, with the end of the server's message stream watched.

``stdio_client`` (a subprocess; the SDK closes its stdin, waits, then kills its process group,
shielded and bounded, whatever cancels it) and ``streamable_http_client`` (over an
``httpx2.AsyncClient`` made here for each connection, since a client is bound to its event
loop) are used as they are. What is added is a watch on the stream of messages from the
server: when it ends, the server's process has exited (or its HTTP stream broke), and the
toolset learns it at once instead of at the next call.
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Self

import anyio
import httpx2
from mcp import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from ._config import HttpServer, ServerSpec, child_environment

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

__all__ = ["open_transport"]


class _WatchedStream:
    """A read stream that calls ``on_end`` once when the server's messages end."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        # The SDK's dispatcher reads this from context-carrying streams (streamable HTTP).
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class _Transport:
    """An MCP ``Transport`` (an async context manager yielding the read and write streams)."""

    def __init__(self, spec: ServerSpec, on_end: Callable[[], None]) -> None:
        self._spec = spec
        self._on_end = on_end
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> tuple[Any, Any]:
        spec = self._spec
        async with AsyncExitStack() as stack:
            if isinstance(spec, HttpServer):
                client = httpx2.AsyncClient(
                    headers=dict(spec.headers),
                    auth=spec.auth,
                    timeout=httpx2.Timeout(spec.timeout, read=spec.read_timeout),
                )
                await stack.enter_async_context(client)
                transport: Any = streamable_http_client(spec.url, http_client=client)
            else:
                params = StdioServerParameters(
                    command=spec.command,
                    args=list(spec.args),
                    env=child_environment(spec),
                    cwd=spec.cwd,
                )
                errlog = spec.stderr if spec.stderr is not None else _our_stderr()
                transport = stdio_client(params, errlog=errlog)
            read, write = await stack.enter_async_context(transport)
            self._stack = stack.pop_all()
        return _WatchedStream(read, self._on_end), write

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        return await self._stack.__aexit__(exc_type, exc_val, exc_tb)


def _our_stderr() -> Any:
    """This process's stderr for a child, even when ``sys.stderr`` is not a real file.

    A notebook or a test harness may replace ``sys.stderr`` by an object without a file
    descriptor, which a subprocess cannot write to: the original stderr is used then, or
    nothing.
    """
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return subprocess.DEVNULL


def open_transport(spec: ServerSpec, on_end: Callable[[], None]) -> _Transport:
    """The transport for ``spec``; ``on_end`` is called when the server's messages end."""
    return _Transport(spec, on_end)
