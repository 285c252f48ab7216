#!/bin/sh
# Session 22, call 4 (2f7df75): cplab-bench's 32k prefill layouts (tp4, pcp4, pcp4dcp4; GLM-5, 4 ranks on one GPU, eager).
set -u
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
L="$OUT/layers"; mkdir -p "$L"
make -j16 bench/cplab-bench >"$L/build.log" 2>&1 || { tail -20 "$L/build.log"; exit 1; }
echo "./bench/cplab-bench --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,pcp4,pcp4dcp4 --prefill 32768" >"$L/glm-5-4rank-prefill.cmd"
timeout 150 ./bench/cplab-bench --preset glm-5 --out-tokens 8 --warmup 1 --reps 5 --check 2 --graphs eager --parallel tp4,pcp4,pcp4dcp4 --prefill 32768 -o "$L/glm-5-4rank-prefill" 2>"$L/glm-5-4rank-prefill.err"; echo "prefill: exit $?"
tail -3 "$L/glm-5-4rank-prefill.err"; save
grep -A8 "Graph mode" "$L/glm-5-4rank-prefill.md"
