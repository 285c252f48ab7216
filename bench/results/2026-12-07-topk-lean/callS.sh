#!/bin/sh
# Session 30's call S: callR cut to the ~8 minutes of device time left: the tree against lean in three
# interleaved rounds (prefill cases only: the decode rows take the one kernel either way), then the GPU
# indexer test on lean with lean.patch's test. No peer run, no ncu. Prepare as for callR (prep.sh); run:
#   FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callS.sh
set -u
T0=$(date +%s)
B=$(cd "$(dirname "$0")" && pwd)
at() { echo "$1 at $(( $(date +%s) - T0 )) s"; }
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
KV_FILE=kernels/topk_bins.cuh KV_VERSIONS="tree=. lean=v/lean" KV_ROUNDS=3 \
  KV_ARGS="--case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k" \
  timeout 170 sh "$B/gpu-kernel-versions.sh" >"$OUT/versions.log" 2>&1; at "versions rc $?"
for f in "$OUT"/*-[123].json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.1f/%s" % (e["case"], e.get("median_us", -1), e["check"]["ok"]) for e in d["entries"]))' "$f"; done
save
cp "$B/v/lean/"* kernels/ && cp "$B/v/test_gpu_indexer.c" tests/gpu/
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; at "build tests rc $?"
timeout 170 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer-lean.txt" 2>&1; at "test_gpu_indexer (lean) rc $?"
tail -1 "$OUT/test_gpu_indexer-lean.txt"; grep "^FAIL" "$OUT/test_gpu_indexer-lean.txt" | cut -c1-200
grep "prefill-like" "$OUT/test_gpu_indexer-lean.txt" | cut -c1-200
save
at "all done"
