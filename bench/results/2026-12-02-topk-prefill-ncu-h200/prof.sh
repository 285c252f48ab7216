# The profiling loop; run by tools/gpu-kernel-prof.sh (the build from the bundle; KB the program, OUT the results).
c=topk-4k-32k
timeout 300 ncu -k regex:topk -c 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SourceCounters --section InstructionStats --section MemoryWorkloadAnalysis \
  -o $OUT/$c $KB --kernel topk_prefill --case $c --reps 1 --warmup 0 --no-ceilings > $OUT/ncu-$c.log 2>&1
ncu --import $OUT/$c.ncu-rep > $OUT/ncu-$c.txt 2>&1
ncu --import $OUT/$c.ncu-rep --page source --print-source sass --csv --launch-count 1 > $OUT/sass-$c.csv 2>&1
gzip -9 $OUT/sass-$c.csv
rm -f $OUT/$c.ncu-rep
grep -E "Duration|SM Active Cycles|Warp Cycles Per Issued|No Eligible|Issued Warp|Executed Ipc|Achieved Occupancy|Registers|Stall" $OUT/ncu-$c.txt | head -40
