"""How well ``PromptInjectionGuard`` tells injections from ordinary tool output, measured.

    python -m benchmarks.injection_guard            the figures, overall and by kind
    python -m benchmarks.injection_guard --misses   and every text it got wrong

The labelled set is ``benchmarks/data/injection_heldout.jsonl``: one JSON object a line,
``{"label": 1 or 0, "kind": ..., "text": ...}``. It was written for this measurement, before
the guard's rules of 2026-11-27 were changed, and the rules were not tuned on it afterwards
(its ``issue`` and ``family`` kinds are the examples issue 34 names, which the changes set out
to fix; the figures are given without them too). Injections cover direct phrasing, paraphrase
without trigger words, seven other languages, base64, ROT13, homoglyphs and split letters;
benign texts include hard cases (an e-mail asking to disregard a previous one, install lines
piping ``curl`` into ``sh``, an article quoting an injection).

Precision: flagged texts that are injections. Recall: injections flagged. False-positive rate:
benign texts flagged. A heuristic guard is one layer, not a guarantee: see docs/policies.md
for the model-based classifier hook, the stronger option.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

from agentloop_policies import PromptInjectionGuard

DATA = Path(__file__).parent / "data" / "injection_heldout.jsonl"
NAMED_IN_THE_ISSUE = {"issue", "family"}


def _load() -> list[dict[str, object]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]


def _figures(rows: list[tuple[int, bool]]) -> str:
    tp = sum(1 for label, flagged in rows if label and flagged)
    fp = sum(1 for label, flagged in rows if not label and flagged)
    positives = sum(1 for label, _ in rows if label)
    negatives = len(rows) - positives
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / positives if positives else float("nan")
    fpr = fp / negatives if negatives else float("nan")
    return (
        f"precision {precision:.2f} ({tp}/{tp + fp})  recall {recall:.2f} ({tp}/{positives})  "
        f"false-positive rate {fpr:.2f} ({fp}/{negatives})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="print every text it got wrong")
    args = parser.parse_args()
    guard = PromptInjectionGuard()
    data = _load()
    results: list[tuple[str, int, bool, str]] = []
    for row in data:
        text, label, kind = str(row["text"]), int(row["label"]), str(row["kind"])  # type: ignore[call-overload]
        results.append((kind, label, bool(guard.detect(text)), text))
    print(f"{DATA.name}: {len(data)} texts")
    print("all         ", _figures([(label, flagged) for _, label, flagged, _ in results]))
    held_out = [
        (label, flagged) for kind, label, flagged, _ in results if kind not in NAMED_IN_THE_ISSUE
    ]
    print("without the issue's examples", _figures(held_out))
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for kind, label, flagged, _ in results:
        by_kind[f"{'injection' if label else 'benign'}/{kind}"].append(flagged)
    for name, flags in sorted(by_kind.items()):
        print(f"  {name:22} flagged {sum(flags)}/{len(flags)}")
    if args.misses:
        for kind, label, flagged, text in results:
            if bool(label) != flagged:
                what = "missed" if label else "false positive"
                print(f"{what:15} {kind:11} {text[:110]!r}")
    prose = ("The quick brown fox jumps over the lazy dog near the river bank. " * 16384)[: 1 << 20]
    started = time.perf_counter()
    guard.detect(prose)
    print(
        f"scanning 1 MiB of prose: {time.perf_counter() - started:.2f} s (off the event loop "
        f"above {guard.in_thread_above} characters)"
        if hasattr(guard, "in_thread_above")
        else f"scanning 1 MiB of prose: {time.perf_counter() - started:.2f} s"
    )


if __name__ == "__main__":
    main()
