#!/bin/sh
# Usage: bench/run-cpu.sh [BUILD_DIR]   (default: build)
# Runs the CPU benchmarks and writes bench/results/DATE-plan-bench-HOST.json
# with the machine, date, commit and command beside the numbers.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
make -C "$build" bench >/dev/null
date=$(date -u +%Y-%m-%d)
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cores=$(nproc)
# record NAME PROGRAM [ARGS...]: run a benchmark, wrap its JSON with the context.
record() {
  name=$1; shift
  out="$top/bench/results/$date-$name-cpu.json"
  tmp=$(mktemp)
  "$@" -o "$tmp"
  cmd=$(echo "$*" | sed "s|$top/||")
  python3 - "$tmp" "$out" "$date" "$commit" "$cpu" "$cores" "$cmd" <<'PY'
import json, sys
src, out, date, commit, cpu, cores, command = sys.argv[1:]
doc = {"machine": {"cpu": cpu, "cores": int(cores)}, "date": date, "commit": commit,
       "command": command, "results": json.load(open(src))}
json.dump(doc, open(out, "w"), indent=2)
open(out, "a").write("\n")
PY
  rm -f "$tmp"
  echo "wrote $out"
}
record plan-bench "$build/bench/cplab-plan-bench"
record trace-bench "$build/bench/cplab-trace-bench" --reps 5
record diff-bench "$build/bench/cplab-diff-bench"
