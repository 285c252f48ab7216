#!/bin/sh
# Session 24, call 1:
#   A. the prefill top-k at 1024 threads a block: the staged bin path alone (radix path, sort fallback and
#      unstaged rows replaced by __trap: they are what needs 120 registers) at 512 (s512) and 1024 (t1024)
#      threads, against the tree (base); --no-ceilings, two interleaved rounds.
#   H. on an H200 only: the decode logits (ring of 3) with the peer and the ceilings, and the GPU indexer test.
set -u
B=$(dirname "$0")
T0=$(date +%s)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
KV_FILE=kernels/topk.cu KV_VERSIONS="base=. s512=v/s512 t1024=v/t1024" KV_ROUNDS=2 \
  KV_ARGS="--case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-8k-16k" \
  timeout 330 sh "$B/gpu-kernel-versions.sh" >"$OUT/A.log" 2>&1; echo "A rc $?"
show base; show s512; show t1024
grep -h "FAIL\|mismatch\|error" "$OUT"/*.err 2>/dev/null | head
grep -h "registers\|spill" "$OUT"/build-*.log | head
save
grep -q H200 "$OUT/gpu.txt" || { echo "H skipped: not an H200"; exit 0; }
[ $(( $(date +%s) - T0 )) -gt 300 ] && { echo "H skipped: no time"; exit 0; }
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build rc $?"
timeout 120 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer.txt" 2>&1; echo "test_gpu_indexer rc $?"
tail -2 "$OUT/test_gpu_indexer.txt"
save
C=dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b64-32k,dlogits-h64-b16-128k-dcp4
PEER_TIMEOUT=60 KERNEL_TIMEOUT=120 timeout 170 sh bench/run-gpu-kernels.sh . "$OUT/kb" --case "$C" --check-rows 1 \
  >"$OUT/H.log" 2>&1; echo "H rc $?"
tail -3 "$OUT/H.log"
grep -E '^ [a-z]|ceilings' "$OUT/kb/stdout.txt" 2>/dev/null
save
