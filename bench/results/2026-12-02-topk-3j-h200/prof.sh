# ncu of the prefill top-k (4096 x 32768): instruction counts by SASS line; KB, OUT from gpu-node-check.sh
c=topk-4k-32k
timeout 300 ncu -k regex:topk -c 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SourceCounters --section InstructionStats \
  -o $OUT/$c $KB --kernel topk_prefill --case $c --reps 1 --warmup 0 --no-ceilings > $OUT/ncu-$c.log 2>&1
ncu --import $OUT/$c.ncu-rep > $OUT/ncu-$c.txt 2>&1
ncu --import $OUT/$c.ncu-rep --page source --print-source sass --csv --launch-count 1 > $OUT/sass-$c.csv 2>&1
gzip -9 $OUT/sass-$c.csv
rm -f $OUT/$c.ncu-rep
grep -E "Duration|SM Active Cycles|Warp Cycles Per Issued|Issued Warp|Executed Ipc|Registers" $OUT/ncu-$c.txt | head -20
