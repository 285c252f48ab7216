#!/bin/sh
# Session 18, call 2:
#   A. timelines: scratch copies of the decode logits and the gather (v/tl/) print, for one timed launch
#      (the 21st), each block's SM and globaltimer stamps: decode logits at the block's start, when its
#      first tile is in shared memory, at its end; gather (warp 0 of each block) at the start, when the
#      slot has arrived, when the entry has, at the end;
#   B. the gather with streaming cache hints (v/gather_cs.cu: __ldcs loads, __stcs stores) against the
#      tree's, three interleaved rounds, --no-ceilings.
set -u
B=$(dirname "$0")
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done; }
cp kernels/indexer_decode.cu kernels/gather.cu /tmp/
cp "$B"/v/tl/indexer_decode.cu "$B"/v/tl/gather.cu kernels/
make -j16 bench/cplab-kernel-bench >"$OUT/build-tl.log" 2>&1; echo "build tl rc $?"
for c in dlogits-h64-b16-32k dlogits-h64-b64-32k gather-8k gather-32k; do
  timeout 60 $KB --case $c --no-ceilings >"$OUT/tl-$c.txt" 2>"$OUT/tl-$c.err"; echo "$c rc $? lines $(grep -c '^TL' "$OUT/tl-$c.txt")"
done
cp /tmp/indexer_decode.cu /tmp/gather.cu kernels/
save
KV_FILE=kernels/gather.cu KV_VERSIONS="base=. cs=v/gather_cs.cu" KV_ROUNDS=3 \
  KV_ARGS="--case gather-8k,gather-32k,gather-128k" timeout 150 sh "$B/gpu-kernel-versions.sh" >"$OUT/B.log" 2>&1; echo "B rc $?"
show base; show cs
