#!/bin/sh
# Session 26, call A: (1) call3.sh (../../2026-12-06-topk-by-index-h200/call3.sh, beside this script in the
# bundle: base 9eb22ed's top-k against by-index.patch, best first and by index, two rounds; atomics-vs-bulk);
# (2) the GPU indexer test on the patch; (3) issue 21's H200 bars with the PyTorch peer and the ceilings
# (run-gpu-kernels.sh): the decode logits with the ring of 3 (never run on an H200), the top-k both orders,
# gather and restore at 8k.
set -u
B=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
sh "$B/call3.sh"
echo "call3 done at $(( $(date +%s) - T0 )) s"
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build tests rc $?"
timeout 120 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer.txt" 2>&1; echo "test_gpu_indexer rc $?"
tail -2 "$OUT/test_gpu_indexer.txt"
save
echo "test done at $(( $(date +%s) - T0 )) s"
C=topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-4k-32k-by-index,topk-8k-32k-by-index,topk-4k-causal-32k-by-index
C=$C,dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b64-32k,dlogits-h64-b16-128k-dcp4
C=$C,gather-8k,gather-32k,restore-8k-pcp2,restore-32k-pcp4
PEER_TIMEOUT=100 KERNEL_TIMEOUT=150 timeout 260 sh bench/run-gpu-kernels.sh . "$OUT/kb" --case "$C" --check-rows 2 \
  >"$OUT/kb.log" 2>&1; echo "kb rc $?"
tail -3 "$OUT/kb.log"
grep -E '^ [a-z]|ceilings' "$OUT/kb/stdout.txt" 2>/dev/null
save
echo "all done at $(( $(date +%s) - T0 )) s"
