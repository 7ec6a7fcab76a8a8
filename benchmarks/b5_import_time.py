"""B5 import time: ``import agentloop`` and each provider module, each in a fresh interpreter.

For every module, ``--repeat`` fresh processes each time the import itself with
``time.perf_counter`` around it (interpreter start-up excluded); the rounds are interleaved over
the modules. Provider modules are also timed after ``import agentloop`` (their own cost). The
floor is the import of the core's dependencies (``anyio``, ``msgspec``). The figure for
``agentloop`` also lists the slowest modules under it, from ``python -X importtime``.

Import time does not depend on the async backend; it is measured once.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from ._common import REPO, base_parser, emit_json, summary

__all__ = ["main", "provider_modules"]

_TIMER = "import time as _t; _s = _t.perf_counter(); import {module}; print(_t.perf_counter() - _s)"
_AFTER = (
    "import {before}; import time as _t; _s = _t.perf_counter(); import {module}; "
    "print(_t.perf_counter() - _s)"
)


def provider_modules() -> list[str]:
    """The public modules of ``agentloop_providers``, found without importing them."""
    root = REPO / "providers" / "agentloop_providers"
    if not root.is_dir():
        return []
    names = sorted(m.name for m in pkgutil.iter_modules([str(root)]) if not m.name.startswith("_"))
    return ["agentloop_providers", *(f"agentloop_providers.{n}" for n in names)]


def _time(code: str) -> float | None:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    if proc.returncode != 0:
        return None
    return float(proc.stdout.strip().splitlines()[-1])


def importtime_top(module: str, top: int) -> list[dict[str, Any]]:
    """The modules with the largest self time under ``import module`` (``-X importtime``)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    rows: list[dict[str, Any]] = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:") :].split("|")
        rows.append(
            {
                "module": name.strip(),
                "self_ms": int(self_us) / 1e3,
                "cum_ms": int(cumulative_us) / 1e3,
            }
        )
    rows.sort(key=lambda r: r["self_ms"], reverse=True)
    return rows[:top]


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    if args.repeat == parser.get_default("repeat"):
        args.repeat = 15
    if args.smoke:
        args.repeat = 2
    providers = provider_modules()
    if args.smoke:
        providers = providers[:2]
    codes: dict[str, str] = {
        "floor (anyio, msgspec)": _TIMER.format(module="anyio, msgspec"),
        "agentloop": _TIMER.format(module="agentloop"),
    }
    for module in providers:
        codes[module] = _TIMER.format(module=module)
        codes[f"{module} (after agentloop)"] = _AFTER.format(before="agentloop", module=module)
    samples: dict[str, list[float]] = {name: [] for name in codes}
    failed: set[str] = set()
    for _ in range(args.repeat):
        for name, code in codes.items():
            if name in failed:
                continue
            seconds = _time(code)
            if seconds is None:
                failed.add(name)
            else:
                samples[name].append(seconds * 1e3)
    emit_json(
        {
            "unit": "ms",
            "modules": {name: summary(values) for name, values in samples.items() if values},
            "failed": sorted(failed),
            "agentloop_importtime_top": importtime_top("agentloop", args.top),
            "python": str(Path(sys.executable)),
        }
    )


if __name__ == "__main__":
    main()
