#!/bin/sh
# Session 29, call N: padcolw (call M's second version, as committed after it) against the tree (23b901c),
# three interleaved rounds (call M's run stopped after round 1 where padcc failed), then the GPU indexer
# test on padcolw. Run: FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callN.sh
set -u
T0=$(date +%s)
B=$(cd "$(dirname "$0")" && pwd)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
KV_FILE=kernels/topk_bins.cuh KV_VERSIONS="tree=. padcolw=v/padcolw" KV_ROUNDS=3 \
  KV_ARGS="--case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b64-128k" \
  timeout 240 sh "$B/gpu-kernel-versions.sh" >"$OUT/versions.log" 2>&1; echo "versions rc $? at $(( $(date +%s) - T0 )) s"
for f in "$OUT"/*-[123].json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f/%s" % (e["case"], e.get("median_us", -1), e["check"]["ok"]) for e in d["entries"]))' "$f"; done
save
mkdir -p "$OUT/tree" && cp kernels/topk_bins.cuh kernels/topk.cu "$OUT/tree/" && cp "$B/v/padcolw/"* kernels/
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build tests rc $?"
timeout 150 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer-padcolw.txt" 2>&1; echo "test_gpu_indexer (padcolw) rc $?"
cp "$OUT/tree/"* kernels/ && rm -rf "$OUT/tree"
tail -1 "$OUT/test_gpu_indexer-padcolw.txt"; grep "^FAIL" "$OUT/test_gpu_indexer-padcolw.txt" | cut -c1-200
save
echo "all done at $(( $(date +%s) - T0 )) s"
