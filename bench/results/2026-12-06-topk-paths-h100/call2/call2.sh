#!/bin/sh
# Session 24, call 2: the tree (base) against s512 (the staged bin path alone: the rare paths trapped), ni (the
# radix path and the sort as __noinline__ functions) and clk (the tree with thread 0's phase clocks, printed a
# launch); two interleaved rounds, --no-ceilings.
set -u
B=$(dirname "$0")
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
KV_FILE=kernels/topk.cu KV_VERSIONS="base=. s512=v/s512 ni=v/ni clk=v/clk" KV_ROUNDS=2 \
  KV_ARGS="--case topk-4k-32k,topk-8k-16k,topk-4k-causal-32k" \
  timeout 400 sh "$B/gpu-kernel-versions.sh" >"$OUT/A.log" 2>&1; echo "A rc $?"
show base; show s512; show ni; show clk
grep -h "FAIL\|mismatch\|error" "$OUT"/*.err 2>/dev/null | head
for f in "$OUT"/clk-1.txt; do grep "^clk" "$f" | awk '{print $5}' | uniq -c; done
grep "^clk" "$OUT/clk-1.txt" | awk '$5==32768' | tail -2
grep "^clk" "$OUT/clk-1.txt" | awk '$5==16384' | tail -2
save
# the GPU indexer test (its top-k cases take every path: radix, sort, unstaged, cluster, split) on ni's kernels
cp "$B/v/ni/topk_radix.cuh" kernels/topk_radix.cuh
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build rc $?"
timeout 150 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer-ni.txt" 2>&1; echo "test_gpu_indexer (ni) rc $?"
tail -2 "$OUT/test_gpu_indexer-ni.txt"
save
