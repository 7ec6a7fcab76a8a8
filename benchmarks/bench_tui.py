"""The terminal UI's cost per frame while an answer streams, next to a plain text log.

An answer of N tokens (markdown: paragraphs, lists and fenced code blocks; a token is 4
characters) is streamed through the real app, headless, as the agent's events. Every
``--per-frame`` tokens the app draws a frame: ``flush()`` (the widgets catch up with the view
model) and Textual's layout and paint (``pilot.pause()``). The baseline draws the same deltas
into Textual's ``Log`` widget, an append-only text log, with the same frames. Each run has a
process of its own.

Reported for each size: frame time p50 and p99 (ms), over all frames and over the first and the
last tenth of the answer, total CPU (s) and CPU per 1,000 tokens.
The cost stays linear when CPU per 1,000 tokens is flat from 25k to 100k tokens, i.e. a frame at
the end of a long answer costs what a frame at its start does.

    python -m benchmarks.bench_tui                 # 25k, 50k, 100k tokens
    python -m benchmarks.bench_tui --smoke         # 2k tokens, for CI's smoke run

With ``--keys``, the figure a user feels instead: key-to-screen latency, typing into the app
in a real pseudo-terminal while a 20k-token answer streams, against the same typing idle (see
``_tui_keys``; targets p50 ≤ 30 ms, p99 ≤ 100 ms throughout)::

    python -m benchmarks.bench_tui --keys          # 20k tokens at 400 tokens/s
    python -m benchmarks.bench_tui --keys --smoke  # 2k tokens, a few keys
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

import agentloop as al
from agentloop.stream import TextDelta, TextStart
from agentloop.testing import ScriptedStream
from agentloop_coding import CodingSession

SIZE = (120, 40)


def markdown_tokens(count: int) -> list[str]:
    """``count`` tokens of 4 characters cut from a markdown text with code blocks."""
    section = (
        "## Step {n}\n\nThe function below reads the file and returns its lines, "
        "stripped of trailing blanks, so that the caller can compare them.\n\n"
        "- first, open the file\n- then read it\n- finally close it\n\n"
        "```python\ndef read_lines(path: str) -> list[str]:\n"
        "    with open(path) as file:\n"
        "        return [line.rstrip() for line in file]\n\n\n"
        "def compare(a: str, b: str) -> bool:\n"
        "    return read_lines(a) == read_lines(b)\n```\n\n"
    )
    text = ""
    n = 0
    while len(text) < count * 4:
        text += section.format(n=n)
        n += 1
    return [text[i : i + 4] for i in range(0, count * 4, 4)]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _start(*, resume: str | None = None, model: str | None = None) -> CodingSession:
    spec = al.ModelSpec(provider="bench", model_id="none", context_window=1_000_000)
    return await CodingSession.start(
        workspace=".", record=False, model=spec, stream_fn=ScriptedStream([])
    )


async def run_tui(tokens: list[str], per_frame: int) -> dict[str, Any]:
    from agentloop_tui import AgentApp

    app = AgentApp(_start, cursor_blink=False, auto_collapse=None)
    frames: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await app.ready.wait()
        app.on_agent_event(al.MessageStart(message=al.AssistantMessage()))
        app.on_agent_event(al.MessageUpdate(event=TextStart(index=0)))
        cpu = time.process_time()
        for start in range(0, len(tokens), per_frame):
            for token in tokens[start : start + per_frame]:
                app.view.feed(al.MessageUpdate(event=TextDelta(index=0, delta=token)))
            began = time.perf_counter()
            app.flush()
            await pilot.pause()
            frames.append(time.perf_counter() - began)
        cpu = time.process_time() - cpu
    return _summary(frames, cpu, len(tokens))


async def run_log(tokens: list[str], per_frame: int) -> dict[str, Any]:
    from textual.app import App, ComposeResult
    from textual.widgets import Log

    class LogApp(App[None]):
        def compose(self) -> ComposeResult:
            yield Log()

    app = LogApp()
    frames: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        log = app.query_one(Log)
        cpu = time.process_time()
        for start in range(0, len(tokens), per_frame):
            pending = "".join(tokens[start : start + per_frame])
            began = time.perf_counter()
            log.write(pending)
            await pilot.pause()
            frames.append(time.perf_counter() - began)
        cpu = time.process_time() - cpu
    return _summary(frames, cpu, len(tokens))


def _summary(frames: list[float], cpu: float, tokens: int) -> dict[str, Any]:
    tenth = max(1, len(frames) // 10)
    return {
        "frames": len(frames),
        "frame_p50_ms": _ms(statistics.median(frames)),
        "frame_p99_ms": _ms(_percentile(frames, 0.99)),
        # The first and the last tenth of the answer: a frame at its end costs what one at its
        # start does when the cost is linear.
        "start_p50_p99_ms": _p50_p99(frames[:tenth]),
        "end_p50_p99_ms": _p50_p99(frames[-tenth:]),
        "cpu_s": round(cpu, 3),
        "cpu_per_1k_tokens_ms": round(cpu / tokens * 1000 * 1000, 3),
    }


def _p50_p99(frames: list[float]) -> list[float]:
    return [_ms(statistics.median(frames)), _ms(_percentile(frames, 0.99))]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _run_one(side: str, size: int, per_frame: int) -> dict[str, Any]:
    """One run in a process of its own: the apps of earlier runs leave objects behind (some
    ten thousand each) that every later full garbage collection walks, and a later run would pay
    for them."""
    command = [sys.executable, "-m", "benchmarks.bench_tui", "--sizes", str(size)]
    command += ["--per-frame", str(per_frame), "--only", side]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    import asyncio  # Textual's event loop: this benchmark measures the asyncio-only TUI

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="2k tokens, one size")
    parser.add_argument("--per-frame", type=int, default=50, help="tokens per frame")
    parser.add_argument("--sizes", default="25000,50000,100000")
    parser.add_argument("--only", choices=["tui", "log"], help=argparse.SUPPRESS)
    parser.add_argument("--keys", action="store_true", help="key-to-screen latency in a pty")
    parser.add_argument("--rate", type=float, default=400.0, help="tokens per second (--keys)")
    parser.add_argument("--idle-keys", type=int, default=100, help="keys typed idle (--keys)")
    parser.add_argument("--keys-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.keys or args.keys_child:
        from . import _tui_keys

        tokens = 2000 if args.smoke else int(args.sizes) if args.sizes.isdigit() else 20_000
        if args.keys_child:  # the app, in the pty the parent made
            _tui_keys.child(tokens, args.rate)
            return
        idle = 10 if args.smoke else args.idle_keys
        print(json.dumps(_tui_keys.measure(tokens, args.rate, idle), indent=2))
        return
    sizes = [2000] if args.smoke else [int(s) for s in args.sizes.split(",")]
    if args.only is not None:  # a child process: one run, its summary
        (size,) = sizes
        run = run_tui if args.only == "tui" else run_log
        print(json.dumps(asyncio.run(run(markdown_tokens(size), args.per_frame))))
        return
    results: dict[str, Any] = {"per_frame": args.per_frame, "size": list(SIZE), "runs": {}}
    for size in sizes:
        results["runs"][str(size)] = {
            side: _run_one(side, size, args.per_frame) for side in ("tui", "log")
        }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
