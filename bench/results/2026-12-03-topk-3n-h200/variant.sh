#!/bin/sh
# 3n (this build: candidates in batches of 4) against 3m (gpu-bundle/topk_3m.cu), 3o (3n with two-slope bins) and batches of 8, same node.
set -u
B=$(cd "$(dirname "$0")" && pwd)
C="topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b1-8k,topk-decode-b1-128k,topk-decode-b64-128k"
cp kernels/topk.cu /tmp/topk_3n.cu
for v in 3m 3o 3n-b8 3n; do
  case $v in
    3m) cp "$B/topk_3m.cu" kernels/topk.cu ;;
    3n-b8) sed 's/^#define TOPK_CAND_BATCH 4 /#define TOPK_CAND_BATCH 8 /' /tmp/topk_3n.cu > kernels/topk.cu ;;
    3o) cp "$B/topk_3o.cu" kernels/topk.cu ;;
    3n) cp /tmp/topk_3n.cu kernels/topk.cu ;;
  esac
  grep -n '^#define TOPK_CAND_BATCH' kernels/topk.cu >> "$OUT/variant.txt"
  make -j16 bench/cplab-kernel-bench >"$OUT/build-$v.log" 2>&1 || { tail -20 "$OUT/build-$v.log"; exit 1; }
  timeout 150 $KB --kernel topk_prefill,topk_decode --case $C --no-ceilings --commit "$v" --json "$OUT/$v.json" >"$OUT/$v.txt" 2>"$OUT/$v.err"
  echo "== $v"; grep -E '^ topk' "$OUT/$v.txt"
done
