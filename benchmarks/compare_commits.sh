#!/usr/bin/env bash
# B4 (and B1, B2, and with valgrind installed the instructions per turn) through Agent + @tool for
# the library at an earlier commit and at this checkout, processes interleaved, with this
# checkout's benchmark scripts for both.
#
#   bash benchmarks/compare_commits.sh <commit> [repetitions]
#
# Prints one JSON line per process, prefixed with "b4|b1 before|after <backend> [<runs>]".
set -euo pipefail
commit="$1"
reps="${2:-3}"
here="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-python}"
work="$(mktemp -d)"
trap 'git -C "$here" worktree remove --force "$work/before" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$here" worktree add -q --detach "$work/before" "$commit"
mkdir -p "$work/scripts" && cp -r "$here/benchmarks" "$work/scripts/"
before="$work/scripts:$work/before:$work/before/providers"
after="$work/scripts:$here:$here/providers"
cd "$work"
for _ in $(seq "$reps"); do
  for backend in asyncio trio; do
    for runs in 1000 10000; do
      for which in before after; do
        path=$before; [ "$which" = after ] && path=$after
        echo "b4 $which $backend $runs $(PYTHONPATH=$path "$py" -m benchmarks.b4_many_agents --impl agent --runs "$runs" --backend "$backend")"
      done
    done
  done
done
for backend in asyncio trio; do
  for which in before after; do
    path=$before; [ "$which" = after ] && path=$after
    echo "b1 $which $backend $(PYTHONPATH=$path "$py" -m benchmarks.b1_turn_overhead --backend "$backend" --turns 100 1000)"
  done
done
for _ in $(seq "$reps"); do
  for backend in asyncio trio; do
    for which in before after; do
      path=$before; [ "$which" = after ] && path=$after
      echo "b2 $which $backend $(PYTHONPATH=$path "$py" -m benchmarks.b2_streaming --backend "$backend")"
    done
  done
done
if command -v valgrind >/dev/null; then
  for backend in asyncio trio; do
    for which in before after; do
      path=$before; [ "$which" = after ] && path=$after
      echo "instructions $which $backend $(PYTHONPATH=$path "$py" -m benchmarks.instructions --backend "$backend")"
    done
  done
fi
