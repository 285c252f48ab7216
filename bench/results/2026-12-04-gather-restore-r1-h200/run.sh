#!/bin/sh
# Session 16, call 4: the gather at 1 row a warp and the restore at 1 row a warp, as committed.
#   1. the GPU test of the gather (test_gpu_gen) on this code;
#   2. the kernel bench with the ceilings (same-size copies: %cp=) on the gather's and restore's cases,
#      two runs;
#   3. ncu source counters of the decode logits at b16 32k (phases by ncu-sass-phases.py).
set -u
B=$(dirname "$0")
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
make -j16 tests/gpu/test_gpu_gen >"$OUT/build-test.log" 2>&1 && ./tests/gpu/test_gpu_gen >"$OUT/test_gpu_gen.txt" 2>&1
echo "test_gpu_gen (gather r1) rc $?"; tail -1 "$OUT/test_gpu_gen.txt"
C=gather-8k,gather-32k,gather-128k,restore-8k-pcp2,restore-32k-pcp4,restore-32k-pcp8
for r in 1 2; do
  $KB --case $C --json "$OUT/kb-$r.json" >"$OUT/kb-$r.txt" 2>&1; echo "kb run $r rc $?"
done
cat "$OUT/kb-1.txt"; grep -E '^ (gather|restore)' "$OUT/kb-2.txt"
save
c=dlogits-h64-b16-32k
timeout 80 ncu -k regex:logits_decode -c 1 --section SpeedOfLight --section WarpStateStats --section SourceCounters --section InstructionStats \
  -o "$OUT/$c" $KB --kernel indexer_logits_decode --case $c --reps 1 --warmup 0 --no-ceilings >"$OUT/ncu-$c.log" 2>&1
echo "ncu rc $?"
ncu --import "$OUT/$c.ncu-rep" >"$OUT/ncu-$c.txt" 2>&1
ncu --import "$OUT/$c.ncu-rep" --page source --print-source sass --csv --launch-count 1 >"$OUT/sass-$c.csv" 2>&1
gzip -9 "$OUT/sass-$c.csv"; rm -f "$OUT/$c.ncu-rep"
python3 "$B/ncu-sass-phases.py" "$OUT/sass-$c.csv.gz" 2>&1 | head -40
