#!/bin/sh
# Session 29, call M. On the tree as landed (23b901c), with three versions in gpu-bundle/v/ (each a folder of
# kernels/topk_bins.cuh and kernels/topk.cu, copied from the working tree when each was ready):
#   pad      the ranking by counting over bins widened to whole 4-key steps (zero keys padding b*'s keys
#            and the winners to a multiple of 4): four independent counts, no remainder loop;
#   padcolw  pad + the compaction's column writing word by word (no shifting of the mask's words).
#   padcc    padcolw + each count by the borrow of a 64-bit subtraction (sub.cc, subc.cc, addc: three
#            instructions where a compare and a selected add took four); not modelled bit for bit in the
#            emulation (its model is the compare), so the GPU test and the bench's exact checks are its proof.
# 1. three interleaved rounds of tree, pad, padcolw, padcc (tools/gpu-kernel-versions.sh, --no-ceilings);
# 2. ncu of padcc's prefill top-k, 4096 x 32768 ($KB is the last-built version's program; built with
#    NVCC_EXTRA=-lineinfo), details page and SASS page (tools/ncu-sass-phases.py);
# 3. the GPU indexer test on padcc (its files copied in, the test rebuilt, the tree's put back).
# Run: NVCC_EXTRA=-lineinfo FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callM.sh
set -u
T0=$(date +%s)
B=$(cd "$(dirname "$0")" && pwd)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
KV_FILE=kernels/topk_bins.cuh KV_VERSIONS="tree=. pad=v/pad padcolw=v/padcolw padcc=v/padcc" KV_ROUNDS=3 \
  KV_ARGS="--case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b64-128k" \
  timeout 420 sh "$B/gpu-kernel-versions.sh" >"$OUT/versions.log" 2>&1; echo "versions rc $? at $(( $(date +%s) - T0 )) s"
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
mkdir -p "$OUT/tree" && cp kernels/topk_bins.cuh kernels/topk.cu "$OUT/tree/" && cp "$B/v/padcc/"* kernels/
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build tests rc $?"
timeout 150 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer-padcc.txt" 2>&1; echo "test_gpu_indexer (padcc) rc $?"
cp "$OUT/tree/"* kernels/ && rm -rf "$OUT/tree"
tail -1 "$OUT/test_gpu_indexer-padcc.txt"; grep "^FAIL" "$OUT/test_gpu_indexer-padcc.txt" | cut -c1-200
save
echo "all done at $(( $(date +%s) - T0 )) s"
