#!/bin/sh
# Session 30's call R, run in session 31 (callR/, README.md): the lean rows kernel and the
# rare-rows kernel (lean.patch), alone and on top of v2fbins (../2026-12-07-topk-rank-pad/), against the tree.
# 1. three interleaved rounds of tree, lean and leanv2fbins (tools/gpu-kernel-versions.sh, --no-ceilings);
# 2. the version with the least sum over the rounds of the three prefill cases' medians, every check exact,
#    copied in (chosen.txt) with lean.patch's test (a prefill case of 16 rows an SM and more, so that the
#    lean kernel and the rare-rows kernel run on the GPU too): the GPU indexer test on it;
# 3. on it, issue 21's top-k, merge, conversion and decode-logits kernels with their PyTorch peer and the
#    card's ceilings (bench/run-gpu-kernels.sh, the 22 cases of ../2026-12-06-issue21-kernels-h100/);
# 4. where the call's time allows, ncu of its prefill top-k, 4096 x 32768 (tools/gpu-kernel-ncu.sh).
# Prepare: sh tools/gpu-bundle.sh (trim the tarball's bench/results and tests/golden-gpu), then
#   sh bench/results/2026-12-07-topk-lean/prep.sh
# Where the call has less than 600 s, ROUNDS=2 (fewer rounds of step 1) and VERSIONS="tree=. lean=v/lean"
# (fewer versions) in front.
# Run: NVCC_EXTRA=-lineinfo FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callR.sh
set -u
T0=$(date +%s)
B=$(cd "$(dirname "$0")" && pwd)
at() { echo "$1 at $(( $(date +%s) - T0 )) s"; }
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
KV_FILE=kernels/topk_bins.cuh KV_VERSIONS=${VERSIONS:-"tree=. lean=v/lean leanv2fbins=v/leanv2fbins"} KV_ROUNDS=${ROUNDS:-3} \
  KV_ARGS="--case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b64-128k" \
  timeout 230 sh "$B/gpu-kernel-versions.sh" >"$OUT/versions.log" 2>&1; at "versions rc $?"
for f in "$OUT"/*-[123].json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.1f/%s" % (e["case"], e.get("median_us", -1), e["check"]["ok"]) for e in d["entries"]))' "$f"; done
save
best=$(python3 - "$OUT" <<'PY'
import collections, glob, json, sys
tot, ok = collections.defaultdict(float), collections.defaultdict(lambda: True)
for f in glob.glob(sys.argv[1] + "/*-[0-9].json"):
    label = f.split("/")[-1].rsplit("-", 1)[0]
    for e in json.load(open(f))["entries"]:
        ok[label] = ok[label] and e["check"]["ok"]
        if e["case"] in ("topk-4k-32k", "topk-8k-32k", "topk-4k-causal-32k"):
            tot[label] += e["median_us"]
good = sorted((t, l) for l, t in tot.items() if ok[l])
for t, l in good: print(l, "%.1f" % t, file=sys.stderr)
print(good[0][1] if good else "tree")
PY
)
echo "chosen: $best" | tee "$OUT/chosen.txt"
[ "$best" != tree ] && cp "$B/v/$best/"* kernels/
cp "$B/v/test_gpu_indexer.c" tests/gpu/ # (the tree passes it too: the emulation, both thread orders)
make -j16 bench/cplab-kernel-bench tests/gpu/test_gpu_indexer >"$OUT/build-chosen.log" 2>&1; at "build rc $?"
timeout 170 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer-$best.txt" 2>&1; at "test_gpu_indexer ($best) rc $?"
tail -1 "$OUT/test_gpu_indexer-$best.txt"; grep "^FAIL" "$OUT/test_gpu_indexer-$best.txt" | cut -c1-200
save
C=$(python3 -c 'import json,sys; print(",".join(c["case"] for c in json.load(open(sys.argv[1]))["cases"]))' \
  "$B/issue21-cases.json") # (2026-12-06-issue21-kernels-h100's 22 cases, from its cases.json: prep.sh)
PEER_TIMEOUT=90 KERNEL_TIMEOUT=120 timeout 200 sh bench/run-gpu-kernels.sh . "$OUT/kb" --case "$C" --check-rows 2 \
  >"$OUT/kernels.log" 2>&1; at "kernels rc $?"
tail -3 "$OUT/kernels.log"
grep -E '^ [a-z]|ceilings' "$OUT/kb/stdout.txt" 2>/dev/null
save
if [ $(( $(date +%s) - T0 )) -lt 430 ]; then
  NCU_TIMEOUT=50 sh "$B/gpu-kernel-ncu.sh" topk_prefill topk-4k-32k topk_kernel; at "ncu ($best) rc $?"
else at "ncu skipped: no time"; fi
save
at "all done"
