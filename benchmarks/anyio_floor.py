"""The cost of one anyio task: a minimal reproduction, to run across anyio versions.

Depends on anyio (and trio for ``--backend trio``) only, so that it runs unchanged in a venv
holding any anyio release: ``python benchmarks/anyio_floor.py`` with that venv's interpreter
(``--compare`` runs it under each interpreter given and prints one table).

For N tasks started with ``TaskGroup.start_soon`` that each wait on one ``anyio.Event``:

* ``spawn_us``: wall time to start them all and let each reach its wait, per task (both
  rounds: the one ended by cancelling and the one ended by the event);
* ``kib_per_task``: Python memory they hold while waiting (``tracemalloc``, in a round of its
  own: tracing slows the others), per task;
* ``cancel_us``: wall time to cancel the task group and have every task end, per task;
* ``set_us``: the same run again, ended by setting the event instead (every task returns).

    python benchmarks/anyio_floor.py --tasks 10000 --backend asyncio
    python benchmarks/anyio_floor.py --compare /tmp/anyio-4.13.0/bin/python /tmp/anyio-4.16.0/bin/python
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from typing import Any

import anyio


async def _once(tasks: int, cancel: bool, trace: bool = False) -> dict[str, float]:
    event = anyio.Event()
    waiting = 0
    all_waiting = anyio.Event()

    async def child() -> None:
        nonlocal waiting
        waiting += 1
        if waiting == tasks:
            all_waiting.set()
        await event.wait()

    gc.collect()
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(tasks):
            tg.start_soon(child)
        await all_waiting.wait()
        spawned = time.perf_counter()
        held = tracemalloc.get_traced_memory()[0] if trace else 0
        if trace:
            tracemalloc.stop()
        end_start = time.perf_counter()
        if cancel:
            tg.cancel_scope.cancel()
        else:
            event.set()
    ended = time.perf_counter()
    if trace:
        return {"kib_per_task": held / 1024 / tasks}
    return {
        "spawn_us": (spawned - start) / tasks * 1e6,
        ("cancel_us" if cancel else "set_us"): (ended - end_start) / tasks * 1e6,
    }


async def measure(tasks: int, repeat: int) -> dict[str, Any]:
    """Medians of ``repeat`` rounds (each: one cancelled run, one run ended by the event)."""
    rows: dict[str, list[float]] = {}
    for _ in range(repeat):
        for cancel in (True, False):
            for key, value in (await _once(tasks, cancel)).items():
                rows.setdefault(key, []).append(value)
    rows["kib_per_task"] = [(await _once(tasks, True, trace=True))["kib_per_task"]]
    return {key: statistics.median(values) for key, values in rows.items()}


def _version() -> str:
    from importlib.metadata import version

    return version("anyio")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--compare", nargs="+", metavar="PYTHON", help="interpreters to run")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    tasks, repeat = (200, 1) if args.smoke else (args.tasks, args.repeat)
    if args.compare:
        table = []
        for python in args.compare:
            for backend in ("asyncio", "trio"):
                done = subprocess.run(
                    [python, __file__, "--tasks", str(tasks), "--repeat", str(repeat),
                     "--backend", backend],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                table.append(json.loads(done.stdout))
        json.dump({"compare": table}, sys.stdout)
        print()
        return
    result = anyio.run(measure, tasks, repeat, backend=args.backend)
    json.dump({"anyio": _version(), "backend": args.backend, "tasks": tasks, **result}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
