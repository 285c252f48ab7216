#!/bin/sh
# Usage: a profiling script (CPLAB_KERNEL_PROF of tools/gpu-node-check.sh, or
# SCRIPT of tools/gpu-kernel-prof.sh), so run in the build directory with KB
# (the program) and OUT (where results go) set, and with
#   KV_FILE      the source file the versions replace, e.g. kernels/topk.cu
#   KV_VERSIONS  "LABEL=FILE ...": FILE relative to the bundle directory
#                (where tools/gpu-bundle.sh put this script), or "." for the
#                build's own file; distinct labels. A FILE that is a folder
#                is a version of several files: each of its files replaces
#                the file of that name beside KV_FILE (or is added there)
#   KV_ARGS      cplab-kernel-bench's selection, e.g. "--kernel topk_prefill --case topk-4k-32k";
#                add "--check-rows 1" where the host check dominates a run (the
#                decode logits' double reference takes about 1 s a row of 32768
#                keys at 64 heads: 6-11 s a case at the default 8 rows, 45 s a
#                round of six cases, on the H200 node, 2026-12-04)
#   KV_ROUNDS    how many times each version runs (default 2)
# Times versions of one kernel file on one node in one call: each version is
# built once (make bench/cplab-kernel-bench; OUT/build-LABEL.log) and its
# program kept beside KB; then the programs run in turns, round after round
# (round 1: every version in KV_VERSIONS' order, then round 2, ...), each with
# KV_ARGS, --no-ceilings and --commit LABEL (OUT/LABEL-ROUND.txt, .json,
# .err). Interleaved rounds show the call's drift beside the versions'
# differences (bench/NOTES.md: a version's rounds agreed within 1%, where
# one run after the ceilings' GEMMs was 2-4% slow). The build's own files
# are put back after each version's build and at the end (not rebuilt), the
# files a folder added removed, and the kept programs removed. Exit 1
# where a version's file is missing, a build fails or a run fails. Example
# (bench/results/2026-12-03-topk-3s-h200/ was made with a script of this
# shape):
#   KV_FILE=kernels/topk.cu KV_VERSIONS="3n=topk_3n.cu 3s=." \
#   KV_ARGS="--kernel topk_prefill --case topk-4k-32k" CPLAB_KERNEL_PROF=BUNDLE/gpu-kernel-versions.sh ...
set -u
bundle=$(cd "$(dirname "$0")" && pwd)
: "${KB:?}" "${OUT:?}" "${KV_FILE:?}" "${KV_VERSIONS:?}" "${KV_ARGS:?}"
rounds=${KV_ROUNDS:-2}
case $rounds in '' | *[!0-9]* | 0) echo "gpu-kernel-versions.sh: KV_ROUNDS must be a positive integer, not '$rounds'" >&2; exit 1 ;; esac
kdir=$(dirname "$KV_FILE")
own=$(mktemp -d)   # the build's own files that some version replaces
added=""           # files a folder version adds (removed again)
cp "$KV_FILE" "$own/" || exit 1
for v in $KV_VERSIONS; do
  file=${v#*=}
  [ "$file" != . ] && [ -d "$bundle/$file" ] || continue
  for f in "$bundle/$file"/*; do
    n=$(basename "$f")
    if [ -f "$kdir/$n" ]; then [ -e "$own/$n" ] || cp "$kdir/$n" "$own/" || exit 1
    else case " $added " in *" $n "*) ;; *) added="$added $n" ;; esac; fi
  done
done
restore() { # the build's own files back, added ones gone
  cp "$own"/* "$kdir/"
  for n in $added; do rm -f "$kdir/$n"; done
}
kept=$(dirname "$KB")/kv
status=0
labels=""
for v in $KV_VERSIONS; do
  label=${v%%=*} file=${v#*=}
  if [ "$file" = . ]; then :
  elif [ -d "$bundle/$file" ]; then cp "$bundle/$file"/* "$kdir/"
  else cp "$bundle/$file" "$KV_FILE"; fi || { status=1; break; }
  if ! make -j16 bench/cplab-kernel-bench >"$OUT/build-$label.log" 2>&1; then
    tail -20 "$OUT/build-$label.log"
    status=1
    break
  fi
  cp "$KB" "$kept-$label" || { status=1; break; }
  labels="$labels $label"
  restore
done
restore
rm -rf "$own"
round=1
while [ $status -eq 0 ] && [ "$round" -le "$rounds" ]; do
  for label in $labels; do
    # shellcheck disable=SC2086 # KV_ARGS are words
    timeout 300 "$kept-$label" $KV_ARGS --no-ceilings --commit "$label" --json "$OUT/$label-$round.json" \
      >"$OUT/$label-$round.txt" 2>"$OUT/$label-$round.err" || status=1
    echo "== $label, round $round"
    grep -v '^#' "$OUT/$label-$round.txt"
  done
  round=$((round + 1))
done
for label in $labels; do rm -f "$kept-$label"; done
exit $status
