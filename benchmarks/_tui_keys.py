"""Key-to-screen latency of the terminal UI, measured in a real pseudo-terminal.

The app runs in a process of its own on a pty (120 × 40, ``TERM=xterm-256color``), exactly as
``agentloop`` would (full screen, Textual's Linux driver), with a model that streams a markdown
answer at a steady rate. This process types into the pty like a person — one letter, then the
next 30–80 ms later — and times each from the write to the moment the letter arrives on the
terminal's side of the pty (the app has drawn it). The letters are from an alphabet no answer
holds, and the prompt is cleared every ``len(MARKS)`` letters, so a letter's first appearance
after it was typed is its echo.

Measured twice: idle (before the prompt is sent) and while the answer streams. Reported: p50
and p99 in milliseconds for each, and for the first and the last third of the stream (a cost
that grows with the answer shows as a late figure worse than the early one).
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

MARKS = "жзийклмнопрстуфхцчшщ"
"""The letters typed: none of them is in the streamed answer."""
SIZE = (120, 40)
READY = b"Type a task"


# ------------------------------------------------------------------- the app, in the pty


def child(tokens: int, rate: float) -> None:
    """Run the app with a model streaming ``tokens`` tokens at ``rate`` per second."""
    import anyio

    import agentloop as al
    from agentloop.testing import events_for
    from agentloop_coding import CodingSession
    from agentloop_tui import AgentApp

    from .bench_tui import markdown_tokens

    text = "".join(markdown_tokens(tokens))

    async def stream(model: Any, context: Any, options: Any) -> Any:
        events = events_for(al.testing.reply_text(text), chunk_size=4)  # a token a delta
        step = 1 / rate
        due = time.monotonic()
        for event in events:
            yield event
            due += step
            wait = due - time.monotonic()
            if wait > 0:
                await anyio.sleep(wait)

    async def start(*, resume: str | None = None, model: str | None = None) -> CodingSession:
        spec = al.ModelSpec(provider="bench", model_id="stream", context_window=1_000_000)
        return await CodingSession.start(workspace=".", record=False, model=spec, stream_fn=stream)

    AgentApp(start, cursor_blink=False).run()


# ------------------------------------------------------------------- the person typing


class Terminal:
    """The app in a pty; what it writes is kept with the time each piece arrived."""

    def __init__(self, tokens: int, rate: float) -> None:
        import fcntl
        import struct
        import termios

        master, slave = os.openpty()
        columns, rows = SIZE
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns)}
        env["LINES"] = str(rows)
        command = [sys.executable, "-m", "benchmarks.bench_tui", "--keys-child"]
        command += ["--sizes", str(tokens), "--rate", str(rate)]
        self.process = subprocess.Popen(
            command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        )
        os.close(slave)
        self.master = master
        self.pieces: list[tuple[float, bytes]] = []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                data = b""
            with self.changed:
                if not data:
                    self.pieces.append((time.monotonic(), b""))
                    self.changed.notify_all()
                    return
                self.pieces.append((time.monotonic(), data))
                self.changed.notify_all()

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def wait_for(self, wanted: bytes, since: float, timeout: float = 10.0) -> float | None:
        """When ``wanted`` first arrived after ``since`` (``None``: not within ``timeout``)."""
        deadline = time.monotonic() + timeout
        looked = 0
        with self.changed:
            while True:
                for index in range(looked, len(self.pieces)):
                    at, data = self.pieces[index]
                    if at >= since and wanted in data:
                        return at
                    if not data:
                        return None  # the app ended
                looked = len(self.pieces)
                left = deadline - time.monotonic()
                if left <= 0 or not self.changed.wait(left):
                    return None

    def seen(self, wanted: bytes, since: float) -> bool:
        with self.changed:
            return any(at >= since and wanted in data for at, data in self.pieces)

    def close(self) -> None:
        self.type(b"\x11")  # Ctrl+Q
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


def _keys(terminal: Terminal, count: int, until: float | None = None) -> list[tuple[float, float]]:
    """Type up to ``count`` letters (or until ``until``); returns ``(when, latency)`` pairs."""
    measured: list[tuple[float, float]] = []
    for n in range(count):
        if until is not None and time.monotonic() >= until:
            break
        mark = MARKS[n % len(MARKS)]
        if n and n % len(MARKS) == 0:
            terminal.type(b"\x15")  # Ctrl+U: an empty prompt again
            time.sleep(0.2)
        began = time.monotonic()
        terminal.type(mark.encode())
        arrived = terminal.wait_for(mark.encode(), began)
        if arrived is None:
            raise RuntimeError(f"the letter {mark!r} never reached the screen")
        measured.append((began, arrived - began))
        time.sleep(random.uniform(0.03, 0.08))
    return measured


def _figures(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
        "keys": len(ordered),
    }


def measure(tokens: int, rate: float, idle_keys: int) -> dict[str, Any]:
    """Idle and streaming key-to-screen latency (see the module docs)."""
    terminal = Terminal(tokens, rate)
    try:
        if terminal.wait_for(READY, 0.0, timeout=60) is None:
            raise RuntimeError("the app did not start")
        time.sleep(0.5)
        idle = _keys(terminal, idle_keys)
        terminal.type(b"\x15")
        time.sleep(0.2)
        terminal.type(b"stream it\r")
        started = time.monotonic()
        if terminal.wait_for("● running".encode(), started) is None:
            raise RuntimeError("the answer did not start")
        expected = tokens / rate
        streaming = _keys(terminal, 1_000_000, until=started + expected * 1.05)
        ended = terminal.wait_for("● idle".encode(), started, timeout=expected * 3 + 30)
        if ended is None:
            raise RuntimeError("the answer did not end")
        duration = ended - started
    finally:
        terminal.close()
    during = [(at, lat) for at, lat in streaming if at < ended]
    third = duration / 3
    early = [lat for at, lat in during if at - started < third]
    late = [lat for at, lat in during if at - started >= 2 * third]
    return {
        "tokens": tokens,
        "rate_tokens_per_s": rate,
        "stream_s": round(duration, 1),
        "idle": _figures([lat for _, lat in idle]),
        "streaming": _figures([lat for _, lat in during]),
        "streaming_first_third": _figures(early),
        "streaming_last_third": _figures(late),
    }
