#!/bin/sh
# (1) ncu durations of the two kernels inside indexer_topk_decode (the committed build);
# (2) the staged rows' cluster path: slice minimum 16384 (1 x 32768: 2 blocks) and none (one block a row)
set -u
for c in dindexer-h64-b1-32k dindexer-h64-b16-32k; do
  timeout 200 ncu --metrics gpu__time_duration.sum,sm__cycles_active.max -k regex:'indexer|topk' --csv $KB --kernel indexer_topk_decode \
    --case $c --reps 5 --warmup 0 --no-ceilings > "$OUT/ncu-$c.csv" 2>&1
  grep -E 'gpu__time_duration|sm__cycles' "$OUT/ncu-$c.csv" | tail -6
done
for v in 16384 1073741824; do
  sed -i "s/^#define TOPK_CLUSTER_SLICE_MIN .*/#define TOPK_CLUSTER_SLICE_MIN $v/" kernels/topk.cu
  grep -n '^#define TOPK_CLUSTER_SLICE_MIN' kernels/topk.cu >> "$OUT/variant.txt"
  make -j16 bench/cplab-kernel-bench >"$OUT/variant-build-$v.log" 2>&1 || { tail -20 "$OUT/variant-build-$v.log"; exit 1; }
  $KB --kernel topk_decode,indexer_topk_decode --case topk-decode-b1-32k,topk-decode-b16-32k,dindexer-h64-b1-32k,dindexer-h64-b16-32k --no-ceilings --commit slice$v \
    --json "$OUT/slice$v.json" >"$OUT/slice$v.txt" 2>"$OUT/slice$v.err"
  cat "$OUT/slice$v.txt"
done
