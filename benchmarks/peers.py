"""Peers: the B1–B5 work with pydantic-ai and the OpenAI Agents SDK, each with its own fake model.

Optional: a peer that is not installed is reported as skipped. Nothing here is a dependency of
the project; install the peers into a separate environment to run it (see README.md).

- pydantic-ai: ``FunctionModel`` (a plain function returning each ``ModelResponse``; a stream
  function yielding text deltas for B2), tools registered with ``agent.tool_plain``.
- OpenAI Agents SDK: a ``Model`` subclass returning pre-built ``ModelResponse`` values (and
  pre-built Responses stream events for B2), ``function_tool`` tools, tracing disabled.

The same floor as the other scripts (``floor.py``) runs interleaved in the same process, so each
figure is also a ratio to it. The peers run on asyncio only (the Agents SDK needs asyncio).
B4 runs each implementation in its own process (``--b4 NAME``) so that its peak RSS is its own.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import anyio

from ._common import (
    Replay,
    base_parser,
    emit_json,
    interleave,
    peak_rss_kib,
    reset_peak_rss,
    rss_kib,
    summary,
    text_reply,
    tool_replies,
)
from .floor import floor_run, floor_stream, noop, sleeper

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["main"]

PEERS = {"pydantic_ai": "pydantic_ai", "openai_agents": "agents"}


def installed(peer: str) -> bool:
    return importlib.util.find_spec(PEERS[peer]) is not None


# --------------------------------------------------------------------------- pydantic-ai


class PydanticAI:
    """Runs of a pydantic-ai ``Agent`` over a ``FunctionModel``."""

    def __init__(self, seconds: float | None = None) -> None:
        pai = importlib.import_module("pydantic_ai")
        self.messages = importlib.import_module("pydantic_ai.messages")
        self.function = importlib.import_module("pydantic_ai.models.function")
        self.unlimited = pai.UsageLimits(request_limit=None)
        self.agent: Any = pai.Agent(output_type=str)
        if seconds is None:

            async def noop() -> str:
                return "ok"

            self.agent.tool_plain(noop)
            self.tool_name = "noop"
        else:

            async def sleep() -> str:
                await anyio.sleep(seconds)
                return "ok"

            self.agent.tool_plain(sleep)
            self.tool_name = "sleep"

    def model(self, turns: int, calls: int = 1) -> Any:
        m = self.messages
        tool_call = m.ModelResponse(
            parts=[
                m.ToolCallPart(tool_name=self.tool_name, args={}, tool_call_id=f"call_{i}")
                for i in range(1, calls + 1)
            ]
        )
        final = m.ModelResponse(parts=[m.TextPart(content="done")])
        replies = [tool_call] * turns + [final]
        state = [0]

        def respond(messages: Any, info: Any) -> Any:
            reply = replies[state[0]]
            state[0] += 1
            return reply

        return self.function.FunctionModel(respond)

    def stream_model(self, deltas: int) -> Any:
        async def stream(messages: Any, info: Any) -> Any:
            for _ in range(deltas):
                yield "abcd"

        return self.function.FunctionModel(stream_function=stream)

    async def run(self, turns: int, calls: int = 1) -> None:
        await self.agent.run("go", model=self.model(turns, calls), usage_limits=self.unlimited)

    async def stream(self, deltas: int) -> int:
        count = 0
        async with self.agent.run_stream("go", model=self.stream_model(deltas)) as result:
            async for _delta in result.stream_text(delta=True, debounce_by=None):
                count += 1
        return count

    async def events(self, deltas: int) -> int:
        count = 0
        part_delta = self.messages.PartDeltaEvent
        model = self.stream_model(deltas)
        async with self.agent.run_stream_events("go", model=model) as events:
            async for event in events:
                if type(event) is part_delta:
                    count += 1
        return count


# --------------------------------------------------------------------------- Agents SDK


class OpenAIAgents:
    """Runs of an Agents SDK ``Agent`` over a fake ``Model`` replaying pre-built responses."""

    def __init__(self, seconds: float | None = None) -> None:
        agents = importlib.import_module("agents")
        agents.set_tracing_disabled(True)
        self.agents = agents
        self.types = importlib.import_module("openai.types.responses")
        self.items = importlib.import_module("agents.items")
        self.usage = importlib.import_module("agents.usage")
        interface = importlib.import_module("agents.models.interface")
        if seconds is None:

            async def noop() -> str:
                """Does nothing."""
                return "ok"

            self.tool = agents.function_tool(noop)
        else:

            async def sleep() -> str:
                """Sleeps."""
                await anyio.sleep(seconds)
                return "ok"

            self.tool = agents.function_tool(sleep)
        self.tool_name = self.tool.name

        class Fake(interface.Model):  # type: ignore[misc, name-defined]
            def __init__(self, responses: list[Any], streams: list[list[Any]]) -> None:
                self.responses = responses
                self.streams = streams
                self.next = 0

            async def get_response(self, *args: Any, **kwargs: Any) -> Any:
                reply = self.responses[self.next]
                self.next += 1
                return reply

            async def stream_response(self, *args: Any, **kwargs: Any) -> Any:
                events = self.streams[self.next]
                self.next += 1
                for event in events:
                    yield event

        self.fake = Fake

    def _response(self, output: list[Any]) -> Any:
        return self.items.ModelResponse(output=output, usage=self.usage.Usage(), response_id=None)

    def _text(self, text: str) -> Any:
        t = self.types
        return t.ResponseOutputMessage(
            id="msg_1",
            content=[t.ResponseOutputText(annotations=[], text=text, type="output_text")],
            role="assistant",
            status="completed",
            type="message",
        )

    def agent(self, turns: int, calls: int = 1) -> Any:
        t = self.types
        call = self._response(
            [
                t.ResponseFunctionToolCall(
                    arguments="{}",
                    call_id=f"call_{i}",
                    name=self.tool_name,
                    type="function_call",
                    id=f"fc_{i}",
                    status="completed",
                )
                for i in range(1, calls + 1)
            ]
        )
        replies = [call] * turns + [self._response([self._text("done")])]
        return self.agents.Agent(name="bench", tools=[self.tool], model=self.fake(replies, []))

    def stream_agent(self, deltas: int) -> Any:
        t = self.types
        delta = t.ResponseTextDeltaEvent(
            content_index=0,
            delta="abcd",
            item_id="msg_1",
            logprobs=[],
            output_index=0,
            sequence_number=1,
            type="response.output_text.delta",
        )
        response = t.Response(
            id="resp_1",
            created_at=0.0,
            model="fake",
            object="response",
            output=[self._text("abcd" * deltas)],
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
        )
        completed = t.ResponseCompletedEvent(
            response=response, sequence_number=2, type="response.completed"
        )
        events = [delta] * deltas + [completed]
        return self.agents.Agent(name="bench", model=self.fake([], [events]))

    async def run(self, turns: int, calls: int = 1) -> None:
        await self.agents.Runner.run(self.agent(turns, calls), "go", max_turns=turns + 5)

    async def stream(self, deltas: int) -> int:
        count = 0
        delta_type = self.types.ResponseTextDeltaEvent
        result = self.agents.Runner.run_streamed(self.stream_agent(deltas), "go")
        async for event in result.stream_events():
            if event.type == "raw_response_event" and type(event.data) is delta_type:
                count += 1
        return count


def make(peer: str, seconds: float | None = None) -> Any:
    return PydanticAI(seconds) if peer == "pydantic_ai" else OpenAIAgents(seconds)


# --------------------------------------------------------------------------- benchmarks


def b1(peer: str, sizes: list[int], repeat: int) -> dict[str, Any]:
    impl = make(peer)
    out: dict[str, Any] = {}
    for turns in sizes:
        replies = tool_replies(turns, "noop")

        async def floor(turns: int = turns, replies: Any = replies) -> float:
            start = time.perf_counter()
            await floor_run(Replay(replies), {"noop": noop})
            return (time.perf_counter() - start) / (turns + 1)

        async def peer_run(turns: int = turns) -> float:
            start = time.perf_counter()
            await impl.run(turns)
            return (time.perf_counter() - start) / (turns + 1)

        times = interleave("asyncio", {"floor": floor, peer: peer_run}, repeat=repeat)
        us = {name: summary([t * 1e6 for t in v]) for name, v in times.items()}
        us["ratio"] = us[peer]["median"] / us["floor"]["median"]
        out[str(turns)] = us
    return out


def b2(peer: str, deltas: int, repeat: int) -> dict[str, Any]:
    impl = make(peer)
    replies = [text_reply(deltas)]

    async def floor() -> float:
        count = [0]

        def on_event(event: Any) -> None:
            count[0] += 1

        start = time.perf_counter()
        await floor_stream(Replay(replies), on_event)
        return time.perf_counter() - start

    async def stream() -> float:
        start = time.perf_counter()
        await impl.stream(deltas)
        return time.perf_counter() - start

    cases: dict[str, Any] = {"floor_callback": floor, f"{peer}_stream": stream}
    if peer == "pydantic_ai":

        async def events() -> float:
            start = time.perf_counter()
            await impl.events(deltas)
            return time.perf_counter() - start

        cases[f"{peer}_events"] = events
    times = interleave("asyncio", cases, repeat=repeat)
    return {name: summary([deltas / t for t in v]) for name, v in times.items()}


def b3(peer: str, calls: int, seconds: float, repeat: int) -> dict[str, Any]:
    impl = make(peer, seconds)
    replies = tool_replies(1, "sleep", calls)

    async def floor() -> float:
        start = time.perf_counter()
        await floor_run(Replay(replies), {"sleep": sleeper(seconds)})
        return time.perf_counter() - start

    async def peer_run() -> float:
        start = time.perf_counter()
        await impl.run(1, calls)
        return time.perf_counter() - start

    times = interleave("asyncio", {"floor": floor, peer: peer_run}, repeat=repeat)
    ms = {name: summary([t * 1e3 for t in v]) for name, v in times.items()}
    ms["ratio"] = ms[peer]["median"] / ms["floor"]["median"]
    return ms


async def _many(peer: str, runs: int, seconds: float) -> float:
    impl = make(peer, seconds)
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(runs):
            tg.start_soon(impl.run, 3)
    return time.perf_counter() - start


def b4_one(peer: str, runs: int, seconds: float) -> dict[str, Any]:
    """One B4 measurement in this process (it must be a fresh one)."""
    anyio.run(_many, peer, min(runs, 50), seconds)
    gc.collect()
    reset_peak_rss()
    before = rss_kib()
    wall = anyio.run(_many, peer, runs, seconds)
    peak = peak_rss_kib()
    return {"wall_s": wall, "peak_rss_kib": peak, "kib_per_run": max(0, peak - before) / runs}


def b4(peer: str, runs: int, seconds: float, repeat: int) -> dict[str, Any]:
    from ._common import run_command, run_module

    walls: dict[str, list[float]] = {"floor": [], peer: []}
    per_run: dict[str, list[float]] = {"floor": [], peer: []}
    for _ in range(repeat):
        floor = run_module("b4_many_agents", "--impl", "floor", "--runs", str(runs))
        walls["floor"].append(floor["wall_s"])
        per_run["floor"].append(floor["kib_per_run"])
        command = [sys.executable, "-m", "benchmarks.peers", "--b4", peer, "--runs", str(runs)]
        result = run_command(command)
        walls[peer].append(result["wall_s"])
        per_run[peer].append(result["kib_per_run"])
    out: dict[str, Any] = {
        "runs": runs,
        "wall_s": {k: summary(v) for k, v in walls.items()},
        "kib_per_run": {k: summary(v) for k, v in per_run.items()},
    }
    out["ratio_wall"] = out["wall_s"][peer]["median"] / out["wall_s"]["floor"]["median"]
    return out


def b5(peer: str, repeat: int) -> dict[str, Any]:
    code = "import time as _t; _s = _t.perf_counter(); import {m}; print(_t.perf_counter() - _s)"
    samples: dict[str, list[float]] = {"agentloop": [], PEERS[peer]: []}
    for _ in range(repeat):
        for module in samples:
            proc = subprocess.run(
                [sys.executable, "-c", code.format(m=module)],
                capture_output=True,
                text=True,
                check=True,
            )
            samples[module].append(float(proc.stdout.strip().splitlines()[-1]) * 1e3)
    return {module: summary(v) for module, v in samples.items()}


def guarded(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    try:
        return fn(*args)
    except Exception as exc:  # a peer's API drift must not lose the other figures
        return {"error": f"{type(exc).__name__}: {exc}"[:1000]}


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--backends", nargs="+", default=["asyncio"], help="(asyncio only)")
    parser.add_argument("--peers", nargs="+", choices=list(PEERS), default=list(PEERS))
    parser.add_argument("--b4", choices=list(PEERS), help="one B4 measurement of this peer")
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    if args.b4:
        emit_json(b4_one(args.b4, args.runs, 0.01))
        return
    smoke = args.smoke
    out: dict[str, Any] = {"backend": "asyncio"}
    for peer in args.peers:
        if not installed(peer):
            out[peer] = {"skipped": f"{PEERS[peer]} is not installed"}
            continue
        sizes = [3, 10] if smoke else [10, 100, 1000]
        repeat = 1 if smoke else args.repeat
        out[peer] = {
            "b1_us_per_turn": guarded(b1, peer, sizes, repeat),
            "b2_deltas_per_s": guarded(b2, peer, 200 if smoke else 10_000, repeat),
            "b3_ms": guarded(b3, peer, 5 if smoke else 100, 0.01 if smoke else 0.05, repeat),
            "b4": guarded(b4, peer, 20 if smoke else args.runs, 0.01, 1 if smoke else 3),
            "b5_import_ms": guarded(b5, peer, 2 if smoke else 10),
        }
    emit_json(out)


if __name__ == "__main__":
    main()
