#!/bin/sh
# Usage: bench/run-numeric.sh [BUILD_DIR]   (default: build)
# Throughput of the numeric reference (cplab-sim --numeric): sampled rows per
# second at GLM-5 shapes (pr56157: 64 heads, 32 indexer heads, contexts to 32k)
# and DeepSeek-V3.2 shapes (mixed: 128 heads over TP2, 64 indexer heads), in
# one process and spread over 2 MPI processes. Writes
# bench/results/DATE-numeric-bench-cpu.json with the machine, date, commit
# and commands.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
sim="$build/cplab-sim"
date=$(date -u +%Y-%m-%d)
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mpirun=$(command -v mpirun || true)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows=""
# one SCENARIO SHAPE NP: run and append a JSON row.
one() {
  if [ "$3" -gt 1 ]; then launcher="$mpirun -np $3"; else launcher=""; fi
  cmd="$launcher cplab-sim --scenario $1 --numeric -v"
  start=$(date +%s.%N)
  $launcher "$sim" --scenario "$1" --numeric -v >/dev/null 2>"$tmp/err"
  end=$(date +%s.%N)
  line=$(grep "numeric pass:" "$tmp/err" | head -1)
  n=$(echo "$line" | sed 's/.*numeric pass: \([0-9]*\) sampled rows in \([0-9.]*\) s.*/\1/')
  s=$(echo "$line" | sed 's/.*numeric pass: \([0-9]*\) sampled rows in \([0-9.]*\) s.*/\2/')
  row=$(python3 -c "import json,sys; n,s,w=int('$n'),float('$s'),float('$end')-float('$start'); print(json.dumps({'scenario':'$1','shapes':'$2','processes':$3,'command':'$cmd','sampled_rows':n,'numeric_seconds':s,'rows_per_second':round(n/s,2),'wall_seconds':round(w,2)}))")
  echo "$row"
  rows="$rows${rows:+,}$row"
}
one pr56157 glm-5 1
one mixed deepseek-v3.2 1
if [ -n "$mpirun" ]; then one pr56157 glm-5 2; one mixed deepseek-v3.2 2; fi
out="$top/bench/results/$date-numeric-bench-cpu.json"
python3 - "$out" "$date" "$commit" "$cpu" "$(nproc)" "[$rows]" <<'PY'
import json, sys
out, date, commit, cpu, cores, rows = sys.argv[1:]
doc = {"machine": {"cpu": cpu, "cores": int(cores)}, "date": date, "commit": commit,
       "command": "bench/run-numeric.sh", "what": "cplab-sim --numeric: sampled rows per second "
       "(numeric_seconds: the slowest process inside the numeric pass; wall: the whole run)",
       "results": json.loads(rows)}
json.dump(doc, open(out, "w"), indent=2)
open(out, "a").write("\n")
PY
echo "wrote $out"
