"""The ACP server's standard input and output: JSON-RPC messages, one per line, guarded.

The protocol package (``acp``) reads messages through a ``Transport`` and trusts each one to
be a JSON object; a line that is valid JSON but not an object (``[]``, ``123``, ``"x"``,
``null``, a batch) ended the server in the versions we know. ``StdioTransport`` stands between
standard input and the package, and answers what it must not see, as JSON-RPC says:

====================================  ===============================================
the line                              the answer
====================================  ===============================================
not JSON (or nested too deeply)       ``-32700`` Parse error, ``id`` null
JSON, but not an object               ``-32600`` Invalid Request, ``id`` null
an empty array                        ``-32600``, ``id`` null
a batch (a non-empty array)           an array: ``-32600`` for each request in it
                                      (ACP has no batches), nothing for notifications
an object that is neither a request,  ``-32600``, with its ``id`` when that is a
a notification nor a response         string, a number or null
longer than ``max_line`` bytes        ``-32600``, ``id`` null; the line is skipped
====================================  ===============================================

So bad input from a client never ends the agent, and nothing the client sends can make it
hold more than ``max_line`` bytes of one line.

Writes keep the order in which ``send`` was called: a message is queued before ``send``
awaits anything. ``announced(session_id)`` waits until the answer that gave the client a new
session's id is queued, so that the updates of that session (its commands, a server that
failed to start) reach the client after it knows the session.

Reading and writing use the descriptors directly, with ``anyio.wait_readable`` and
``wait_writable`` (a regular file, which cannot be waited on, is read in a worker thread):
nothing blocks the event loop and nothing is left waiting on standard input when the server
stops.
"""

from __future__ import annotations

import collections
import json
import os
import stat
from typing import Any

import anyio
import anyio.to_thread

__all__ = ["MAX_LINE", "StdioTransport", "check_message"]

MAX_LINE = 50 * 1024 * 1024  # as the protocol package's own stdio reader
_CHUNK = 1 << 16
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def _error(code: int, message: str, request_id: Any = None, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _valid_id(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, str)
        or (isinstance(value, int | float) and not isinstance(value, bool))
    )


def _check_one(message: Any) -> dict[str, Any] | None:
    """``None`` for a well-formed object, else the error to answer it with."""
    if not isinstance(message, dict):
        return _error(INVALID_REQUEST, "Invalid Request", data="a message must be a JSON object")
    request_id = message.get("id")
    shown_id = request_id if _valid_id(request_id) else None
    if "id" in message and not _valid_id(request_id):
        return _error(INVALID_REQUEST, "Invalid Request", data="id must be a string or a number")
    if message.get("jsonrpc", "2.0") != "2.0":
        return _error(INVALID_REQUEST, "Invalid Request", shown_id, 'jsonrpc must be "2.0"')
    if "method" in message:
        if not isinstance(message["method"], str):
            return _error(INVALID_REQUEST, "Invalid Request", shown_id, "method must be a string")
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return _error(INVALID_REQUEST, "Invalid Request", shown_id, "params must be structured")
        return None
    if "id" in message and ("result" in message) != ("error" in message):
        return None  # a response to one of our requests
    return _error(INVALID_REQUEST, "Invalid Request", shown_id, "neither a request nor a response")


def check_message(message: Any) -> Any:
    """``None`` when ``message`` (decoded JSON) may go to the protocol package; else what to
    answer: an error object, an array of them (a batch), or ``()`` for nothing at all."""
    if isinstance(message, list):
        if not message:
            return _error(INVALID_REQUEST, "Invalid Request", data="an empty batch")
        answers = []
        for item in message:
            if isinstance(item, dict) and "method" in item and "id" not in item:
                continue  # a notification gets no answer, even refused
            item_id = item.get("id") if isinstance(item, dict) else None
            answers.append(
                _error(
                    INVALID_REQUEST,
                    "Invalid Request",
                    item_id if _valid_id(item_id) else None,
                    "batches are not part of ACP; send each message on a line of its own",
                )
            )
        return answers or ()
    return _check_one(message)


