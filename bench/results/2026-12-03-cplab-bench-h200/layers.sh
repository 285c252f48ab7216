#!/bin/sh
# cplab-bench's layout comparison (GLM-5, 4 ranks on one H200, eager), the cases of
# bench/results/2026-12-02-cplab-bench-h200/ without the full-graph mode; run by
# tools/gpu-kernel-prof.sh in its build directory; files in $OUT/layers.tar.gz
set -u
L="$OUT/layers"; mkdir -p "$L"
make -j16 bench/cplab-bench >"$L/build.log" 2>&1 || { tail -20 "$L/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv >"$L/gpu.txt" 2>&1
B=./bench/cplab-bench
run() {
  name=$1; shift
  echo "$B $*" >"$L/$name.cmd"
  timeout 200 $B "$@" -o "$L/$name" 2>"$L/$name.err"; echo "$name: exit $?"
  tail -2 "$L/$name.err"
}
run glm-5-4rank-prefill --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,pcp4,pcp4dcp4 --prefill 32768
run glm-5-4rank-decode --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,pcp4,tp4dcp4,pcp4dcp4 --decode 32768
run glm-5-4rank-b16 --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,tp4dcp4 --decode 32768 --batch 16
tar czf "$OUT/layers.tar.gz" -C "$OUT" layers && rm -rf "$L"
