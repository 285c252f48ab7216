#!/bin/sh
# Session 25, call 3: the by-index path as its own kernel (TOPK_ROWS_IDX) with the next row's stage issued
# after the marking pass (call 1's, issued before it, took 469 us), against base (HEAD's
# best-first top-k); the tree's best-first kernel too (no by-index code left in it). Two interleaved rounds,
# --no-ceilings. (Cut to fit the session's last device minutes: no GPU test, no causal or decode best-first cases.)
# Not run in session 25 (no device time left). To run it: apply this folder's by-index.patch to the tree, make the
# bundle (tools/gpu-bundle.sh), put 9eb22ed's kernels/topk.cu, topk_bins.cuh, topk_block.cuh, topk_radix.cuh
# in gpu-bundle/v/base/, this script and atomics-vs-bulk.cu in gpu-bundle/, then
#   FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/call3.sh
set -u
B=$(cd "$(dirname "$0")" && pwd)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f/%s" % (e["case"], e["median_us"], e["check"]["ok"]) for e in d["entries"]))' "$f"; done; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
cp "$KB" ./kb-tree
mkdir -p own && cp kernels/topk.cu kernels/topk_bins.cuh kernels/topk_block.cuh kernels/topk_radix.cuh own/
cp "$B"/v/base/* kernels/
make -j16 bench/cplab-kernel-bench >"$OUT/build-base.log" 2>&1 || { echo base build failed; tail -20 "$OUT/build-base.log"; }
cp "$KB" ./kb-base
cp own/* kernels/
make -j16 bench/cplab-kernel-bench >"$OUT/build-tree.log" 2>&1 || { echo tree build failed; tail -20 "$OUT/build-tree.log"; }
BF=topk-4k-32k,topk-8k-32k
BI=topk-4k-32k-by-index,topk-8k-32k-by-index,topk-4k-causal-32k-by-index
for r in 1 2; do
  for v in base:base:$BF tree:tree:$BF idx:tree:$BI; do
    l=${v%%:*} rest=${v#*:} bin=${rest%%:*} cases=${rest#*:}
    timeout 200 ./kb-$bin --case "$cases" --no-ceilings --commit "$l" --json "$OUT/$l-$r.json" >"$OUT/$l-$r.txt" 2>"$OUT/$l-$r.err"; echo "$l round $r rc $?"
  done
  save
done
for l in base tree idx; do show $l; done
# the guess alone (README.md): atomics-vs-bulk.cu, copied beside this script in the bundle
if [ -f "$B/atomics-vs-bulk.cu" ]; then
  "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" -gencode arch=compute_90a,code=sm_90a -std=c++17 -O3 -Ikernels "$B/atomics-vs-bulk.cu" -o avb >"$OUT/avb-build.log" 2>&1 &&
    timeout 60 ./avb | tee "$OUT/avb.txt"
fi
save
