#!/bin/sh
# Session 18, call 1:
#   A. the GPU tests of the gather (gen) and the restore on the tree (57859e2's simplified kernels);
#   B. gather and restore of 57859e2^ (old) against the tree's (new), three interleaved rounds, --no-ceilings;
#   C. every issue-21 kernel with its PyTorch peer and the ceilings in one run (bench/run-gpu-kernels.sh).
set -u
B=$(dirname "$0")
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done; }
make -j16 tests/gpu/test_gpu_restore tests/gpu/test_gpu_gen >"$OUT/build-tests.log" 2>&1; echo "build rc $?"
for t in restore gen; do
  ./tests/gpu/test_gpu_$t >"$OUT/test_gpu_$t.txt" 2>&1; echo "test_gpu_$t rc $?"; tail -1 "$OUT/test_gpu_$t.txt"
done
KV_FILE=kernels/gather.cu KV_VERSIONS="old=v/old new=." KV_ROUNDS=3 \
  KV_ARGS="--case gather-8k,gather-32k,gather-128k,restore-8k-pcp2,restore-32k-pcp4" \
  timeout 200 sh "$B/gpu-kernel-versions.sh" >"$OUT/B.log" 2>&1; echo "B rc $?"
show old; show new
save
PEER_TIMEOUT=200 KERNEL_TIMEOUT=280 timeout 320 sh bench/run-gpu-kernels.sh . "$OUT/kb" \
  --kernel indexer_logits_prefill,indexer_logits_decode,topk_prefill,topk_decode,topk_merge,convert,gather_upconvert,restore,indexer_topk_decode \
  >"$OUT/C.log" 2>&1; echo "C rc $?"
tail -5 "$OUT/C.log"
cat "$OUT/kb/stdout.txt" 2>/dev/null | grep -E '^ [a-z]|ceilings' 
