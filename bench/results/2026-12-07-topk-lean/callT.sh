#!/bin/sh
# Session 30's call T: for the last ~5 minutes of device time: one run of the tree's prefill cases (the
# program gpu-kernel-prof.sh built), then lean and lean.patch's test copied in, the program and the GPU
# indexer test built together, one run of lean, the test. Prepare as for callR (prep.sh); run:
#   FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callT.sh
set -u
T0=$(date +%s)
B=$(cd "$(dirname "$0")" && pwd)
at() { echo "$1 at $(( $(date +%s) - T0 )) s"; }
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
A="--kernel topk_prefill --case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k --no-ceilings"
timeout 40 "$KB" $A --commit tree --json "$OUT/tree-1.json" >"$OUT/tree-1.txt" 2>"$OUT/tree-1.err"; at "tree rc $?"
grep -E "^ topk" "$OUT/tree-1.txt"; save
cp "$B/v/lean/"* kernels/ && cp "$B/v/test_gpu_indexer.c" tests/gpu/
make -j16 bench/cplab-kernel-bench tests/gpu/test_gpu_indexer >"$OUT/build-lean.log" 2>&1; at "build rc $?"
timeout 40 "$KB" $A --commit lean --json "$OUT/lean-1.json" >"$OUT/lean-1.txt" 2>"$OUT/lean-1.err"; at "lean rc $?"
grep -E "^ topk" "$OUT/lean-1.txt"; save
timeout 170 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer-lean.txt" 2>&1; at "test_gpu_indexer (lean) rc $?"
tail -1 "$OUT/test_gpu_indexer-lean.txt"; grep "^FAIL" "$OUT/test_gpu_indexer-lean.txt" | cut -c1-200
save
at "all done"
