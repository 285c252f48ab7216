# ncu of the decode top-k's cluster path (1 x 131072, k 2048); KB, OUT from gpu-node-check.sh
c=topk-decode-b1-128k
timeout 300 ncu -k regex:topk -c 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SourceCounters --section InstructionStats \
  -o $OUT/$c $KB --kernel topk_decode --case $c --reps 1 --warmup 0 --no-ceilings > $OUT/ncu-$c.log 2>&1
ncu --import $OUT/$c.ncu-rep > $OUT/ncu-$c.txt 2>&1
ncu --import $OUT/$c.ncu-rep --page source --print-source sass --csv --launch-count 1 > $OUT/sass-$c.csv 2>&1
gzip -9 $OUT/sass-$c.csv
rm -f $OUT/$c.ncu-rep
grep -E "topk|Duration|SM Active Cycles|Elapsed Cycles|Warp Cycles Per Issued|Executed Ipc|Registers|Issued Instructions  " $OUT/ncu-$c.txt | head -20
