#!/bin/sh
# 3l (this build) against 3j (gpu-bundle/topk_3j.cu) on the same node, then ncu of 3l at 4096 x 32768.
set -u
B=$(cd "$(dirname "$0")" && pwd)
C="topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b1-128k,topk-decode-b64-128k"
c=topk-4k-32k
timeout 200 ncu -k regex:topk -c 1 --section SpeedOfLight --section WarpStateStats --section SourceCounters --section InstructionStats \
  -o $OUT/$c $KB --kernel topk_prefill --case $c --reps 1 --warmup 0 --no-ceilings > $OUT/ncu-$c.log 2>&1
ncu --import $OUT/$c.ncu-rep > $OUT/ncu-$c.txt 2>&1
ncu --import $OUT/$c.ncu-rep --page source --print-source sass --csv --launch-count 1 > $OUT/sass-$c.csv 2>&1
gzip -9 $OUT/sass-$c.csv; rm -f $OUT/$c.ncu-rep
grep -E "Duration|Executed Instructions  |Warp Cycles Per Issued|Issued Warp" $OUT/ncu-$c.txt | head
cp kernels/topk.cu /tmp/topk_3l.cu
for v in 3j 3l; do
  if [ $v = 3j ]; then cp "$B/topk_3j.cu" kernels/topk.cu; else cp /tmp/topk_3l.cu kernels/topk.cu; fi
  make -j16 bench/cplab-kernel-bench >"$OUT/build-$v.log" 2>&1 || { tail -20 "$OUT/build-$v.log"; exit 1; }
  timeout 150 $KB --kernel topk_prefill,topk_decode --case $C --no-ceilings --commit "$v" --json "$OUT/$v.json" >"$OUT/$v.txt" 2>"$OUT/$v.err"
  grep -E '^ topk' "$OUT/$v.txt"
done
