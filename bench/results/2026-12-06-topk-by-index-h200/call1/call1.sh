#!/bin/sh
# Session 25, call 1: the prefill top-k by index (CPLAB_TOPK_BY_INDEX: winners marked in a bitmap, placed by
# the marks before their column; no ranking) against the tree's best-first top-k (base = HEAD's topk files);
# the new build's best-first cases too (what the by-index code costs the old order). Two interleaved rounds,
# --no-ceilings; then the GPU indexer test on the new build.
set -u
B=$(cd "$(dirname "$0")" && pwd)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f/%s" % (e["case"], e["median_us"], e.get("check",{}).get("ok","?") if isinstance(e.get("check"),dict) else "?") for e in d["entries"]))' "$f"; done; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
cp "$KB" ./kb-new
mkdir -p own && cp kernels/topk.cu kernels/topk_bins.cuh kernels/topk_block.cuh kernels/topk_radix.cuh own/
cp "$B"/v/base/* kernels/
make -j16 bench/cplab-kernel-bench >"$OUT/build-base.log" 2>&1 || { echo base build failed; tail -20 "$OUT/build-base.log"; }
cp "$KB" ./kb-base
cp own/* kernels/
make -j16 bench/cplab-kernel-bench tests/gpu/test_gpu_indexer >"$OUT/build-new.log" 2>&1 || { echo new build failed; tail -20 "$OUT/build-new.log"; }
BF=topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k
BI=topk-4k-32k-by-index,topk-8k-32k-by-index,topk-4k-causal-32k-by-index
for r in 1 2; do
  for v in base:kb-base:$BF new:kb-new:$BF newidx:kb-new:$BI; do
    l=${v%%:*} rest=${v#*:} bin=${rest%%:*} cases=${rest#*:}
    timeout 200 ./$bin --case "$cases" --no-ceilings --commit "$l" --json "$OUT/$l-$r.json" >"$OUT/$l-$r.txt" 2>"$OUT/$l-$r.err"; echo "$l round $r rc $?"
  done
  save
done
show base; show new; show newidx
grep -h "check FAIL\|mismatch\|rror" "$OUT"/*.err 2>/dev/null | head
timeout 200 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer.txt" 2>&1; echo "test_gpu_indexer rc $?"
grep -E "FAIL|checks" "$OUT/test_gpu_indexer.txt" | cut -c1-220
save
