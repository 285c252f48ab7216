#!/bin/sh
# NOT RUN (session 28: every start refused until the device time was nearly spent; calls J and K ran its
# test and a round of its timing). Its ncu step is in ../2026-12-07-topk-rank2/callL.sh, for the next session.
# Session 28, call H: ncu of the prefill top-k with the compaction by mask (the tree, built with -lineinfo),
# 4096 x 32768: the details page and the SASS page (tools/ncu-sass-phases.py); then the GPU indexer test
# (150 s: the 60 s of call G were too short for its 150 random logits cases). Run:
#   NVCC_EXTRA=-lineinfo FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callH.sh
set -u
T0=$(date +%s)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1 & BT=$!
c=topk-4k-32k
timeout 200 ncu -k regex:topk_kernel -c 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
  --section SourceCounters --section InstructionStats --section MemoryWorkloadAnalysis --section SchedulerStats \
  -o "$OUT/$c" "$KB" --kernel topk_prefill --case "$c" --reps 1 --warmup 0 --no-ceilings >"$OUT/ncu-$c.log" 2>&1
echo "$c ncu rc $? at $(( $(date +%s) - T0 )) s"
ncu --import "$OUT/$c.ncu-rep" >"$OUT/ncu-$c.txt" 2>&1
ncu --import "$OUT/$c.ncu-rep" --page source --print-source sass --csv >"$OUT/sass-$c.csv" 2>"$OUT/sass-$c.err"
gzip -9 "$OUT/sass-$c.csv"
[ "$(stat -c %s "$OUT/sass-$c.csv.gz")" -gt 10000 ] && rm -f "$OUT/$c.ncu-rep"
grep -E "Duration|Elapsed Cycles|Warp Cycles Per Issued|Issued Warp|Executed Ipc A|Executed Instructions  |Registers Per|No Eligible" "$OUT/ncu-$c.txt" | head -12
save
wait $BT; echo "build tests rc $?"
timeout 150 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer.txt" 2>&1; echo "test_gpu_indexer rc $?"
tail -1 "$OUT/test_gpu_indexer.txt"; grep "^FAIL" "$OUT/test_gpu_indexer.txt" | cut -c1-200
save
echo "all done at $(( $(date +%s) - T0 )) s"
