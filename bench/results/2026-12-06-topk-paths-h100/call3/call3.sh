#!/bin/sh
# Session 24, call 3: arr (a compacted key's place from its arrival in the histogram: the placing pass without
# atomics) against the tree (base); two interleaved rounds, --no-ceilings; then the GPU indexer test on arr.
set -u
B=$(dirname "$0")
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
KV_FILE=kernels/topk.cu KV_VERSIONS="base=. arr=v/arr" KV_ROUNDS=2 \
  KV_ARGS="--case topk-4k-32k,topk-8k-16k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b16-32k" \
  timeout 300 sh "$B/gpu-kernel-versions.sh" >"$OUT/A.log" 2>&1; echo "A rc $?"
show base; show arr
grep -h "FAIL\|mismatch\|error" "$OUT"/*.err 2>/dev/null | head
save
cp "$B/v/arr/topk_bins.cuh" kernels/topk_bins.cuh
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build rc $?"
timeout 150 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer-arr.txt" 2>&1; echo "test_gpu_indexer (arr) rc $?"
tail -2 "$OUT/test_gpu_indexer-arr.txt"
save