class StdioTransport:
    """JSON-RPC over two file descriptors, one message per line (see the module docs).

    Args:
        read_fd: where messages come from (default: standard input).
        write_fd: where they go (default: standard output).
        max_line: the longest line read, in bytes.
    """

    def __init__(self, read_fd: int = 0, write_fd: int = 1, *, max_line: int = MAX_LINE) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.max_line = max_line
        self._buffer = bytearray()
        self._eof = False
        self._skipping = False  # inside a line too long to keep
        self._outbox: collections.deque[memoryview] = collections.deque()
        self._writing: anyio.Lock | None = None
        self._closed = False
        self._sessions: set[str] = set()
        self._waiting: dict[str, anyio.Event] = {}
        self._pollable = {fd: not stat.S_ISREG(os.fstat(fd).st_mode) for fd in (read_fd, write_fd)}
        mode = os.fstat(write_fd).st_mode
        self._was_blocking: bool | None = None
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            self._was_blocking = os.get_blocking(write_fd)
            os.set_blocking(write_fd, False)  # a full pipe must not block the event loop

    # ---------------------------------------------------------------- reading

    async def _read_chunk(self) -> bytes:
        if not self._pollable[self.read_fd]:
            return await anyio.to_thread.run_sync(os.read, self.read_fd, _CHUNK)
        while True:
            await anyio.wait_readable(self.read_fd)
            try:
                return os.read(self.read_fd, _CHUNK)
            except BlockingIOError:
                continue

    async def _line(self) -> bytes | None:
        """The next line (without its end), or ``None`` at the end of input; a line longer
        than ``max_line`` comes back as ``b"\\x00"`` (never valid JSON), its bytes dropped."""
        while True:
            end = self._buffer.find(b"\n")
            if end != -1:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                if self._skipping or end > self.max_line:
                    self._skipping = False
                    return b"\x00"
                return line
            if len(self._buffer) > self.max_line:
                self._buffer.clear()
                self._skipping = True
            if self._eof:
                if self._buffer and not self._skipping:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    return line
                return None
            chunk = await self._read_chunk()
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message; bad lines are answered here (module docs).

        Raises:
            OSError: standard input cannot be read.
        """
        while True:
            line = await self._line()
            if line is None:
                return None
            if line == b"\x00":
                await self.send(
                    _error(INVALID_REQUEST, "Invalid Request", data="the message is too long")
                )
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError) as exc:
                await self.send(_error(PARSE_ERROR, "Parse error", data=str(exc)[:200]))
                continue
            answer = check_message(message)
            if answer is None:
                assert isinstance(message, dict)
                return message
            if answer != ():
                await self.send(answer)

    # ---------------------------------------------------------------- writing

    async def send(self, message: Any) -> None:
        """Write ``message`` (queued at once, so messages go out in the order of the calls).

        Raises:
            ConnectionError: the transport is closed, or the client stopped reading.
        """
        if self._closed:
            raise ConnectionError("the transport is closed")
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        self._outbox.append(memoryview(data))
        self._note_session(message)
        if self._writing is None:
            self._writing = anyio.Lock()
        async with self._writing:
            await self._flush()

    def _note_session(self, message: Any) -> None:
        result = message.get("result") if isinstance(message, dict) else None
        session_id = result.get("sessionId") if isinstance(result, dict) else None
        if isinstance(session_id, str):
            self._sessions.add(session_id)
            waiting = self._waiting.pop(session_id, None)
            if waiting is not None:
                waiting.set()

    async def _flush(self) -> None:
        outbox = self._outbox
        while outbox:
            head = outbox[0]
            if self._pollable[self.write_fd]:
                await anyio.wait_writable(self.write_fd)
            try:
                written = os.write(self.write_fd, head)
            except BlockingIOError:
                continue
            except BrokenPipeError:
                self._closed = True
                raise ConnectionError("the client stopped reading") from None
            if written == len(head):
                outbox.popleft()
            else:
                outbox[0] = head[written:]

    async def announced(self, session_id: str) -> None:
        """Return once the answer that gave the client ``session_id`` is queued."""
        if session_id in self._sessions:
            return
        event = self._waiting.get(session_id)
        if event is None:
            event = self._waiting[session_id] = anyio.Event()
        await event.wait()

    async def close(self) -> None:
        """Stop sending; what is queued is written first (bounded)."""
        if self._closed:
            return
        try:
            if self._outbox and self._writing is not None:
                with anyio.move_on_after(2, shield=True):
                    async with self._writing:
                        await self._flush()
        except OSError:
            pass  # the client is gone: nothing more can reach it
        finally:
            self._closed = True
            if self._was_blocking is not None:
                os.set_blocking(self.write_fd, self._was_blocking)
