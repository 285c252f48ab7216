#!/bin/sh
# Session 29, call O: not run (the session's last 288 s of device time were too few for a start); for the
# next session. On the tree as landed (1d611f0: the ranking by whole 4-key steps and the list by words),
# built with NVCC_EXTRA=-lineinfo:
# 1. ncu of the prefill top-k, 4096 x 32768: details page and SASS page (tools/ncu-sass-phases.py);
# 2. two interleaved rounds of v2 (the ranking's bin without topk_bin_key's floor test, every winner being
#    above the floor) against the tree, the prefill cases only.
# Prepare: sh tools/gpu-bundle.sh (trim the tarball's bench/results as the earlier folders say);
#   mkdir -p gpu-bundle/v/v2 && cp kernels/topk_bins.cuh gpu-bundle/v/v2/ &&
#   (cd gpu-bundle/v/v2 && patch -p2 < ../../../bench/results/2026-12-07-topk-rank-pad/v2.patch);
#   cp this script into gpu-bundle/. Run:
#   NVCC_EXTRA=-lineinfo FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callO.sh
set -u
T0=$(date +%s)
B=$(cd "$(dirname "$0")" && pwd)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
c=topk-4k-32k
timeout 60 ncu -k regex:topk_kernel -c 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
  --section SourceCounters --section InstructionStats --section MemoryWorkloadAnalysis --section SchedulerStats \
  -o "$OUT/$c" "$KB" --kernel topk_prefill --case "$c" --reps 1 --warmup 0 --no-ceilings >"$OUT/ncu-$c.log" 2>&1
echo "$c ncu rc $? at $(( $(date +%s) - T0 )) s"
ncu --import "$OUT/$c.ncu-rep" >"$OUT/ncu-$c.txt" 2>&1
ncu --import "$OUT/$c.ncu-rep" --page source --print-source sass --csv >"$OUT/sass-$c.csv" 2>"$OUT/sass-$c.err"
gzip -9 "$OUT/sass-$c.csv"
[ "$(stat -c %s "$OUT/sass-$c.csv.gz")" -gt 10000 ] && rm -f "$OUT/$c.ncu-rep"
grep -E "Duration|Warp Cycles Per Issued|Issued Warp|Executed Instructions  |Registers Per|No Eligible" "$OUT/ncu-$c.txt" | head -8
save
KV_FILE=kernels/topk_bins.cuh KV_VERSIONS="tree=. v2=v/v2" KV_ROUNDS=2 \
  KV_ARGS="--case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k" \
  timeout 150 sh "$B/gpu-kernel-versions.sh" >"$OUT/versions.log" 2>&1; echo "versions rc $? at $(( $(date +%s) - T0 )) s"
for f in "$OUT"/*-[12].json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f/%s" % (e["case"], e.get("median_us", -1), e["check"]["ok"]) for e in d["entries"]))' "$f"; done
save
echo "all done at $(( $(date +%s) - T0 )) s"
