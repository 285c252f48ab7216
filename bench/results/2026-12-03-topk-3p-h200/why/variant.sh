#!/bin/sh
# Why 3p (this build) is slower: ncu of 3p at 4096 x 32768; then 3n, 3p and 3p-late (3p's fill, the stage
# issued after it as 3n does) interleaved; then the first case after the ceilings with a long warm-up.
set -u
B=$(cd "$(dirname "$0")" && pwd)
C="topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k"
D=$(dirname "$KB")
cp "$KB" "$D/kb-3p"
c=topk-4k-32k
timeout 200 ncu -k regex:topk -c 1 --section SpeedOfLight --section WarpStateStats --section SourceCounters --section InstructionStats \
  -o $OUT/$c $KB --kernel topk_prefill --case $c --reps 1 --warmup 0 --no-ceilings > $OUT/ncu-$c.log 2>&1
ncu --import $OUT/$c.ncu-rep > $OUT/ncu-$c.txt 2>&1
ncu --import $OUT/$c.ncu-rep --page source --print-source sass --csv --launch-count 1 > $OUT/sass-$c.csv 2>&1
gzip -9 $OUT/sass-$c.csv; rm -f $OUT/$c.ncu-rep
grep -E "Duration|Executed Instructions  |Warp Cycles Per Issued|Issued Warp" $OUT/ncu-$c.txt | head
for v in 3n 3pl; do
  cp "$B/topk_$v.cu" kernels/topk.cu
  make -j16 bench/cplab-kernel-bench >"$OUT/build-$v.log" 2>&1 || { tail -20 "$OUT/build-$v.log"; exit 1; }
  cp "$KB" "$D/kb-$v"
done
for v in 3n 3p 3pl 3n 3pl; do
  timeout 120 "$D/kb-$v" --kernel topk_prefill,topk_decode --case $C --no-ceilings --commit "$v" >"$OUT/$v.txt" 2>&1
  echo "== $v (rc $?)"; grep -E '^ topk' "$OUT/$v.txt"
done
timeout 120 "$D/kb-3n" --kernel topk_prefill --case topk-4k-32k,topk-8k-32k --warmup 400 --commit 3n-ceil-w400 >"$OUT/3n-ceil-w400.txt" 2>&1
echo "== 3n ceilings, 400 warm-up (rc $?)"; grep -E '^ topk|^# ceil' "$OUT/3n-ceil-w400.txt"
