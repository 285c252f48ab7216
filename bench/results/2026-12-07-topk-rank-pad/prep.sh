#!/bin/sh
# Makes call O's versions in gpu-bundle/v/ (run from the repository root after sh tools/gpu-bundle.sh, on a
# commit whose kernels/topk_bins.cuh is cfc29f9's, as the patches were made against):
#   v2, fbins, v2fbins   kernels/topk_bins.cuh with v2.patch, fbins.patch, v2fbins.patch
# then copies callO.sh into gpu-bundle/. Run as callO.sh says.
set -eu
here=bench/results/2026-12-07-topk-rank-pad
for v in v2 fbins v2fbins; do
  t=$(mktemp -d)
  git archive HEAD kernels | tar x -C "$t"
  (cd "$t" && patch -p1 -s <"$OLDPWD/$here/$v.patch")
  mkdir -p "gpu-bundle/v/$v"
  cp "$t/kernels/topk_bins.cuh" "gpu-bundle/v/$v/"
  rm -rf "$t"
done
cp "$here/callO.sh" gpu-bundle/
ls -R gpu-bundle/v
