#!/bin/sh
# 3p (this build: the next row's stage issued before the placing pass, keys filled from L2 after it)
# against 3n (gpu-bundle/topk_3n.cu) and 3q (3p + two-slope bins); three builds, then runs interleaved n p q n p q.
set -u
B=$(cd "$(dirname "$0")" && pwd)
C="topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b1-8k,topk-decode-b64-128k"
cp kernels/topk.cu /tmp/topk_3p.cu
D=$(dirname "$KB")
for v in 3n 3q 3p; do
  case $v in
    3n) cp "$B/topk_3n.cu" kernels/topk.cu ;;
    3q) cp "$B/topk_3q.cu" kernels/topk.cu ;;
    3p) cp /tmp/topk_3p.cu kernels/topk.cu ;;
  esac
  make -j16 bench/cplab-kernel-bench >"$OUT/build-$v.log" 2>&1 || { tail -20 "$OUT/build-$v.log"; exit 1; }
  cp "$KB" "$D/kb-$v"
done
for round in 1 2; do
  for v in 3n 3p 3q; do
    timeout 120 "$D/kb-$v" --kernel topk_prefill,topk_decode --case $C --no-ceilings --commit "$v" --json "$OUT/$v-$round.json" >"$OUT/$v-$round.txt" 2>"$OUT/$v-$round.err"
    echo "== $v round $round (rc $?)"; grep -E '^ topk' "$OUT/$v-$round.txt"
  done
done
# The main run's first case after the ceilings' GEMMs (the twelfth session's unchecked pattern):
# 3p with the ceilings measured first, then at once without them.
for v in ceil noceil; do
  f=""; [ $v = noceil ] && f=--no-ceilings
  timeout 120 "$D/kb-3p" --kernel topk_prefill --case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k $f --commit "3p-$v" --json "$OUT/3p-$v.json" >"$OUT/3p-$v.txt" 2>"$OUT/3p-$v.err"
  echo "== 3p $v (rc $?)"; grep -E '^ topk|^# ceil' "$OUT/3p-$v.txt"
done
