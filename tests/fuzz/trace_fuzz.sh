#!/bin/sh
# A short libFuzzer run over the trace reader from the committed seed corpus;
# new inputs go to a scratch copy. Skips (77) when the build has no libFuzzer
# target. In the suite the run is reproducible: a fixed seed and a fixed
# number of inputs (FUZZ_SEED, FUZZ_RUNS), with FUZZ_SECONDS (default 120) as
# a cap on slow machines, so a CI failure can be replayed exactly. A longer,
# exploring run by hand (FUZZ_SEED=0: a fresh random seed, printed):
#   FUZZ_SEED=0 FUZZ_RUNS=-1 FUZZ_SECONDS=600 top_srcdir=. top_builddir=build sh tests/fuzz/trace_fuzz.sh
: "${top_srcdir:?}" "${top_builddir:?}"
FUZZER="$top_builddir/traces/fuzz_trace"
if [ ! -x "$FUZZER" ]; then echo "SKIP: no libFuzzer target in this build"; exit 77; fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cplab-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
# libFuzzer reports leaks of libhdf5's error paths too; the same suppressions as the tests apply.
ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$top_srcdir/tests/lsan.supp:print_suppressions=0" \
  "$FUZZER" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-20000}" -max_total_time="${FUZZ_SECONDS:-120}" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "$top_srcdir/tests/fuzz/corpus" >"$work/log" 2>&1
status=$?
grep -E "^(INFO: Seed:|#[0-9]+.*(DONE|pulse)|stat::number_of_executed_units|stat::peak_rss_mb|==.*ERROR|SUMMARY)" "$work/log" | tail -8
if [ $status -ne 0 ]; then
  tail -40 "$work/log"
  for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
    [ -f "$a" ] && cp "$a" "$top_builddir/" && echo "kept $(basename "$a") in $top_builddir"
  done
  exit 1
fi
echo "fuzzing: no crash, hang or sanitizer report"
