#!/bin/sh
# Makes call R's versions in gpu-bundle/v/ (run from the repository root after sh tools/gpu-bundle.sh, on the
# commit whose kernels/ and tests/gpu/ are 7a22cda's, as the patches were made against: cfc29f9's kernels):
#   lean         lean.patch: kernels/topk.cu, topk_bins.cuh, topk_block.cuh
#   leanv2fbins  ../2026-12-07-topk-rank-pad/v2fbins.patch, then lean.patch
# and gpu-bundle/v/test_gpu_indexer.c (lean.patch's test: at least 16 rows an SM in tk_many_rows), then
# copies callR.sh and the case list of ../2026-12-06-issue21-kernels-h100/ (its cases.json) into gpu-bundle/.
set -eu
here=bench/results/2026-12-07-topk-lean
for v in lean leanv2fbins; do
  t=$(mktemp -d)
  git archive HEAD kernels tests/gpu | tar x -C "$t"
  [ "$v" = leanv2fbins ] && (cd "$t" && patch -p1 -s <"$OLDPWD/bench/results/2026-12-07-topk-rank-pad/v2fbins.patch")
  (cd "$t" && patch -p1 -s <"$OLDPWD/$here/lean.patch")
  mkdir -p "gpu-bundle/v/$v"
  cp "$t/kernels/topk.cu" "$t/kernels/topk_bins.cuh" "$t/kernels/topk_block.cuh" "gpu-bundle/v/$v/"
  cp "$t/tests/gpu/test_gpu_indexer.c" gpu-bundle/v/
  rm -rf "$t"
done
cp "$here/callR.sh" gpu-bundle/
cp bench/results/2026-12-06-issue21-kernels-h100/cases.json gpu-bundle/issue21-cases.json
ls -R gpu-bundle/v
