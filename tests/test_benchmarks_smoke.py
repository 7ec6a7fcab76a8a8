"""The benchmark scripts keep working: ``run_all --smoke`` runs and prints the expected JSON.

Nothing here looks at the figures: speed is never asserted in tests.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from typing import TYPE_CHECKING

from tests._benchmarks import REPO, run_benchmark

if TYPE_CHECKING:
    from pathlib import Path

BACKENDS = ("asyncio", "trio")


def test_run_all_smoke(tmp_path: Path) -> None:
    tables = tmp_path / "results.md"
    results = json.loads(
        run_benchmark("run_all", "--smoke", "--markdown", str(tables), timeout=300)
    )

    assert results["meta"]["smoke"] is True
    for key in (
        "b1_turn_overhead",
        "b2_streaming",
        "b3_parallel_tools",
        "b4_many_agents",
        "b5_import_time",
        "b6_parsers",
        "b7_history",
        "b8_request_building",
        "targets",
    ):
        assert key in results, key
    for backend in BACKENDS:
        sizes = results["b1_turn_overhead"][backend]["sizes"]
        assert sizes
        for row in sizes.values():
            assert {"floor", "run_loop", "agent_loop", "agent", "ratio_agent"} <= row.keys()
        assert {"event_stream", "callback", "subscriber", "floor_callback"} <= results[
            "b2_streaming"
        ][backend].keys()
        assert {"floor", "run_loop", "ratio"} <= results["b3_parallel_tools"][backend].keys()
        for row in results["b4_many_agents"][backend].values():
            impls: tuple[str, ...] = ("floor", "run_loop", "agent")
            if backend == "asyncio":
                impls += ("asyncio_floor",)
            else:
                assert "asyncio_floor" not in row
            for impl in impls:
                assert {"wall", "wall_gc_off", "gc_share", "per_run"} <= row[impl].keys()
                # The GC set for a server: each but run_loop.
                assert ("wall_gc_tuned" in row[impl]) is (impl != "run_loop")
        curves = results["b7_history"][backend]["transformers"]
        assert set(curves) == {"none", "window_200k", "window_unlimited", "compactor"}
    assert "agentloop" in results["b5_import_time"]["modules"]
    text = tables.read_text()
    for title in ("B1", "B2", "B3", "B4", "B5", "B7"):
        assert f"### {title} " in text, title


def test_the_instruction_count_workload_runs_on_both_backends() -> None:
    # ``benchmarks.instructions`` runs this under valgrind (not installed in CI); the workload
    # itself, the part that could rot with the library, runs here (it fails on a short run).
    for backend in BACKENDS:
        for impl in ("agent", "floor"):
            run_benchmark(
                "instructions",
                "--child",
                "--turns",
                "3",
                "--backend",
                backend,
                "--impl",
                impl,
                timeout=120,
            )


def test_the_cancel_scope_benchmark_runs_on_both_backends() -> None:
    for backend in BACKENDS:
        stdout = run_benchmark("bench_cancel_scope", "--smoke", "--backend", backend)
        assert json.loads(stdout)["us_per_scope"] > 0


def test_the_run_setup_benchmark_runs_on_both_backends() -> None:
    for backend in BACKENDS:
        stdout = run_benchmark("bench_run_setup", "--smoke", "--backend", backend)
        figures = json.loads(stdout)
        assert figures["task_group_us"] > 0
        assert figures["tool_run_us"]["agent"] > 0


def test_the_parked_runs_count_runs_on_both_backends() -> None:
    for backend in BACKENDS:
        stdout = run_benchmark("bench_parked_runs", "--smoke", "--types", "3", "--backend", backend)
        impls = json.loads(stdout)["impls"]
        # The floor on asyncio alone runs on asyncio only.
        plain = {"asyncio_floor"} if backend == "asyncio" else set()
        assert set(impls) == {"floor", "run_loop", "agent"} | plain
        for figures in impls.values():
            assert figures["kib_per_run"] > 0
            assert figures["tracked_per_run"] > 0
            assert len(figures["tracked_types_per_run"]) == 3
        # Each layer holds what the one below holds, and more.
        assert impls["floor"]["tracked_per_run"] < impls["agent"]["tracked_per_run"]
        if plain:
            assert impls["asyncio_floor"]["tracked_per_run"] < impls["floor"]["tracked_per_run"]


def test_the_injection_guard_measurement_runs_and_counts_every_text() -> None:
    out = run_benchmark("injection_guard", "--misses", timeout=120)
    assert out.startswith("injection_heldout.jsonl: 109 texts\n")
    assert re.search(r"^all +precision \d\.\d\d \(\d+/\d+\)  recall \d\.\d\d \(\d+/51\)", out, re.M)
    assert "false-positive rate" in out


def test_the_readme_commands_name_options_their_scripts_take() -> None:
    # Each command of benchmarks/README.md's "Reproducing" table (and the options its row adds
    # in parentheses) against the script's own ``--help``: an option it does not have, or a
    # value outside an option's choices, fails here instead of in a reader's shell.
    readme = (REPO / "benchmarks" / "README.md").read_text()
    table = readme.split("## Reproducing", 1)[1].split("\n\n")[2]
    checked = 0
    for row in table.splitlines():
        snippets = re.findall(r"`([^`]+)`", row)
        commands = [s for s in snippets if s.startswith("python -m benchmarks.")]
        if not commands:
            continue
        module = commands[0].split()[2].removeprefix("benchmarks.")
        help_text = run_benchmark(module, "--help")
        for snippet in snippets:
            if snippet.startswith("python -m benchmarks."):
                words = shlex.split(snippet)[3:]
            elif snippet.startswith("--"):
                words = shlex.split(snippet)
            else:
                continue
            for option, value in itertools.zip_longest(words, words[1:]):
                if not option.startswith("--"):
                    continue
                assert re.search(rf"{re.escape(option)}\b", help_text), (module, option)
                choices = re.search(rf"{re.escape(option)} \{{([^}}]*)\}}", help_text)
                if choices and value is not None and not value.startswith("--"):
                    assert value in choices.group(1).split(","), (module, option, value)
                checked += 1
    assert checked > 20


def test_the_startup_benchmark_runs() -> None:
    result = json.loads(run_benchmark("b10_startup", "--smoke", timeout=300))
    [environment] = result["environments"]
    assert set(environment["figures"]) == {
        "interpreter_ms",
        "import_ms",
        "help_ms",
        "run_first_byte_ms",
    }
    assert set(environment["targets"]) == set(result["targets_ms"])


def test_the_parked_and_aborted_benchmark_runs() -> None:
    for backend in BACKENDS:
        for impl in ("floor", "run_loop", "agent"):
            result = json.loads(
                run_benchmark(
                    "b4_parked_abort", "--smoke", "--impl", impl, "--backend", backend, timeout=300
                )
            )
            assert {"start_s", "kib_per_run", "abort_s"} <= result.keys()
            assert result["runs"] == 200


def test_the_anyio_floor_reproduction_runs() -> None:
    for backend in BACKENDS:
        result = json.loads(run_benchmark("anyio_floor", "--smoke", "--backend", backend))
        assert {"spawn_us", "cancel_us", "set_us", "kib_per_task", "anyio"} <= result.keys()


def test_the_http_path_benchmark_runs() -> None:
    for backend in BACKENDS:
        result = json.loads(run_benchmark("b9_http_path", "--smoke", "--backend", backend))
        for shape in ("openai", "anthropic"):
            assert {"floor", "adapter", "throughput_ratio", "first_delta_ratio"} <= result[
                shape
            ].keys()
        assert result["connections"]["one_agent_ten_turns"] == 1  # one connection, reused


def test_the_http2_comparison_runs() -> None:
    result = json.loads(run_benchmark("bench_http2", "--smoke", "--deltas", "200", timeout=120))
    assert result["negotiated"] == "HTTP/2"
    assert {"deltas_per_s", "first_delta_ms", "ten_at_once_first_delta_ms"} <= result[
        "http2"
    ].keys()
