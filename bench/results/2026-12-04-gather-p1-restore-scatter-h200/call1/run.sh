#!/bin/sh
# Session 17, call 1:
#   1. versions of kernels/gather.cu: r1 (the tree) and p1 (persistent, next slot prefetched), three
#      interleaved rounds, with the restore's map and scatter paths in the same runs (--no-ceilings);
#   2. one run with the ceilings (same-size copies) of the tree on the same cases;
#   3. the GPU tests of the restore (both paths), of the gather on p1, and exec_agree (the executor's
#      output check now restores through the scatter path).
set -u
B=$(dirname "$0")
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
C=gather-8k,gather-32k,gather-128k,restore-8k-pcp2,restore-8k-pcp2-scatter,restore-32k-pcp4,restore-32k-pcp4-scatter
KV_FILE=kernels/gather.cu KV_VERSIONS="r1=. p1=v/gather_p1.cu" KV_ARGS="--case $C" KV_ROUNDS=3 \
  sh "$B/gpu-kernel-versions.sh"; echo "versions rc $?"
for f in "$OUT"/r1-*.json "$OUT"/p1-*.json; do
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"
done
save
$KB --case $C --json "$OUT/kb-ceil.json" >"$OUT/kb-ceil.txt" 2>&1; echo "kb ceilings rc $?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(e["case"], "%.2f" % e["median_us"], "copy %.2f" % e["copy_same_size"]["median_us"], "%%cp= %.1f" % (100*e["of_copy_same_size"]), "busy %.2f" % e["gpu_busy_fraction"]) for e in d["entries"]]' "$OUT/kb-ceil.json"
save
make -j16 >"$OUT/build-all.log" 2>&1; echo "build all rc $?"
make -j16 tests/gpu/test_gpu_restore tests/gpu/test_gpu_gen >>"$OUT/build-all.log" 2>&1; echo "build tests rc $?"
./tests/gpu/test_gpu_restore >"$OUT/test_gpu_restore.txt" 2>&1; echo "test_gpu_restore rc $?"; tail -1 "$OUT/test_gpu_restore.txt"
./tests/gpu/test_gpu_gen >"$OUT/test_gpu_gen-r1.txt" 2>&1; echo "test_gpu_gen r1 rc $?"; tail -1 "$OUT/test_gpu_gen-r1.txt"
save
cp kernels/gather.cu /tmp/gather-own.cu && cp "$B/v/gather_p1.cu" kernels/gather.cu
make -j16 tests/gpu/test_gpu_gen >>"$OUT/build-all.log" 2>&1 && ./tests/gpu/test_gpu_gen >"$OUT/test_gpu_gen-p1.txt" 2>&1
echo "test_gpu_gen p1 rc $?"; tail -1 "$OUT/test_gpu_gen-p1.txt"
cp /tmp/gather-own.cu kernels/gather.cu
save
timeout 200 make check TESTS="tests/exec/exec_agree.sh tests/gpu/gpu_restore.sh" >"$OUT/check.txt" 2>&1; echo "check rc $?"
grep -E '^(PASS|FAIL|SKIP|ERROR)' "$OUT/check.txt"; cp tests/exec/exec_agree.log tests/gpu/gpu_restore.log "$OUT/" 2>/dev/null
