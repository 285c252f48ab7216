#!/bin/sh
# 3r (this build: the item after next prefetched into L2 when a stage is issued) against 3n
# (gpu-bundle/topk_3n.cu) and 3s (3r + two-slope bins): three builds, runs interleaved n r s n r s.
set -u
B=$(cd "$(dirname "$0")" && pwd)
C="topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b1-8k,topk-decode-b64-128k"
cp kernels/topk.cu /tmp/topk_3r.cu
D=$(dirname "$KB")
for v in 3n 3s 3r; do
  case $v in
    3r) cp /tmp/topk_3r.cu kernels/topk.cu ;;
    *) cp "$B/topk_$v.cu" kernels/topk.cu ;;
  esac
  make -j16 bench/cplab-kernel-bench >"$OUT/build-$v.log" 2>&1 || { tail -20 "$OUT/build-$v.log"; exit 1; }
  cp "$KB" "$D/kb-$v"
done
for round in 1 2; do
  for v in 3n 3r 3s; do
    timeout 120 "$D/kb-$v" --kernel topk_prefill,topk_decode --case $C --no-ceilings --commit "$v" --json "$OUT/$v-$round.json" >"$OUT/$v-$round.txt" 2>"$OUT/$v-$round.err"
    echo "== $v round $round (rc $?)"; grep -E '^ topk' "$OUT/$v-$round.txt"
  done
done
