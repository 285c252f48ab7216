#!/bin/sh
# Session 18, call 4: decode logits version 8 (the tree: a run tile by one bulk copy of thread 0 on the
# ring buffer's mbarrier, not 528 cp.async of 16 bytes) against version 7 (v/v7), three interleaved
# rounds, --no-ceilings; then the GPU indexer test on version 8.
set -u
B=$(dirname "$0")
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done; }
KV_FILE=kernels/indexer_decode.cu KV_VERSIONS="v7=v/v7 v8=." KV_ROUNDS=3 \
  KV_ARGS="--case dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b64-32k,dlogits-h64-b16-128k-dcp4,dlogits-h64-b128-32k" \
  timeout 200 sh "$B/gpu-kernel-versions.sh" >"$OUT/A.log" 2>&1; echo "A rc $?"
show v7; show v8
timeout 120 make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-test.log" 2>&1; echo "build test rc $?"
timeout 120 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer-v8.txt" 2>&1; echo "test_gpu_indexer v8 rc $?"; tail -1 "$OUT/test_gpu_indexer-v8.txt"
