#!/usr/bin/env bash
# B4 (and B1, B2, and with valgrind installed the instructions per turn) through Agent + @tool for
# the library at an earlier commit and at this checkout, processes interleaved, with this
# checkout's benchmark scripts for both.
#
#   bash benchmarks/compare_commits.sh <commit> [repetitions]
#
# Prints one JSON line per process, prefixed with "<bench> <backend> [<runs>] before|after".
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

# pair <label> <module> <args...>: the module for the library before, then after.
pair() {
  local label="$1" module="$2"
  shift 2
  for which in before after; do
    path=$before; [ "$which" = after ] && path=$after
    echo "$label $which $(PYTHONPATH=$path "$py" -m "benchmarks.$module" "$@")"
  done
}

for _ in $(seq "$reps"); do
  for backend in asyncio trio; do
    for runs in 1000 10000; do
      pair "b4 $backend $runs" b4_many_agents --impl agent --runs "$runs" --backend "$backend"
    done
  done
done
for backend in asyncio trio; do
  pair "b1 $backend" b1_turn_overhead --backend "$backend" --turns 100 1000
done
for _ in $(seq "$reps"); do
  for backend in asyncio trio; do
    pair "b2 $backend" b2_streaming --backend "$backend"
  done
done
if command -v valgrind >/dev/null; then
  for backend in asyncio trio; do
    pair "instructions $backend" instructions --backend "$backend"
  done
fi
