#!/bin/sh
# the groups' maxima floor by rows' groups a thread: ratio 1 (committed 59bdd24), 2, and never (100000: by key, as 3i)
set -u
C="topk-decode-b1-8k,topk-decode-b64-8k,topk-decode-b1-32k,topk-decode-b1-128k,topk-4k-32k,topk-4k-causal-32k"
for v in 1 2 100000; do
  sed -i "s/^#define TOPK_GROUP_FLOOR_RATIO .*/#define TOPK_GROUP_FLOOR_RATIO $v/" kernels/topk.cu
  grep -n '^#define TOPK_GROUP_FLOOR_RATIO' kernels/topk.cu >> "$OUT/variant.txt"
  [ $v = 1 ] || make -j16 bench/cplab-kernel-bench >"$OUT/build-$v.log" 2>&1 || { tail -20 "$OUT/build-$v.log"; exit 1; }
  timeout 100 $KB --kernel topk_prefill,topk_decode --case $C --commit "59bdd24-ratio$v" --json "$OUT/ratio$v.json" >"$OUT/ratio$v.txt" 2>"$OUT/ratio$v.err"
  grep -E '^ topk' "$OUT/ratio$v.txt"
done
