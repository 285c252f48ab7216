#!/bin/sh
# tools/gpu-kernel-ncu.sh without a GPU: a stand-in `ncu` logs its arguments,
# "profiles" (writes the report named by -o, fails where the case says so)
# and "imports" (the details page, or the SASS page as CSV, or neither where
# the report says so), so the checks see the profiling run's selection, which
# files are left and when the report is kept.
. "${top_srcdir:?}/tests/lib.sh"
tool="$top_srcdir/tools/gpu-kernel-ncu.sh"
out="$WORK/results"
mkdir -p "$WORK/bin" "$out"
cat >"$WORK/bin/ncu" <<'STANDIN'
#!/bin/sh
# the stand-in ncu
echo "ncu $*" >>"$WORK_LOG/ncu.log"
rep=; import=; page=details
while [ $# -gt 0 ]; do
  case $1 in
    -o) rep=$2.ncu-rep; shift ;;
    --import) import=$2; shift ;;
    --page) page=$2; shift ;;
    --case) case $2 in *fails*) echo "==ERROR== profiling failed"; exit 3 ;; esac ;;
  esac
  shift
done
if [ -n "$rep" ]; then echo "report" >"$rep"; exit 0; fi
[ -f "$import" ] || { echo "no such report" >&2; exit 1; }
if [ "$page" = source ]; then
  grep -q nosass "$WORK_LOG/mode" 2>/dev/null && { echo "no source" >&2; exit 1; }
  echo '"Address","Source","Warp Stall Sampling (All Samples)"'; echo '"0","IMAD R1, R2, R3","12"'
else
  echo "    Duration                       us       318.20"
  echo "    Registers Per Thread             register/thread  128"
fi
STANDIN
chmod +x "$WORK/bin/ncu"

run_tool() { # ARGS...: the tool with KB and OUT set, its output in $WORK/tool.out
  PATH="$WORK/bin:$PATH" WORK_LOG="$WORK" KB=bench/cplab-kernel-bench OUT="$out" \
    sh "$tool" "$@" >"$WORK/tool.out" 2>&1
}

run_tool topk_prefill topk-4k-32k topk_kernel; rc=$?
expect_exit 0 "one case profiled: exit 0" test $rc -eq 0
expect_grep "$WORK/ncu.log" "-k regex:topk_kernel -c 1 " "  the first launch matching the regex, once"
expect_grep "$WORK/ncu.log" "--section WarpStateStats" "  the warp states' section asked for"
expect_grep "$WORK/ncu.log" "-o $out/topk-4k-32k bench/cplab-kernel-bench --kernel topk_prefill --case topk-4k-32k --reps 1 --warmup 0 --no-ceilings" \
  "  the program's run: that kernel and case, one repetition, no warm-up, no ceilings"
expect_grep "$WORK/ncu.log" "--page source --print-source sass --csv" "  the SASS page read as CSV"
expect_exit 0 "  the details page left" grep -q "Duration" "$out/ncu-topk-4k-32k.txt"
expect_exit 0 "  the SASS page left, compressed" sh -c "gzip -dc '$out/sass-topk-4k-32k.csv.gz' | grep -q IMAD"
expect_exit 0 "  the report removed (its pages are out)" test ! -e "$out/topk-4k-32k.ncu-rep"
expect_exit 0 "  no uncompressed page left" test ! -e "$out/sass-topk-4k-32k.csv"
expect_grep "$WORK/tool.out" "Registers Per Thread" "  the headline lines printed"

echo nosass >"$WORK/mode"
run_tool topk_decode topk-decode-b1-32k topk_cluster; rc=$?
expect_exit 0 "the SASS page not read: exit 1" test $rc -eq 1
expect_exit 0 "  the report kept" test -f "$out/topk-decode-b1-32k.ncu-rep"
expect_exit 0 "  no empty SASS page left" sh -c "! ls '$out'/sass-topk-decode-b1-32k.csv* 2>/dev/null"
expect_grep "$WORK/tool.out" "SASS page of topk-decode-b1-32k could not be read" "  with the reason"
rm -f "$WORK/mode"

run_tool topk_prefill case-fails topk_kernel; rc=$?
expect_exit 0 "ncu failing: exit 1" test $rc -eq 1
expect_grep "$WORK/tool.out" "ncu failed on case-fails (rc 3)" "  named, with its status"
expect_grep "$WORK/tool.out" "profiling failed" "  and its log's tail"

run_tool topk_prefill topk-4k-32k; rc=$?
expect_exit 0 "two arguments: exit 2" test $rc -eq 2
expect_grep "$WORK/tool.out" "usage: gpu-kernel-ncu.sh" "  with the usage"
(PATH="$WORK/bin:$PATH" OUT="$out" sh "$tool" a b c) >"$WORK/tool.out" 2>&1; rc=$?
expect_exit 0 "KB not set: exit 2" test $rc -eq 2
(PATH="$WORK/bin:$PATH" NCU_TIMEOUT=soon WORK_LOG="$WORK" KB=x OUT="$out" sh "$tool" a b c) >"$WORK/tool.out" 2>&1; rc=$?
expect_exit 0 "NCU_TIMEOUT not a number: exit 2" test $rc -eq 2
expect_grep "$WORK/tool.out" "NCU_TIMEOUT must be a positive integer" "  with the reason"
finish
