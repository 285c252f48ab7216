# The profiling loop; run by tools/gpu-kernel-prof.sh (the build from the bundle; KB the program, OUT the results).
for c in topk-decode-b1-32k topk-decode-b1-128k topk-decode-b64-128k topk-decode-b128-32k topk-merge-dcp8-b1-128k; do
  k=topk_decode; case $c in topk-merge*) k=topk_merge;; esac
  timeout 200 ncu -k regex:topk -c 6 --section LaunchStats --section SpeedOfLight \
    --metrics gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max -o $OUT/$c $KB --kernel $k --case $c --reps 2 --warmup 0 --no-ceilings > $OUT/ncu-$c.log 2>&1
  ncu --import $OUT/$c.ncu-rep > $OUT/ncu-$c.txt 2>&1
  echo "== $c"; grep -E "^  [a-z_]*topk|gpu__time_duration|Grid Size|Block Size|Dynamic Shared|sm__cycles_active|Duration" $OUT/ncu-$c.txt | head -60
  rm -f $OUT/$c.ncu-rep
done
