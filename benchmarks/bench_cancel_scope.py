"""What one anyio cancel scope costs, entered and left with nothing inside.

Why a tool call no longer opens a scope of its own (anyio >= 4.14 runs every task inside the
scope of its ``TaskHandle``): measured here, one scope is a sizeable part of a turn.

    python -m benchmarks.bench_cancel_scope --backend trio
"""

from __future__ import annotations

import time

import anyio

from ._common import base_parser, emit_json, median

__all__ = ["main"]


async def _scopes(count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        with anyio.CancelScope():  # noqa: ASYNC100 (an empty scope is what is measured)
            pass
    return (time.perf_counter() - start) / count


def main() -> None:
    parser = base_parser(__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument("--count", type=int, default=100_000)
    args = parser.parse_args()
    count = 100 if args.smoke else args.count
    times = [anyio.run(_scopes, count, backend=args.backend) for _ in range(args.repeat)]
    emit_json({"backend": args.backend, "count": count, "us_per_scope": median(times) * 1e6})


if __name__ == "__main__":
    main()
