#!/bin/sh
# Session 27, call E: the tree with dense-place.patch (as call D's bundle), issue 21's top-k cases through
# bench/run-gpu-kernels.sh: the PyTorch peer and the ceilings in the same run (kernels.json). Run:
#   FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callE.sh
set -u
T0=$(date +%s)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
C=topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b1-128k,topk-decode-b64-128k
PEER_TIMEOUT=90 KERNEL_TIMEOUT=120 timeout 220 sh bench/run-gpu-kernels.sh . "$OUT/kb" --case "$C" --check-rows 2 \
  >"$OUT/kb.log" 2>&1; echo "kb rc $?"
tail -3 "$OUT/kb.log"
grep -E '^ [a-z]|ceilings' "$OUT/kb/stdout.txt" 2>/dev/null
save
echo "all done at $(( $(date +%s) - T0 )) s"
