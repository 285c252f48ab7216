#!/bin/sh
# Two experiments, each version built once and run interleaved (tools/gpu-kernel-versions.sh):
#   gather: 4 rows a warp (today) against 2 (twice the warps: 8k fills 31 warps an SM, not 15.5;
#           32k runs 3.1 waves, not 1.55);
#   decode logits: 4 stages (3 tiles in flight a block) against 5 (4 in flight): latency or issue?
set -u
B=$(dirname "$0")
KV_FILE=kernels/gather.cu KV_VERSIONS="r4=. r2=v/gather_r2.cu" \
  KV_ARGS="--case gather-8k,gather-32k,gather-128k" KV_ROUNDS=3 sh "$B/gpu-kernel-versions.sh"
echo "gather rc $?"
for f in "$OUT"/r*-*.txt; do echo "== $f"; grep -E '^ gather' "$f" | cut -c1-90; done
KV_FILE=kernels/indexer_decode.cu KV_VERSIONS="s4=. s5=v/indexer_decode_s5.cu" \
  KV_ARGS="--case dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b64-32k,dlogits-h64-b16-128k-dcp4" \
  KV_ROUNDS=2 sh "$B/gpu-kernel-versions.sh"
echo "dlogits rc $?"
for f in "$OUT"/s*-*.txt; do echo "== $f"; grep -E '^ dlogits' "$f" | cut -c1-90; done
