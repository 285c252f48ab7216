#!/bin/sh
# Session 18, call 6: call 5 with the claims an iteration further ahead (thread 0 publishes the claim its previous iteration made);
# call 5: decode logits with tiles claimed dynamically (v/steal: a row's blocks take tiles from a
# per-row counter, module globals reset by the row's last block; an experiment, not for the tree) against
# the tree's static chunks, two (call 6; call 5 three) interleaved rounds, --no-ceilings --check-rows 1.
set -u
B=$(dirname "$0")
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f%s" % (e["case"], e["median_us"], "" if e["check"]["ok"] else "(CHECK FAILED)") for e in d["entries"]))' "$f"; done; }
KV_FILE=kernels/indexer_decode.cu KV_VERSIONS="static=. steal=v/steal" KV_ROUNDS=2 \
  KV_ARGS="--check-rows 1 --case dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h64-b64-32k,dlogits-h64-b16-128k-dcp4" \
  timeout 240 sh "$B/gpu-kernel-versions.sh" >"$OUT/A.log" 2>&1; echo "A rc $?"
show static; show steal
