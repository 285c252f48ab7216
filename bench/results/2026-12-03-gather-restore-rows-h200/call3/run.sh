#!/bin/sh
# Three experiments, each version built once and run interleaved (tools/gpu-kernel-versions.sh):
#   gather: 2 rows a warp (the tree now) against 1 (31 registers either way: 8 blocks an SM; 8192 rows
#           then fill 62 warps an SM in one wave);
#   restore: 2 rows a warp (45 registers: 5 blocks an SM) against 1 (31: 8 blocks; 8192 rows one wave);
#   decode logits: the accumulator zeroed (32 moves a tile) against wgmma's scale-d 0 on the first k-step.
set -u
B=$(dirname "$0")
make -j16 tests/gpu/test_gpu_gen >"$OUT/build-test.log" 2>&1 && ./tests/gpu/test_gpu_gen >"$OUT/test_gpu_gen.txt" 2>&1
echo "test_gpu_gen (gather r2) rc $?"; tail -1 "$OUT/test_gpu_gen.txt"
KV_FILE=kernels/gather.cu KV_VERSIONS="r2=. r1=v/gather_r1.cu" \
  KV_ARGS="--case gather-8k,gather-32k,gather-128k" KV_ROUNDS=3 sh "$B/gpu-kernel-versions.sh"
echo "gather rc $?"
KV_FILE=kernels/restore.cu KV_VERSIONS="w2=. w1=v/restore_w1.cu" \
  KV_ARGS="--case restore-8k-pcp2,restore-32k-pcp4,restore-32k-pcp8" KV_ROUNDS=3 sh "$B/gpu-kernel-versions.sh"
echo "restore rc $?"
KV_FILE=kernels/indexer_decode.cu KV_VERSIONS="z0=. z1=v/z" \
  KV_ARGS="--case dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b64-32k" \
  KV_ROUNDS=2 sh "$B/gpu-kernel-versions.sh"
echo "dlogits rc $?"
for f in "$OUT"/[rwz]*-[0-9].txt; do echo "== $f"; grep -E '^ (gather|restore|dlogits)' "$f" | cut -c1-24,70-100; done
