#!/bin/sh
# Session 26, call B (not run: no device time left): ncu of the prefill top-k, by index against best first
# (../2026-12-06-topk-by-index-h200/by-index.patch applied to the tree before tools/gpu-bundle.sh), 4096 x 32768,
# built with -lineinfo: the details page, the SASS page (for tools/ncu-sass-phases.py) and the source page
# with the CUDA lines of each. Run:
#   NVCC_EXTRA=-lineinfo FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callB.sh
set -u
T0=$(date +%s)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
grep NVCC_FLAGS Makefile | tail -1 # the -lineinfo NVCC_EXTRA appended
for v in topk_prefill_by_index:topk-4k-32k-by-index topk_prefill:topk-4k-32k; do
  k=${v%%:*} c=${v#*:}
  timeout 200 ncu -k regex:topk_kernel -c 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section SourceCounters --section InstructionStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    -o "$OUT/$c" "$KB" --kernel "$k" --case "$c" --reps 1 --warmup 0 --no-ceilings >"$OUT/ncu-$c.log" 2>&1
  echo "$c ncu rc $? at $(( $(date +%s) - T0 )) s"
  ncu --import "$OUT/$c.ncu-rep" >"$OUT/ncu-$c.txt" 2>&1
  ncu --import "$OUT/$c.ncu-rep" --page source --print-source sass --csv >"$OUT/sass-$c.csv" 2>"$OUT/sass-$c.err"
  ncu --import "$OUT/$c.ncu-rep" --page source --print-source cuda,sass --csv >"$OUT/src-$c.csv" 2>"$OUT/src-$c.err"
  gzip -9 "$OUT/sass-$c.csv" "$OUT/src-$c.csv"
  [ $(stat -c %s "$OUT/sass-$c.csv.gz") -gt 10000 ] && rm -f "$OUT/$c.ncu-rep"
  grep -E "Duration|Elapsed Cycles|Warp Cycles Per Issued|Issued Warp|Executed Ipc A|Executed Instructions  |Registers Per|No Eligible" "$OUT/ncu-$c.txt" | head -12
  save
done
ls -la "$OUT"
echo "done at $(( $(date +%s) - T0 )) s"
