#!/bin/sh
# Session 17, call 3 (each part interleaved rounds, --no-ceilings, gpu-kernel-versions.sh):
#   A. decode logits: v4 (the tree) against v7 (weights in registers, the heads' descriptor made once,
#      32-bit tile loop), three rounds; then the GPU indexer test on v7;
#   B. restore: blocks of 256 (the tree), 512 and 1024 threads, two rounds;
#   C. gather: the same three block sizes, two rounds.
set -u
B=$(dirname "$0")
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done; }
KV_FILE=kernels/indexer_decode.cu KV_VERSIONS="v4=. v7=v/v7" KV_ROUNDS=3 \
  KV_ARGS="--case dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b64-32k,dlogits-h64-b16-128k-dcp4" \
  timeout 220 sh "$B/gpu-kernel-versions.sh" >"$OUT/A.log" 2>&1; echo "A rc $?"
show v4; show v7
save
cp kernels/indexer_decode.cu kernels/idx_tc.cuh /tmp/ && cp "$B"/v/v7/* kernels/
timeout 120 make -j16 tests/gpu/test_gpu_indexer >"$OUT/build-test.log" 2>&1 && ./tests/gpu/test_gpu_indexer >"$OUT/test_gpu_indexer-v7.txt" 2>&1
echo "test_gpu_indexer v7 rc $?"; tail -1 "$OUT/test_gpu_indexer-v7.txt"
cp /tmp/indexer_decode.cu /tmp/idx_tc.cuh kernels/
save
KV_FILE=kernels/restore.cu KV_VERSIONS="t256=. t512=v/restore_t512.cu t1024=v/restore_t1024.cu" KV_ROUNDS=2 \
  KV_ARGS="--case restore-8k-pcp2,restore-32k-pcp4" timeout 150 sh "$B/gpu-kernel-versions.sh" >"$OUT/B.log" 2>&1; echo "B rc $?"
mkdir -p "$OUT/B" && mv "$OUT"/t*-*.json "$OUT"/t*-*.txt "$OUT"/t*-*.err "$OUT/B/" 2>/dev/null
for f in "$OUT"/B/*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done
save
KV_FILE=kernels/gather.cu KV_VERSIONS="t256=. t512=v/gather_t512.cu t1024=v/gather_t1024.cu" KV_ROUNDS=2 \
  KV_ARGS="--case gather-8k,gather-32k,gather-128k" timeout 100 sh "$B/gpu-kernel-versions.sh" >"$OUT/C.log" 2>&1; echo "C rc $?"
mkdir -p "$OUT/C" && mv "$OUT"/t*-*.json "$OUT"/t*-*.txt "$OUT"/t*-*.err "$OUT/C/" 2>/dev/null
for f in "$OUT"/C/*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f" % (e["case"], e["median_us"]) for e in d["entries"]))' "$f"; done
