#!/bin/sh
# Session 28, call K (the last of the device time, on the machine call J left warm): the tree (the compaction
# by mask, its two list loops folded into one helper since call G) against base (c517938's topk_bins.cuh,
# gpu-bundle/v/base/), one round of two prefill cases. Run:
#   FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callK.sh
set -u
T0=$(date +%s)
B=$(cd "$(dirname "$0")" && pwd)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
save
KV_FILE=kernels/topk_bins.cuh KV_VERSIONS="base=v/base mask=." KV_ROUNDS=1 \
  KV_ARGS="--case topk-4k-32k,topk-4k-causal-32k" \
  timeout 120 sh "$B/gpu-kernel-versions.sh" >"$OUT/versions.log" 2>&1; echo "versions rc $? at $(( $(date +%s) - T0 )) s"
for f in "$OUT"/*-[12].json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f/%s" % (e["case"], e["median_us"], e["check"]["ok"]) for e in d["entries"]))' "$f"; done
save
echo "all done at $(( $(date +%s) - T0 )) s"
