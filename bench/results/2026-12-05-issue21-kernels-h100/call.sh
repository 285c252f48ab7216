#!/bin/sh
# Session 19, call 1:
#   A. the GPU test of the conversion and the kernel bench's smoke run on the tree;
#   B. the decode conversion: HEAD's (base), VPT 1 where the grid is small without the table prefetch (vpt),
#      the tree's (new: both), three interleaved rounds, --no-ceilings;
#   C. every issue-21 kernel with its PyTorch peer and the ceilings in one run (bench/run-gpu-kernels.sh);
#   D. the decode logits with a ring of 3 stages (2 tiles in flight a block, the heads first) against the tree's 4.
set -u
B=$(dirname "$0")
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
show() { for f in "$OUT"/$1-*.json; do python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], " ".join("%s=%.2f/b2b %.2f" % (e["case"], e["median_us"], (e.get("back_to_back") or {}).get("mean_us", -1)) for e in d["entries"]))' "$f"; done; }
make -j16 tests/gpu/test_gpu_convert tests/gpu/gpu_probe >"$OUT/build-tests.log" 2>&1; echo "build rc $?"
./tests/gpu/test_gpu_convert >"$OUT/test_gpu_convert.txt" 2>&1; echo "test_gpu_convert rc $?"; tail -1 "$OUT/test_gpu_convert.txt"
HAVE_CUDA=yes top_builddir=. top_srcdir=. timeout 120 sh tests/gpu/gpu_kernel_bench.sh >"$OUT/gpu_kernel_bench.txt" 2>&1; echo "gpu_kernel_bench rc $?"; tail -3 "$OUT/gpu_kernel_bench.txt"
KV_FILE=kernels/convert.cu KV_VERSIONS="base=v/convert_base.cu vpt=v/convert_vpt.cu new=." KV_ROUNDS=3 \
  KV_ARGS="--case convert-decode-b64-dcp4,convert-decode-b128-dcp8" \
  timeout 200 sh "$B/gpu-kernel-versions.sh" >"$OUT/B.log" 2>&1; echo "B rc $?"
show base; show vpt; show new
save
PEER_TIMEOUT=200 KERNEL_TIMEOUT=260 timeout 300 sh bench/run-gpu-kernels.sh . "$OUT/kb" \
  --kernel indexer_logits_prefill,indexer_logits_decode,topk_prefill,topk_decode,topk_merge,convert,gather_upconvert,restore,indexer_topk_decode \
  >"$OUT/C.log" 2>&1; echo "C rc $?"
tail -5 "$OUT/C.log"
grep -E '^ [a-z]|ceilings' "$OUT/kb/stdout.txt" 2>/dev/null
python3 - "$OUT/kb/kernels.json" <<'PY' 2>/dev/null
import json,sys
for e in json.load(open(sys.argv[1]))["entries"]:
    b = e.get("back_to_back")
    if b: print("b2b", e["case"], "mean_us %.2f" % b["mean_us"], "of_copy_same_size %.3f" % b["of_copy_same_size"])
PY
save
KV_FILE=kernels/indexer_decode.cu KV_VERSIONS="st4=. st3=v/indexer_decode_st3.cu" KV_ROUNDS=2 \
  KV_ARGS="--case dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b64-32k,dlogits-h64-b16-128k-dcp4 --check-rows 1" \
  timeout 150 sh "$B/gpu-kernel-versions.sh" >"$OUT/D.log" 2>&1; echo "D rc $?"
show st4; show st3
save
