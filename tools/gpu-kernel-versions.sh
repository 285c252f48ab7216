#!/bin/sh
# Usage: a profiling script (CPLAB_KERNEL_PROF of tools/gpu-node-check.sh, or
# SCRIPT of tools/gpu-kernel-prof.sh), so run in the build directory with KB
# (the program) and OUT (where results go) set, and with
#   KV_FILE      the source file the versions replace, e.g. kernels/topk.cu
#   KV_VERSIONS  "LABEL=FILE ...": FILE relative to the bundle directory
#                (where tools/gpu-bundle.sh put this script), or "." for the
#                build's own file; timed in this order; distinct labels (a
#                label's files are overwritten by a later run of it)
#   KV_ARGS      cplab-kernel-bench's selection, e.g. "--kernel topk_prefill --case topk-4k-32k"
# Times versions of one kernel file on one node in one call: each version
# rebuilt (make bench/cplab-kernel-bench), then run with KV_ARGS,
# --no-ceilings and --commit LABEL (OUT/LABEL.txt, .json, .err; OUT/build-LABEL.log).
# Run the build's own version first and last (two labels) to see the call's
# drift. The build's own file is put back at the end (not rebuilt). Exit 1
# where a build or a run fails. Example (bench/results/2026-12-03-topk-3n-h200/
# was made with a script of this shape):
#   KV_FILE=kernels/topk.cu KV_VERSIONS="3n=. 3m=topk_3m.cu 3n-again=." \
#   KV_ARGS="--kernel topk_prefill --case topk-4k-32k" CPLAB_KERNEL_PROF=BUNDLE/gpu-kernel-versions.sh ...
set -u
bundle=$(cd "$(dirname "$0")" && pwd)
: "${KB:?}" "${OUT:?}" "${KV_FILE:?}" "${KV_VERSIONS:?}" "${KV_ARGS:?}"
own=$(mktemp)
cp "$KV_FILE" "$own" || exit 1
status=0
for v in $KV_VERSIONS; do
  label=${v%%=*} file=${v#*=}
  if [ "$file" = . ]; then cp "$own" "$KV_FILE"; else cp "$bundle/$file" "$KV_FILE"; fi || { status=1; break; }
  if ! make -j16 bench/cplab-kernel-bench >"$OUT/build-$label.log" 2>&1; then
    tail -20 "$OUT/build-$label.log"
    status=1
    break
  fi
  # shellcheck disable=SC2086 # KV_ARGS are words
  timeout 300 "$KB" $KV_ARGS --no-ceilings --commit "$label" --json "$OUT/$label.json" >"$OUT/$label.txt" \
    2>"$OUT/$label.err" || status=1
  echo "== $label"
  grep -v '^#' "$OUT/$label.txt"
done
cp "$own" "$KV_FILE"
rm -f "$own"
exit $status
