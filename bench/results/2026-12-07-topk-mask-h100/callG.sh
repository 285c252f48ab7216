#!/bin/sh
# Session 28, call G: the compaction by mask (the tree: a bit a key in registers, the list written from the
# scan's offsets, the bins over the list shared out evenly) against base (c517938's topk_bins.cuh, in
# gpu-bundle/v/base/), three interleaved rounds; then the SASS of both rows kernels (cuobjdump) and the GPU
# indexer test on the tree. Run: FINAL=$OUT sh gpu-bundle/gpu-kernel-prof.sh gpu-bundle gpu-bundle/callG.sh
# (As run: the SASS step failed, kernels/cplab_kernels.h not copied, and 60 s cut the indexer test short.)
set -u
B=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s)
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
KV_FILE=kernels/topk_bins.cuh KV_VERSIONS="base=v/base mask=." KV_ROUNDS=3 \
  KV_ARGS="--case topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b64-128k,topk-decode-b1-32k,topk-decode-b1-128k" \
  timeout 240 sh "$B/gpu-kernel-versions.sh"; echo "versions rc $? at $(( $(date +%s) - T0 )) s"
for f in "$OUT"/*-[123].json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f/%s" % (e["case"], e["median_us"], e["check"]["ok"]) for e in d["entries"]))' "$f"; done
save
sass() { # $1 label, $2 folder holding its topk_bins.cuh (or . for the tree's)
  d=$(mktemp -d); cp kernels/*.cu kernels/*.cuh "$d/"; [ "$2" = . ] || cp "$B/$2/topk_bins.cuh" "$d/"
  nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O3 -I/usr/local/cuda/include/cccl -Iinclude -I"$d" -I. -cubin -o "$d/topk.cubin" "$d/topk.cu" \
    >"$OUT/sass-$1.log" 2>&1 && cuobjdump -sass "$d/topk.cubin" | gzip >"$OUT/sass-$1.txt.gz"; echo "sass $1 rc $?"
}
sass base v/base & sass mask . & wait
echo "sass at $(( $(date +%s) - T0 )) s"
save
make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-tests.log" 2>&1; echo "build tests rc $?"
timeout 60 ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer.txt" 2>&1; echo "test_gpu_indexer rc $?"
tail -1 "$OUT/test_gpu_indexer.txt"; grep "^FAIL" "$OUT/test_gpu_indexer.txt" | cut -c1-200
save
echo "all done at $(( $(date +%s) - T0 )) s"
