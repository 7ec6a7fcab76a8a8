"""Run every benchmark in fresh processes, on both backends, and print one JSON object.

    python -m benchmarks.run_all              # the full run (about 10 minutes on 2 cores)
    python -m benchmarks.run_all --smoke      # tiny sizes, seconds; what CI runs
    python -m benchmarks.run_all --only b1 b3 --markdown results.md

B1–B3 run in ``--processes`` fresh processes per backend; each process warms up and then
interleaves the floor and agentloop repetitions, and the figures are the medians over all
repetitions of all processes. B4 runs one process per (repetition, size, backend,
implementation), interleaved, so each peak RSS is a process's own. B5 times imports in fresh
interpreters. B6 is ``bench_parsers.py`` (the SSE parser benchmark), run in smoke mode with
``--smoke``. Nothing here asserts anything about speed: the ``targets`` section only says
which targets the figures meet.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # run as a file: python benchmarks/run_all.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "benchmarks"

from benchmarks._common import BACKENDS, REPO, median, meta, run_command, run_module

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["main"]

Json = dict[str, Any]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def pooled(results: list[Json], get: Callable[[Json], dict[str, Json]]) -> dict[str, float]:
    """Median per case over the repetitions of several processes."""
    values: dict[str, list[float]] = {}
    for result in results:
        for case, stats in get(result).items():
            values.setdefault(case, []).extend(stats["values"])
    return {case: median(v) for case, v in values.items()}


def spread(results: list[Json], get: Callable[[Json], dict[str, Json]]) -> dict[str, float]:
    """(max - min) / median per case over all repetitions: how noisy the figure is."""
    values: dict[str, list[float]] = {}
    for result in results:
        for case, stats in get(result).items():
            values.setdefault(case, []).extend(stats["values"])
    return {c: (max(v) - min(v)) / median(v) for c, v in values.items() if median(v)}


def in_processes(module: str, backend: str, processes: int, args: list[str]) -> list[Json]:
    out = []
    for i in range(processes):
        log(f"{module} {backend} process {i + 1}/{processes}")
        out.append(run_module(module, "--backend", backend, *args))
    return out


# --------------------------------------------------------------------------- the benchmarks


def b1(backends: list[str], processes: int, smoke: bool) -> Json:
    out: Json = {"unit": "us_per_turn"}
    for backend in backends:
        runs = in_processes("b1_turn_overhead", backend, processes, ["--smoke"] if smoke else [])
        sizes: Json = {}
        for size in runs[0]["sizes"]:
            m = pooled(runs, lambda r, s=size: r["sizes"][s])  # type: ignore[misc]
            sizes[size] = {
                "floor": m["floor"],
                "run_loop": m["run_loop"],
                "agent_loop": m["agent_loop"],
                "agent": m["agent"],
                "ratio_run_loop": ratio(m["run_loop"], m["floor"]),
                "ratio_agent_loop": ratio(m["agent_loop"], m["floor"]),
                "ratio_agent": ratio(m["agent"], m["floor"]),
                "spread": spread(runs, lambda r, s=size: r["sizes"][s]),  # type: ignore[misc]
            }
        first, last = next(iter(sizes.values())), list(sizes.values())[-1]
        out[backend] = {
            "sizes": sizes,
            "growth_run_loop": ratio(last["run_loop"], first["run_loop"]),
            "growth_agent": ratio(last["agent"], first["agent"]),
            "growth_floor": ratio(last["floor"], first["floor"]),
        }
    return out


def b2(backends: list[str], processes: int, smoke: bool) -> Json:
    out: Json = {"unit": "deltas_per_s"}
    for backend in backends:
        runs = in_processes("b2_streaming", backend, processes, ["--smoke"] if smoke else [])
        m = pooled(runs, lambda r: r["cases"])
        out[backend] = {
            **m,
            "ratio_event_stream": ratio(m["floor_channel"], m["event_stream"]),
            "ratio_callback": ratio(m["floor_callback"], m["callback"]),
            "spread": spread(runs, lambda r: r["cases"]),
            "deltas": runs[0]["deltas"],
        }
    return out


def b3(backends: list[str], processes: int, smoke: bool) -> Json:
    out: Json = {"unit": "ms"}
    for backend in backends:
        runs = in_processes("b3_parallel_tools", backend, processes, ["--smoke"] if smoke else [])
        m = pooled(runs, lambda r: r["cases"])
        ideal = runs[0]["ideal_ms"]
        out[backend] = {
            "ideal": ideal,
            "floor": m["floor"],
            "run_loop": m["run_loop"],
            "agent": m["agent"],
            "ratio": ratio(m["run_loop"], m["floor"]),
            "ratio_agent": ratio(m["agent"], m["floor"]),
            "ratio_ideal": ratio(m["run_loop"], ideal),
            "spread": spread(runs, lambda r: r["cases"]),
        }
    return out


B4_IMPLS = ("floor", "asyncio_floor", "run_loop", "agent")


def _b4_impls(backend: str) -> tuple[str, ...]:
    """``asyncio_floor`` (the floor on asyncio alone) runs on asyncio only."""
    return tuple(i for i in B4_IMPLS if i != "asyncio_floor" or backend == "asyncio")


def b4(backends: list[str], sizes: list[int], repeat: int, smoke: bool, traced: bool) -> Json:
    """Each (size, backend, implementation) with the cyclic GC on, off (its share), and tuned
    as docs/performance.md suggests for servers (run_loop: on and off only)."""
    raw: dict[tuple[str, int, str, str], list[Json]] = {}
    extra = ["--smoke"] if smoke else []
    plan = [(impl, gc) for impl in B4_IMPLS for gc in ("on", "off", "tuned")]
    plan.remove(("run_loop", "tuned"))
    for rep in range(repeat):
        for size in sizes:
            for backend in backends:
                for impl, gc in plan if rep % 2 == 0 else reversed(plan):
                    if impl not in _b4_impls(backend):
                        continue
                    log(f"b4_many_agents {backend} {impl} runs={size} gc={gc} ({rep + 1}/{repeat})")
                    args = ["--backend", backend, "--impl", impl, "--runs", str(size), "--gc", gc]
                    result = run_module("b4_many_agents", *args, *extra)
                    raw.setdefault((backend, size, impl, gc), []).append(result)
    out: Json = {"unit": {"wall": "s", "peak_rss": "MiB", "per_run": "KiB", "per_run_us": "µs"}}
    for backend in backends:
        per_size: Json = {}
        for size in sizes:
            row: Json = {}
            for impl in _b4_impls(backend):
                results = raw[(backend, size, impl, "on")]
                wall = median([r["wall_s"] for r in results])
                no_gc = median([r["wall_s"] for r in raw[(backend, size, impl, "off")]])
                row[impl] = {
                    "wall": wall,
                    "wall_gc_off": no_gc,
                    "gc_share": (wall - no_gc) / wall if wall else None,
                    "per_run_us": wall / size * 1e6,
                    "peak_rss": median([r["peak_rss_kib"] for r in results]) / 1024,
                    "per_run": median([r["kib_per_run"] for r in results]),
                    "walls": [r["wall_s"] for r in results],
                }
                tuned = raw.get((backend, size, impl, "tuned"))
                if tuned:
                    row[impl]["wall_gc_tuned"] = median([r["wall_s"] for r in tuned])
                    row[impl]["per_run_us_gc_tuned"] = row[impl]["wall_gc_tuned"] / size * 1e6
            row["ratio_wall"] = ratio(row["agent"]["wall"], row["floor"]["wall"])
            row["ratio_wall_gc_off"] = ratio(
                row["agent"]["wall_gc_off"], row["floor"]["wall_gc_off"]
            )
            row["ratio_wall_gc_tuned"] = ratio(
                row["agent"]["wall_gc_tuned"], row["floor"]["wall_gc_tuned"]
            )
            per_size[str(size)] = row
        out[backend] = per_size
    if traced:
        size = sizes[0]
        for backend in backends:
            for impl in _b4_impls(backend):
                log(f"b4_many_agents {backend} {impl} runs={size} (tracemalloc)")
                args = ["--backend", backend, "--impl", impl, "--runs", str(size), "--tracemalloc"]
                result = run_module("b4_many_agents", *args, *extra)
                out[backend][str(size)][impl]["per_run_traced"] = result["kib_per_run"]
    return out


def b7(backends: list[str], smoke: bool) -> Json:
    out: Json = {"unit": "us_per_prompt"}
    for backend in backends:
        log(f"b7_history {backend}")
        out[backend] = run_module(
            "b7_history", "--backend", backend, *(["--smoke"] if smoke else [])
        )
    return out


def b8(smoke: bool) -> Json:
    log("b8_request_building")
    return run_module("b8_request_building", *(["--smoke"] if smoke else []))


def b5(smoke: bool) -> Json:
    log("b5_import_time")
    return run_module("b5_import_time", *(["--smoke"] if smoke else []))


def b6(smoke: bool) -> Json:
    script = REPO / "benchmarks" / "bench_parsers.py"
    if not script.exists():
        return {"skipped": "benchmarks/bench_parsers.py does not exist yet"}
    log("bench_parsers")
    try:
        return run_command([sys.executable, str(script), *(["--quick"] if smoke else [])])
    except Exception as exc:  # its own failures are reported, not fatal to the other figures
        return {"error": f"{type(exc).__name__}: {exc}"[-2000:]}


def peers(python: str, smoke: bool) -> Json:
    log(f"peers ({python})")
    try:
        return run_command([python, "-m", "benchmarks.peers", *(["--smoke"] if smoke else [])])
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[-2000:]}


# --------------------------------------------------------------------------- targets


def targets(results: Json) -> Json:
    """Which targets of the issue the figures meet (information only; nothing asserts it)."""
    out: Json = {}
    for backend in BACKENDS:
        t: Json = {}
        if backend in results.get("b1_turn_overhead", {}):
            r = results["b1_turn_overhead"][backend]
            # The rows are runs of 100 and 1,000 turns; a run of 10 turns also pays a
            # run's own cost (an agent, its config, a cancel scope, a task group) over 11 turns.
            sizes = r["sizes"]
            long = [s["ratio_agent"] for n, s in sizes.items() if int(n) >= 100]
            short = [s["ratio_agent"] for n, s in sizes.items() if int(n) < 100]
            worst = max(long or short)
            t["b1_agent_within_1.5x_floor"] = {"value": worst, "met": worst <= 1.5}
            if long and short:
                worst = max(short)
                t["b1_agent_within_1.5x_floor_10_turns"] = {"value": worst, "met": worst <= 1.5}
            t["b1_flat"] = {"value": r["growth_agent"], "met": r["growth_agent"] <= 1.2}
        if backend in results.get("b2_streaming", {}):
            r = results["b2_streaming"][backend]
            t["b2_event_stream_1.5m"] = {
                "value": r["event_stream"],
                "met": r["event_stream"] >= 1_500_000,
            }
            worst = min(r["callback"], r["subscriber"])
            t["b2_callback_2m"] = {"value": worst, "met": worst >= 2_000_000}
        if backend in results.get("b3_parallel_tools", {}):
            r = results["b3_parallel_tools"][backend]
            worst = max(r["ratio"], r["ratio_agent"])
            t["b3_within_3pct_floor"] = {"value": worst, "met": worst <= 1.03}
        if backend in results.get("b4_many_agents", {}):
            r = results["b4_many_agents"][backend]
            wall = max(row["ratio_wall"] for row in r.values())
            per_run = max(row["agent"]["per_run"] for row in r.values())
            t["b4_wall_within_3x_floor"] = {"value": wall, "met": wall <= 3}
            # Each floor's own figure beside each row, to read the Agent's against.
            floors = [i for i in ("floor", "asyncio_floor") if i in next(iter(r.values()))]
            t["b4_under_12kib_per_run"] = {
                "value": per_run,
                "met": per_run <= 12,
                **{i: max(row[i]["per_run"] for row in r.values()) for i in floors},
            }
            if len(r) > 1:
                small, large = r[min(r, key=int)], r[max(r, key=int)]
                for key, label in (("per_run_us", ""), ("per_run_us_gc_tuned", "_gc_tuned")):
                    flat = large["agent"][key] / small["agent"][key]
                    t[f"b4_per_run_flat_within_20pct{label}"] = {
                        "value": flat,
                        "met": flat <= 1.2,
                        **{i: large[i][key] / small[i][key] for i in floors},
                    }
        if backend in results.get("b7_history", {}):
            r = results["b7_history"][backend]["transformers"]
            for name, curve in r.items():
                growth = max(v for v in curve["ratio_to_smallest"].values() if v is not None)
                t[f"b7_{name}_flat"] = {"value": growth, "met": growth <= 1.5}
            # A window that trims costs what its budget holds: flat once it trims.
            medians = [s["median"] for s in r["window_200k"]["sizes"].values()]
            if len(medians) >= 2:
                growth = medians[-1] / medians[-2]
                t["b7_window_200k_flat_once_trimming"] = {"value": growth, "met": growth <= 1.5}
        if t:
            out[backend] = t
    if "b5_import_time" in results:
        value = results["b5_import_time"]["modules"]["agentloop"]["median"]
        out["b5_import_under_100ms"] = {"value": value, "met": value < 100}
    return out


# --------------------------------------------------------------------------- markdown


def markdown(results: Json) -> str:
    """The results as the tables of benchmarks/README.md."""
    lines: list[str] = []
    if "b1_turn_overhead" in results:
        lines += [
            "### B1 turn overhead (µs per turn)",
            "",
            "| backend | N | floor | Agent + @tool | ratio | run_loop | ratio "
            "| agent_loop (stream) | ratio |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for backend in BACKENDS:
            r = results["b1_turn_overhead"].get(backend)
            if r is None:
                continue
            for n, s in r["sizes"].items():
                lines.append(
                    f"| {backend} | {n} | {s['floor']:.1f} | {s['agent']:.1f} "
                    f"| {s['ratio_agent']:.2f}× | {s['run_loop']:.1f} "
                    f"| {s['ratio_run_loop']:.2f}× | {s['agent_loop']:.1f} "
                    f"| {s['ratio_agent_loop']:.2f}× |"
                )
        lines.append("")
    if "b2_streaming" in results:
        lines += [
            "### B2 streaming (deltas per second, higher is better)",
            "",
            "| backend | floor (callback) | run_loop on_event | Agent.subscribe "
            "| floor (memory stream) | agent_loop event stream |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for backend in BACKENDS:
            r = results["b2_streaming"].get(backend)
            if r is None:
                continue
            lines.append(
                f"| {backend} | {r['floor_callback']:,.0f} | {r['callback']:,.0f} "
                f"| {r['subscriber']:,.0f} | {r['floor_channel']:,.0f} "
                f"| {r['event_stream']:,.0f} |"
            )
        lines.append("")
    if "b3_parallel_tools" in results:
        lines += [
            "### B3 parallel tools (ms, 100 calls of 50 ms)",
            "",
            "| backend | ideal | floor | run_loop | ratio to floor | Agent + @tool | ratio "
            "| run_loop to ideal |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for backend in BACKENDS:
            r = results["b3_parallel_tools"].get(backend)
            if r is None:
                continue
            lines.append(
                f"| {backend} | {r['ideal']:.1f} | {r['floor']:.2f} | {r['run_loop']:.2f} "
                f"| {r['ratio']:.3f}× | {r['agent']:.2f} | {r['ratio_agent']:.3f}× "
                f"| {r['ratio_ideal']:.3f}× |"
            )
        lines.append("")
    if "b4_many_agents" in results:
        lines += [
            "### B4 many agents (3 tool turns each, tools sleep 10 ms)",
            "",
            "| backend | runs | floor wall (s) | Agent wall (s) | ratio | GC share (Agent) "
            "| GC tuned: floor / Agent (s) | run_loop wall (s) | asyncio floor KiB/run "
            "| floor KiB/run | Agent KiB/run | run_loop KiB/run |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for backend in BACKENDS:
            r = results["b4_many_agents"].get(backend)
            if r is None:
                continue
            for n, row in r.items():
                f, a, rl = row["floor"], row["agent"], row["run_loop"]
                plain = f"{row['asyncio_floor']['per_run']:.1f}" if "asyncio_floor" in row else "—"
                lines.append(
                    f"| {backend} | {n} | {f['wall']:.2f} | {a['wall']:.2f} "
                    f"| {row['ratio_wall']:.2f}× | {a['gc_share']:.0%} "
                    f"| {f['wall_gc_tuned']:.2f} / {a['wall_gc_tuned']:.2f} | {rl['wall']:.2f} "
                    f"| {plain} "
                    f"| {f['per_run']:.1f} | {a['per_run']:.1f} | {rl['per_run']:.1f} |"
                )
        growths = {
            backend: r
            for backend in BACKENDS
            if (r := results["b4_many_agents"].get(backend)) is not None and len(r) > 1
        }
        if growths:
            lines += [
                "",
                "Per-run cost at the largest N over the smallest (flat is ≤ 1.2):",
                "",
                "| backend | GC | asyncio floor | floor | Agent |",
                "|---|---|---:|---:|---:|",
            ]
        for backend, r in growths.items():
            small, large = r[min(r, key=int)], r[max(r, key=int)]
            for key, label in (
                ("per_run_us", "Python's default"),
                ("per_run_us_gc_tuned", "tuned"),
            ):
                growth = [
                    f"{large[i][key] / small[i][key]:.2f}×" if i in small else "—"
                    for i in ("asyncio_floor", "floor", "agent")
                ]
                lines.append(f"| {backend} | {label} | " + " | ".join(growth) + " |")
        lines.append("")
    if "b7_history" in results:
        lines += ["### B7 µs per prompt against the history's length", ""]
        header = False
        for backend in BACKENDS:
            r = results["b7_history"].get(backend)
            if r is None:
                continue
            for name, curve in r["transformers"].items():
                if not header:
                    sizes = " | ".join(f"N = {n}" for n in curve["sizes"])
                    lines.append(f"| backend | transformer | {sizes} |")
                    lines.append("|---|---|" + "---:|" * len(curve["sizes"]))
                    header = True
                cells = " | ".join(f"{s['median']:.0f}" for s in curve["sizes"].values())
                lines.append(f"| {backend} | {name} | {cells} |")
        lines.append("")
    if "b8_request_building" in results:
        r = results["b8_request_building"]
        sizes = r["sizes"]
        lines += [
            "### B8 CPU µs to build one request (no cache / the loop's log / a fresh list)",
            "",
            "| adapter | " + " | ".join(f"N = {n}" for n in sizes) + " |",
            "|---|" + "---:|" * len(sizes),
        ]
        for adapter, row in r["adapters"].items():
            cells = " | ".join(
                f"{row[str(n)]['plain']:,.0f} / {row[str(n)]['cached']:,.0f} / "
                f"{row[str(n)]['cached_lists']:,.0f}"
                for n in sizes
            )
            lines.append(f"| {adapter} | {cells} |")
        lines.append("")
    if "b5_import_time" in results:
        lines += [
            "### B5 import time (ms, fresh interpreter)",
            "",
            "| module | median |",
            "|---|---:|",
        ]
        for module, s in results["b5_import_time"]["modules"].items():
            lines.append(f"| `{module}` | {s['median']:.1f} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CI); seconds")
    parser.add_argument(
        "--only", nargs="+", default=["b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8"]
    )
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--processes", type=int, default=3, help="fresh processes for B1–B3")
    parser.add_argument("--b4-runs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--b4-repeat", type=int, default=3)
    parser.add_argument("--b4-tracemalloc", action="store_true", help="also tracemalloc per run")
    parser.add_argument("--peers", action="store_true", help="also run peers.py")
    parser.add_argument(
        "--peers-python",
        default=sys.executable,
        help="the interpreter for peers.py (an environment where the peers are installed)",
    )
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--markdown", type=Path, help="write the tables as markdown here")
    args = parser.parse_args()
    if args.smoke:
        args.processes, args.b4_runs, args.b4_repeat = 1, [20], 1
    started = time.perf_counter()
    results: Json = {"meta": {**meta(), "smoke": args.smoke}}
    only = set(args.only)
    if "b1" in only:
        results["b1_turn_overhead"] = b1(args.backends, args.processes, args.smoke)
    if "b2" in only:
        results["b2_streaming"] = b2(args.backends, args.processes, args.smoke)
    if "b3" in only:
        results["b3_parallel_tools"] = b3(args.backends, args.processes, args.smoke)
    if "b4" in only:
        results["b4_many_agents"] = b4(
            args.backends, args.b4_runs, args.b4_repeat, args.smoke, args.b4_tracemalloc
        )
    if "b5" in only:
        results["b5_import_time"] = b5(args.smoke)
    if "b6" in only:
        results["b6_parsers"] = b6(args.smoke)
    if "b7" in only:
        results["b7_history"] = b7(args.backends, args.smoke)
    if "b8" in only:
        results["b8_request_building"] = b8(args.smoke)
    if args.peers:
        results["peers"] = peers(args.peers_python, args.smoke)
    results["targets"] = targets(results)
    if args.smoke:
        results["targets"]["note"] = "smoke sizes: the figures and targets mean nothing"
    results["meta"]["seconds"] = time.perf_counter() - started
    text = json.dumps(results, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    if args.markdown is not None:
        args.markdown.write_text(markdown(results) + "\n")


if __name__ == "__main__":
    main()
