#!/bin/sh
# Usage: a step of a profiling script (SCRIPT of tools/gpu-kernel-prof.sh), so
# run in the build directory with KB (the program) and OUT (where results go):
#   sh BUNDLE/gpu-kernel-ncu.sh BENCH_KERNEL CASE NCU_KERNEL_REGEX
# e.g. sh "$B/gpu-kernel-ncu.sh" topk_prefill topk-4k-32k topk_kernel
# Profiles the first launch whose name matches NCU_KERNEL_REGEX in one run of
# `$KB --kernel BENCH_KERNEL --case CASE` (one repetition, no warm-up, no
# ceilings) with Nsight Compute, and leaves in OUT:
#   ncu-CASE.log     ncu's own output while profiling
#   ncu-CASE.txt     the report's details page (speed of light, occupancy,
#                    warp states, instruction and scheduler statistics, ...)
#   sass-CASE.csv.gz the source page as SASS with its counters (what
#                    tools/ncu-sass-phases.py reads); build with
#                    NVCC_EXTRA=-lineinfo for it to name CUDA lines
#   CASE.ncu-rep     the report itself, kept only where the SASS page did not
#                    come out (the device tool brings back few, small files)
# then prints the headline lines of the details page. The results folders'
# call scripts of issue 21 (bench/results/2026-12-07-*/call*.sh) ran these
# steps inline. NCU_TIMEOUT (seconds, default 60) bounds the profiling run.
# Exit status: 0; 1 where ncu failed or a page could not be read from the
# report; 2 for a usage error.
set -u
usage="usage: gpu-kernel-ncu.sh BENCH_KERNEL CASE NCU_KERNEL_REGEX (KB and OUT set)"
[ $# -eq 3 ] || { echo "$usage" >&2; exit 2; }
[ -n "${KB:-}" ] && [ -n "${OUT:-}" ] || { echo "$usage" >&2; exit 2; }
[ -d "$OUT" ] || { echo "gpu-kernel-ncu.sh: OUT '$OUT' is not a directory" >&2; exit 2; }
kernel=$1 c=$2 regex=$3
limit=${NCU_TIMEOUT:-60}
case $limit in '' | *[!0-9]* | 0) echo "gpu-kernel-ncu.sh: NCU_TIMEOUT must be a positive integer, not '$limit'" >&2; exit 2 ;; esac
timeout "$limit" ncu -k "regex:$regex" -c 1 --section SpeedOfLight --section LaunchStats --section Occupancy \
  --section WarpStateStats --section SourceCounters --section InstructionStats --section MemoryWorkloadAnalysis \
  --section SchedulerStats -o "$OUT/$c" "$KB" --kernel "$kernel" --case "$c" --reps 1 --warmup 0 --no-ceilings \
  >"$OUT/ncu-$c.log" 2>&1
rc=$?
echo "$c: ncu rc $rc"
[ $rc -eq 0 ] && [ -f "$OUT/$c.ncu-rep" ] || { echo "gpu-kernel-ncu.sh: ncu failed on $c (rc $rc):" >&2; tail -5 "$OUT/ncu-$c.log" >&2; exit 1; }
status=0
ncu --import "$OUT/$c.ncu-rep" >"$OUT/ncu-$c.txt" 2>&1 || { echo "gpu-kernel-ncu.sh: the details page of $c could not be read" >&2; status=1; }
if ncu --import "$OUT/$c.ncu-rep" --page source --print-source sass --csv >"$OUT/sass-$c.csv" 2>"$OUT/sass-$c.err" &&
  [ -s "$OUT/sass-$c.csv" ]; then
  gzip -9f "$OUT/sass-$c.csv" && rm -f "$OUT/$c.ncu-rep" "$OUT/sass-$c.err"
else
  echo "gpu-kernel-ncu.sh: the SASS page of $c could not be read (the report is kept)" >&2
  rm -f "$OUT/sass-$c.csv"; status=1
fi
grep -E "Duration|Warp Cycles Per Issued|Issued Warp|Executed Instructions  |Registers Per|No Eligible" \
  "$OUT/ncu-$c.txt" | head -8
exit $status
