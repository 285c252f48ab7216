#!/bin/sh
# The shape of this folder's calls 3t/ and 3u/ (run by tools/gpu-kernel-prof.sh on the node, in the build
# directory, KB and OUT set; LABEL = 3t or 3u, the build's own kernels, vs/3s = 1b96893's topk.cu and
# topk_bins.cuh, vs/b8 = LABEL's topk_bins.cuh with TOPK_CAND_BATCH 8): the GPU test on LABEL, builds,
# interleaved runs (two rounds), ncu of LABEL at 4096 x 32768. Everything in $OUT/r.tar.gz.
set -u
LABEL=${LABEL:-3u}
B=$(cd "$(dirname "$0")" && pwd)
D=$(dirname "$KB")
R=$(mktemp -d)
C="topk-4k-32k,topk-8k-32k,topk-4k-causal-32k,topk-decode-b1-32k,topk-decode-b1-8k,topk-decode-b1-128k,topk-decode-b64-128k"
finish() { tar czf "$OUT/r.tar.gz" -C "$R" .; }
trap finish EXIT
( make -j16 tests/gpu/test_gpu_indexer >"$R/build-test.log" 2>&1 && timeout 240 ./tests/gpu/test_gpu_indexer ) >"$R/gpu_indexer-$LABEL.log" 2>&1
echo "== GPU test (rc $?)"; grep -E "^FAIL|checks" "$R/gpu_indexer-$LABEL.log"
mkdir -p /tmp/orig && cp kernels/topk*.cu kernels/topk*.cuh /tmp/orig/
cp "$KB" "$D/kv-$LABEL"
labels=$LABEL
for v in 3s b8; do
  cp "$B"/vs/$v/* kernels/
  if make -j16 bench/cplab-kernel-bench >"$R/build-$v.log" 2>&1; then cp "$KB" "$D/kv-$v"; labels="$labels $v"; else tail -20 "$R/build-$v.log"; fi
  cp /tmp/orig/* kernels/
done
for round in 1 2; do
  for v in $labels; do
    timeout 120 "$D/kv-$v" --kernel topk_prefill,topk_decode --case $C --no-ceilings --commit "$v" --json "$R/$v-$round.json" >"$R/$v-$round.txt" 2>"$R/$v-$round.err"
    echo "== $v round $round (rc $?)"; grep -E "^ topk" "$R/$v-$round.txt" | cut -c1-100
  done
done
c=topk-4k-32k
timeout 200 ncu -k regex:topk -c 1 --section SpeedOfLight --section WarpStateStats --section SourceCounters --section InstructionStats \
  -o $R/$c $D/kv-$LABEL --kernel topk_prefill --case $c --reps 1 --warmup 0 --no-ceilings > $R/ncu-$c.log 2>&1
ncu --import $R/$c.ncu-rep > $R/ncu-$c.txt 2>&1
ncu --import $R/$c.ncu-rep --page source --print-source sass --csv --launch-count 1 > $R/sass-$c.csv 2>&1
gzip -9 $R/sass-$c.csv; rm -f $R/$c.ncu-rep
