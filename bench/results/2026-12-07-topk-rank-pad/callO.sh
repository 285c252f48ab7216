#!/bin/sh
# Session 29, call O: not run then (the session's last 288 s of device time were too few for a start); run in
# session 30, its ncu step by tools/gpu-kernel-ncu.sh (made in session 30 from the steps callL/callM ran
# inline). On the tree as landed (cfc29f9: the ranking by whole 4-key steps and the list by words), three versions of kernels/topk_bins.cuh, each from a patch in this folder (emulated indexer test passes):
#   v2       the ranking's bin without topk_bin_key's floor test (every winner lies above the floor);
#   fbins    the bins made and counted as the list is written from the mask (no pass of their own over the
#            list, one barrier fewer);
#   v2fbins  both.
# 1. three interleaved rounds of tree, v2, fbins, v2fbins (tools/gpu-kernel-versions.sh, --no-ceilings);
# 2. ncu of v2fbins's prefill top-k, 4096 x 32768 ($KB: the last-built version; NVCC_EXTRA=-lineinfo),
#    details page and SASS page (tools/gpu-kernel-ncu.sh; the page read by tools/ncu-sass-phases.py);
# 3. the GPU indexer test on v2fbins (its file copied in, the test rebuilt, the tree's put back).
# Prepare: sh tools/gpu-bundle.sh (trim the tarball's bench/results as the earlier folders say); then
#   sh bench/results/2026-12-07-topk-rank-pad/prep.sh (the versions in gpu-bundle/v/, this script copied). Run:
#   NVCC_EXTRA=-lineinfo FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callO.sh
#   (ROUNDS=2 and VERSIONS="tree=. v2fbins=v/v2fbins" in front where the call has less than 600 s.)
set -u
T0=$(date +%s)
B=$(cd "$(dirname "$0")" && pwd)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
KV_FILE=kernels/topk_bins.cuh KV_VERSIONS=${VERSIONS:-"tree=. v2=v/v2 fbins=v/fbins v2fbins=v/v2fbins"} KV_ROUNDS=${ROUNDS:-3} \
  KV_ARGS="--case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b64-128k" \
  timeout 400 sh "$B/gpu-kernel-versions.sh" >"$OUT/versions.log" 2>&1; echo "versions rc $? at $(( $(date +%s) - T0 )) s"
for f in "$OUT"/*-[123].json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f/%s" % (e["case"], e.get("median_us", -1), e["check"]["ok"]) for e in d["entries"]))' "$f"; done
save
NCU_TIMEOUT=60 sh "$B/gpu-kernel-ncu.sh" topk_prefill topk-4k-32k topk_kernel; echo "ncu rc $? at $(( $(date +%s) - T0 )) s"
save
mkdir -p "$OUT/tree" && cp kernels/topk_bins.cuh "$OUT/tree/" && cp "$B/v/v2fbins/topk_bins.cuh" kernels/
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build tests rc $?"
timeout 150 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer-v2fbins.txt" 2>&1; echo "test_gpu_indexer (v2fbins) rc $?"
cp "$OUT/tree/"* kernels/ && rm -rf "$OUT/tree"
tail -1 "$OUT/test_gpu_indexer-v2fbins.txt"; grep "^FAIL" "$OUT/test_gpu_indexer-v2fbins.txt" | cut -c1-200
save
echo "all done at $(( $(date +%s) - T0 )) s"
