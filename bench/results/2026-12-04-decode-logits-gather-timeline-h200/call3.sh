#!/bin/sh
# Session 18, call 3: decode logits with smaller chunks a block (DL_MAX_CHUNK_TILES 16 in the tree; 8, 4, 2
# tiles of 64 keys: more blocks than one wave, so that the hardware's block scheduler, not the static
# split, balances the SMs at the end), three interleaved rounds, --no-ceilings.
set -u
B=$(dirname "$0")
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done; }
KV_FILE=kernels/indexer_decode.cu KV_VERSIONS="c16=. c8=v/dl_c8.cu c4=v/dl_c4.cu c2=v/dl_c2.cu" KV_ROUNDS=3 \
  KV_ARGS="--case dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b64-32k,dlogits-h64-b16-128k-dcp4,dlogits-h64-b128-32k" \
  timeout 300 sh "$B/gpu-kernel-versions.sh" >"$OUT/A.log" 2>&1; echo "A rc $?"
for v in c16 c8 c4 c2; do show $v; done
