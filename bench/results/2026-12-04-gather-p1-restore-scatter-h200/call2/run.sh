#!/bin/sh
# Session 17, call 2: the restore folded into one kernel (map and scatter paths, 32 registers).
#   1. the kernel bench with the ceilings (same-size copies) on the restore's cases, three runs;
#   2. ncu of restore-8k-pcp2 (both paths) and of whatever cudaMemcpyAsync's same-size copy launches;
#   3. the GPU test of the restore (both paths) and exec_agree (the executor's output check restores
#      through the scatter path), run directly.
set -u
B=$(dirname "$0")
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
C=restore-8k-pcp2,restore-8k-pcp2-scatter,restore-32k-pcp4,restore-32k-pcp4-scatter,gather-8k
for r in 1 2 3; do
  $KB --case $C --json "$OUT/kb-$r.json" >"$OUT/kb-$r.txt" 2>&1; echo "kb run $r rc $?"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(e["case"], "%.2f" % e["median_us"], "copy %.2f" % e["copy_same_size"]["median_us"], "%%cp= %.1f" % (100*e["of_copy_same_size"]), "busy %.2f" % e["gpu_busy_fraction"]) for e in d["entries"]]' "$OUT/kb-$r.json"
done
save
for c in restore-8k-pcp2 restore-8k-pcp2-scatter; do
  timeout 100 ncu -k regex:'restore|opy|emcpy|Copy' -c 6 --section LaunchStats --section SpeedOfLight --section Occupancy \
    --section WarpStateStats -o "$OUT/ncu-$c" $KB --case $c --reps 2 --warmup 0 --copy-mib 16 --gemm 256x256x256 \
    --settle-ms 0 >"$OUT/ncu-$c.log" 2>&1; echo "ncu $c rc $?"
  ncu --import "$OUT/ncu-$c.ncu-rep" >"$OUT/ncu-$c.txt" 2>&1; rm -f "$OUT/ncu-$c.ncu-rep"
  grep -E '^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Grid Size|Block Size|Registers Per|Achieved Occupancy|Waves Per SM' "$OUT/ncu-$c.txt" | head -60
done
save
make -j16 >"$OUT/build-all.log" 2>&1; echo "build all rc $?"
make -j16 tests/gpu/test_gpu_restore >>"$OUT/build-all.log" 2>&1; echo "build test rc $?"
./tests/gpu/test_gpu_restore >"$OUT/test_gpu_restore.txt" 2>&1; echo "test_gpu_restore rc $?"; tail -1 "$OUT/test_gpu_restore.txt"
save
top_srcdir=$PWD top_builddir=$PWD HAVE_CUDA=yes timeout 240 sh tests/exec/exec_agree.sh >"$OUT/exec_agree.txt" 2>&1
echo "exec_agree rc $?"; grep -E '^(ok|FAIL|not ok)|passed|failed' "$OUT/exec_agree.txt" | tail -25
