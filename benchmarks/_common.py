"""What every benchmark shares: the scripted model, the tools, timing, and the process runner.

The model is a ``Replay``: a ``StreamFn`` that yields pre-built provider events, one list per
call, with no sleeps, no copies and no recording, so that what is measured is the framework (or
the floor) and not the fake. The floor (``floor.py``) consumes the very same event lists.

Timing is done inside the event loop (``anyio.run`` is outside the clock). Each script prints
one JSON object on stdout; ``run_all.py`` starts each script in fresh processes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

import agentloop as al
from agentloop.testing import events_for

__all__ = [
    "BACKENDS",
    "MODEL",
    "OPTIONS",
    "REPO",
    "NoopTool",
    "Replay",
    "SleepTool",
    "base_parser",
    "emit_json",
    "final_reply",
    "interleave",
    "median",
    "meta",
    "peak_rss_kib",
    "reset_peak_rss",
    "rss_kib",
    "run_command",
    "run_module",
    "summary",
    "text_reply",
    "tool_reply",
    "tool_replies",
]

REPO = Path(__file__).resolve().parent.parent
MODEL = al.ModelSpec(provider="bench", model_id="replay")
OPTIONS = al.StreamOptions()
BACKENDS = ("asyncio", "trio")

Events = Sequence[al.stream.AssistantMessageEvent]


# --------------------------------------------------------------------------- the model


async def _play(events: Events) -> AsyncIterator[al.stream.AssistantMessageEvent]:
    for event in events:
        yield event


class Replay:
    """A ``StreamFn`` replaying ``replies`` (pre-built event lists), one per call."""

    __slots__ = ("_next", "_replies")

    def __init__(self, replies: Sequence[Events]) -> None:
        self._replies = replies
        self._next = 0

    def next_stream(self) -> AsyncIterator[al.stream.AssistantMessageEvent]:
        """The next reply's events (the floor calls this directly)."""
        events = self._replies[self._next]
        self._next += 1
        return _play(events)

    def __call__(
        self, model: al.ModelSpec, context: al.stream.LlmContext, options: al.StreamOptions
    ) -> AsyncIterator[al.stream.AssistantMessageEvent]:
        return self.next_stream()


def tool_reply(name: str, calls: int = 1, arguments: dict[str, Any] | None = None) -> Events:
    """The events of an answer calling ``name`` ``calls`` times (ids ``call_1``...)."""
    message = al.AssistantMessage(
        content=[
            al.ToolCall(id=f"call_{i}", name=name, arguments=arguments or {})
            for i in range(1, calls + 1)
        ],
        stop_reason=al.StopReason.TOOL_USE,
    )
    return events_for(message, chunk_size=64)


def text_reply(deltas: int, chunk: str = "abcd") -> Events:
    """The events of a text answer streamed as ``deltas`` deltas of ``chunk``."""
    text = al.AssistantMessage(content=[al.Text(text=chunk * deltas)])
    return events_for(text, chunk_size=len(chunk))


def final_reply() -> Events:
    return text_reply(1, "done")


def tool_replies(turns: int, name: str, calls: int = 1) -> list[Events]:
    """``turns`` answers calling tools, then a final text answer (shared, immutable events)."""
    one = tool_reply(name, calls)
    return [one] * turns + [final_reply()]


_OK = al.AgentToolResult.text("ok")


class NoopTool(al.Tool):
    """A tool that does nothing and returns at once."""

    name = "noop"
    description = "Does nothing."
    parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

    async def execute(
        self, call_id: str, arguments: Any, on_update: al.abc.OnUpdate
    ) -> al.AgentToolResult:
        return _OK


class SleepTool(al.Tool):
    """A tool that sleeps ``seconds``."""

    name = "sleep"
    description = "Sleeps."
    parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def execute(
        self, call_id: str, arguments: Any, on_update: al.abc.OnUpdate
    ) -> al.AgentToolResult:
        await anyio.sleep(self.seconds)
        return _OK


# --------------------------------------------------------------------------- measuring


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summary(values: Sequence[float]) -> dict[str, Any]:
    """Median, min, max and the spread ((max - min) / median) of repetitions."""
    if not values:
        return {"median": None, "min": None, "max": None, "spread": None, "n": 0}
    m = statistics.median(values)
    return {
        "median": m,
        "min": min(values),
        "max": max(values),
        "spread": (max(values) - min(values)) / m if m else None,
        "n": len(values),
        "values": list(values),
    }


def interleave(
    backend: str,
    cases: dict[str, Callable[[], Awaitable[float]]],
    *,
    repeat: int,
    warmup: int = 1,
) -> dict[str, list[float]]:
    """Run every case ``warmup`` times, then ``repeat`` rounds of all cases in turn.

    Each case is an async function returning the seconds it measured itself; each call gets a
    fresh event loop of ``backend``. Returns the measured seconds per case.
    """
    for _ in range(warmup):
        for fn in cases.values():
            anyio.run(fn, backend=backend)
    out: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(repeat):
        # Alternate the order so neither side always runs first (cache, GC, CPU frequency).
        names = list(cases) if i % 2 == 0 else list(reversed(cases))
        for name in names:
            out[name].append(anyio.run(cases[name], backend=backend))
    return out


def rss_kib() -> int:
    """The current resident set size, in KiB (Linux)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def peak_rss_kib() -> int:
    """The peak resident set size of this process, in KiB (since ``reset_peak_rss``).

    Linux's ``VmHWM``. ``getrusage``'s ``ru_maxrss`` is only the fallback: it also counts the
    parent's memory that a forked child had before it ran ``exec``, which swamps small runs.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def reset_peak_rss() -> bool:
    """Reset the peak RSS to the current RSS (Linux); whether it could."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


# --------------------------------------------------------------------------- processes


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--backend", choices=BACKENDS, default="asyncio")
    parser.add_argument("--repeat", type=int, default=5, help="measured repetitions")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured repetitions first")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for CI")
    return parser


def emit_json(result: dict[str, Any]) -> None:
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()


def run_module(module: str, *args: str, timeout: float = 900) -> dict[str, Any]:
    """Run ``python -m benchmarks.<module> args`` in a fresh process; its JSON output."""
    return run_command([sys.executable, "-m", f"benchmarks.{module}", *args], timeout=timeout)


def run_command(command: list[str], *, timeout: float = 900) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        command,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    try:
        result: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        # Something else was printed first: the figures are the last line.
        lines = [line for line in proc.stdout.splitlines() if line.strip()]
        if not lines:
            raise RuntimeError(f"{' '.join(command)} printed nothing") from None
        result = json.loads(lines[-1])
    return result


def meta() -> dict[str, Any]:
    import importlib.metadata as md

    def version(name: str) -> str | None:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return None

    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "agentloop": version("anyio-agentloop"),
        "anyio": version("anyio"),
        "trio": version("trio"),
        "msgspec": version("msgspec"),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
