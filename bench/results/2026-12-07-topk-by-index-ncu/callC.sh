#!/bin/sh
# Session 27, call C: session 26's callB (../2026-12-07-topk-by-index-h100/callB.sh, beside this script in
# the bundle: ncu of the prefill top-k by index against best first, 4096 x 32768, -lineinfo build of
# ../2026-12-06-topk-by-index-h200/by-index.patch), then, only where the card is an H200, issue 21's
# decode-logits and gather / restore cases with the PyTorch peer and the ceilings (item 2's bar is read
# on an H200, where the ring of 3 never ran). Run:
#   NVCC_EXTRA=-lineinfo FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callC.sh
set -u
B=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
sh "$B/callB.sh"
echo "callB done at $(( $(date +%s) - T0 )) s"
case $(nvidia-smi -i 0 --query-gpu=name --format=csv,noheader) in *H200*) ;; *) echo "not an H200: no bars"; exit 0 ;; esac
C=dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b16-128k-dcp4
C=$C,gather-8k,gather-32k,restore-8k-pcp2,restore-32k-pcp4,topk-4k-32k
PEER_TIMEOUT=100 KERNEL_TIMEOUT=150 timeout 250 sh bench/run-gpu-kernels.sh . "$OUT/kb" --case "$C" --check-rows 2 \
  >"$OUT/kb.log" 2>&1; echo "kb rc $?"
tail -3 "$OUT/kb.log"
grep -E '^ [a-z]|ceilings' "$OUT/kb/stdout.txt" 2>/dev/null
save
echo "all done at $(( $(date +%s) - T0 )) s"
