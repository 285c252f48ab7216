#!/bin/sh
# Session 22, call 1:
#   A. the GPU tests of the indexer path (the top-k's conversion: tk_convert; the higher floor at rank 4) and of
#      the conversion, on the tree;
#   B. the staged rows' higher floor: the warps' least (r1, HEAD's), their 4th least (r4, the tree's), 6th (r6):
#      topk_prefill and two staged decode cases, two interleaved rounds, --no-ceilings.
set -u
B=$(dirname "$0")
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done; }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
make -j16 tests/gpu/test_gpu_indexer tests/gpu/test_gpu_convert >"$OUT/build-tests.log" 2>&1; echo "build rc $?"
timeout 150 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer.txt" 2>&1; echo "test_gpu_indexer rc $?"; tail -2 "$OUT/test_gpu_indexer.txt"
timeout 60 ./tests/gpu/test_gpu_convert >"$OUT/test_gpu_convert.txt" 2>&1; echo "test_gpu_convert rc $?"; tail -1 "$OUT/test_gpu_convert.txt"
save
KV_FILE=kernels/topk.cu KV_VERSIONS="r1=v/r1 r4=. r6=v/r6" KV_ROUNDS=2 \
  KV_ARGS="--case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b128-32k,topk-decode-b1-128k" \
  timeout 330 sh "$B/gpu-kernel-versions.sh" >"$OUT/B.log" 2>&1; echo "B rc $?"
show r1; show r4; show r6
grep -h "FAIL\|mismatch" "$OUT"/*.err 2>/dev/null | head
save
