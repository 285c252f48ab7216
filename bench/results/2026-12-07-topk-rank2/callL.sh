#!/bin/sh
# Session 28, call L (not run: no device time left): for the next session. On the tree as landed (8a4bf67,
# the compaction by mask), with rank2.patch applied to a copy of its topk_bins.cuh in gpu-bundle/v/rank2/:
#   1. three interleaved rounds of rank2 against the tree (tools/gpu-kernel-versions.sh, --no-ceilings);
#   2. ncu of the tree's prefill top-k, 4096 x 32768 (the build is the tree's again after step 1; add
#      NVCC_EXTRA=-lineinfo for ncu's source page): the details page and the SASS page
#      (tools/ncu-sass-phases.py), the phases after the compaction by mask;
#   3. the GPU indexer test on rank2 (its file copied in, the test rebuilt, the tree's file put back).
# Prepare: sh tools/gpu-bundle.sh (then trim the tarball's bench/results as the earlier folders say);
#   mkdir -p gpu-bundle/v/rank2 && cp kernels/topk_bins.cuh gpu-bundle/v/rank2/ &&
#   (cd gpu-bundle/v/rank2 && patch -p2 < ../../../bench/results/2026-12-07-topk-rank2/rank2.patch);
#   cp this script into gpu-bundle/. Run:
#   NVCC_EXTRA=-lineinfo FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callL.sh
set -u
T0=$(date +%s)
B=$(cd "$(dirname "$0")" && pwd)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
KV_FILE=kernels/topk_bins.cuh KV_VERSIONS="rank2=v/rank2 tree=." KV_ROUNDS=3 \
  KV_ARGS="--case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b64-128k" \
  timeout 240 sh "$B/gpu-kernel-versions.sh" >"$OUT/versions.log" 2>&1; echo "versions rc $? at $(( $(date +%s) - T0 )) s"
for f in "$OUT"/*-[123].json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f/%s" % (e["case"], e["median_us"], e["check"]["ok"]) for e in d["entries"]))' "$f"; done
save
c=topk-4k-32k
timeout 150 ncu -k regex:topk_kernel -c 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
  --section SourceCounters --section InstructionStats --section MemoryWorkloadAnalysis --section SchedulerStats \
  -o "$OUT/$c" "$KB" --kernel topk_prefill --case "$c" --reps 1 --warmup 0 --no-ceilings >"$OUT/ncu-$c.log" 2>&1
echo "$c ncu rc $? at $(( $(date +%s) - T0 )) s"
ncu --import "$OUT/$c.ncu-rep" >"$OUT/ncu-$c.txt" 2>&1
ncu --import "$OUT/$c.ncu-rep" --page source --print-source sass --csv >"$OUT/sass-$c.csv" 2>"$OUT/sass-$c.err"
gzip -9 "$OUT/sass-$c.csv"
[ "$(stat -c %s "$OUT/sass-$c.csv.gz")" -gt 10000 ] && rm -f "$OUT/$c.ncu-rep"
grep -E "Duration|Elapsed Cycles|Warp Cycles Per Issued|Issued Warp|Executed Ipc A|Executed Instructions  |Registers Per|No Eligible" "$OUT/ncu-$c.txt" | head -12
save
cp kernels/topk_bins.cuh "$OUT/tree-topk_bins.cuh" && cp "$B/v/rank2/topk_bins.cuh" kernels/
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build tests rc $?"
timeout 150 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer-rank2.txt" 2>&1; echo "test_gpu_indexer (rank2) rc $?"
cp "$OUT/tree-topk_bins.cuh" kernels/topk_bins.cuh && rm -f "$OUT/tree-topk_bins.cuh"
tail -1 "$OUT/test_gpu_indexer-rank2.txt"; grep "^FAIL" "$OUT/test_gpu_indexer-rank2.txt" | cut -c1-200
save
echo "all done at $(( $(date +%s) - T0 )) s"
