#!/bin/sh
# Session 27, call F: the bins pass over the dense list too (dense-bins.patch, applied to the tree before
# tools/gpu-bundle.sh: the columns copied into the list, a barrier, then the bins made over it shared out
# evenly) against base (c517938's topk_bins.cuh: only the placing pass over the list, in gpu-bundle/v/base/),
# three interleaved rounds through tools/gpu-kernel-versions.sh, --no-ceilings; then the GPU indexer test.
# Run: FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callF.sh
set -u
B=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
KV_FILE=kernels/topk_bins.cuh KV_VERSIONS="base=v/base bins=." KV_ROUNDS=3 \
  KV_ARGS="--case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b64-128k" \
  timeout 200 sh "$B/gpu-kernel-versions.sh"; echo "versions rc $? at $(( $(date +%s) - T0 )) s"
for f in "$OUT"/*-[123].json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f/%s" % (e["case"], e["median_us"], e["check"]["ok"]) for e in d["entries"]))' "$f"; done
save
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build tests rc $?"
timeout 60 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer.txt" 2>&1; echo "test_gpu_indexer rc $?"
tail -1 "$OUT/test_gpu_indexer.txt"
save
echo "all done at $(( $(date +%s) - T0 )) s"
