#!/bin/sh
# Session 22, call 3 (2f7df75; 13d371c's kernels):
#   T. the GPU indexer test with the logits' bound per logit (2f7df75);
#   A. the issue-21 kernels changed since their last timed run, with the PyTorch peer and the ceilings: the top-k
#      with its conversion (topk_decode_convert) beside topk_decode and convert-decode, the merge with its
#      conversion, the prefill top-k (ptxas: fewer registers), the decode logits;
#   B. (if the call's time allows) cplab-bench's layout comparison, the cases of
#      bench/results/2026-12-04-cplab-bench-h200/run.sh, files in $OUT/layers.
set -u
B=$(dirname "$0")
T0=$(date +%s)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done; }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build rc $?"
timeout 120 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer.txt" 2>&1; echo "test_gpu_indexer rc $?"
grep -E "logits|checks" "$OUT/test_gpu_indexer.txt" | cut -c1-260
save
C=topk-4k-32k,topk-8k-32k,topk-4k-causal-32k
C=$C,topk-decode-b1-32k,topk-decode-b16-32k,topk-decode-b1-128k,topk-decode-b64-128k,topk-decode-b128-32k
C=$C,topk-decode-convert-b1-32k,topk-decode-convert-b16-32k,topk-decode-convert-b64-128k,topk-decode-convert-b128-32k
C=$C,topk-merge-dcp4-b64-128k,topk-merge-dcp8-b128-128k,topk-merge-convert-dcp4-b64-128k,topk-merge-convert-dcp8-b128-128k
C=$C,convert-decode-b64-dcp4,convert-decode-b128-dcp8
C=$C,dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b64-32k
PEER_TIMEOUT=100 KERNEL_TIMEOUT=180 timeout 250 sh bench/run-gpu-kernels.sh . "$OUT/kb" --case "$C" --check-rows 2 \
  >"$OUT/A.log" 2>&1; echo "A rc $?"
tail -3 "$OUT/A.log"
grep -E '^ [a-z]|ceilings' "$OUT/kb/stdout.txt" 2>/dev/null
save
[ $(( $(date +%s) - T0 )) -gt 330 ] && { echo "B skipped: no time"; exit 0; }
L="$OUT/layers"; mkdir -p "$L"
make -j16 bench/cplab-bench >"$L/build.log" 2>&1 || { tail -20 "$L/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv >"$L/gpu.txt" 2>&1
run() {
  name=$1; shift
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "$name skipped: no time"; return; }
  echo "./bench/cplab-bench $*" >"$L/$name.cmd"
  timeout 60 ./bench/cplab-bench "$@" -o "$L/$name" 2>"$L/$name.err"; echo "$name: exit $?"
  tail -2 "$L/$name.err"; save
}
run glm-5-4rank-decode --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,pcp4,tp4dcp4,pcp4dcp4 --decode 32768
run glm-5-4rank-b16 --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,tp4dcp4 --decode 32768 --batch 16
for f in "$L"/*.md; do echo "== $f"; head -24 "$f"; done
