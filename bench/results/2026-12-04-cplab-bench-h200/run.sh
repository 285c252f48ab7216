#!/bin/sh
# Session 17, call 4: the decode logits (v7, the tree) with the ceilings and same-size copies; then
# cplab-bench's layout comparison (GLM-5, 4 ranks on one H200, eager), the cases of
# bench/results/2026-12-03-cplab-bench-h200/ (its layers.sh), files in $OUT/layers.
set -u
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
C=dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b64-32k,dlogits-h64-b16-128k-dcp4
$KB --case $C --json "$OUT/kb-dlogits.json" >"$OUT/kb-dlogits.txt" 2>&1; echo "kb rc $?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(e["case"], "%.2f" % e["median_us"], "copy %.2f" % e["copy_same_size"]["median_us"], "%%cp= %.1f" % (100*e["of_copy_same_size"]), "%%copy %.1f" % (100*e["of_copy"]), "busy %.2f" % e["gpu_busy_fraction"]) for e in d["entries"]]' "$OUT/kb-dlogits.json"
save
L="$OUT/layers"; mkdir -p "$L"
make -j16 bench/cplab-bench >"$L/build.log" 2>&1 || { tail -20 "$L/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv >"$L/gpu.txt" 2>&1
B=./bench/cplab-bench
run() {
  name=$1; shift
  echo "$B $*" >"$L/$name.cmd"
  timeout 150 $B "$@" -o "$L/$name" 2>"$L/$name.err"; echo "$name: exit $?"
  tail -2 "$L/$name.err"; save
}
run glm-5-4rank-prefill --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,pcp4,pcp4dcp4 --prefill 32768
run glm-5-4rank-decode --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,pcp4,tp4dcp4,pcp4dcp4 --decode 32768
run glm-5-4rank-b16 --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,tp4dcp4 --decode 32768 --batch 16
for f in "$L"/*.md; do echo "== $f"; head -40 "$f"; done
