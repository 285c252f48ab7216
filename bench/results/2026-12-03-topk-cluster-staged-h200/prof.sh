#!/bin/sh
# (1) durations of both kernels of indexer_topk_decode at b1 32k (SM cycles: ncu fixes the clock);
# (2) ncu of the staged rows' cluster path, 1 x 32768 (4 blocks): warp states and SASS counters
set -u
c=dindexer-h64-b1-32k
timeout 150 ncu --metrics gpu__time_duration.sum,sm__cycles_active.max,smsp__cycles_active.max -k regex:'logits_decode|topk' --csv $KB --kernel indexer_topk_decode \
  --case $c --reps 5 --warmup 0 --no-ceilings > "$OUT/ncu-durations-$c.csv" 2>&1
c=topk-decode-b1-32k
timeout 200 ncu -k regex:topk -c 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SourceCounters --section InstructionStats \
  -o $OUT/$c $KB --kernel topk_decode --case $c --reps 1 --warmup 0 --no-ceilings > $OUT/ncu-$c.log 2>&1
ncu --import $OUT/$c.ncu-rep > $OUT/ncu-$c.txt 2>&1
ncu --import $OUT/$c.ncu-rep --page source --print-source sass --csv --launch-count 1 > $OUT/sass-$c.csv 2>&1
gzip -9 $OUT/sass-$c.csv
rm -f $OUT/$c.ncu-rep
grep -E "Duration|SM Active Cycles|Warp Cycles Per Issued|Issued Warp|Executed Ipc|Registers" $OUT/ncu-$c.txt | head -20
