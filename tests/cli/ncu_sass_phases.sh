#!/bin/sh
# tools/ncu-sass-phases.py on a made-up SASS CSV of five instructions in two
# phases (the first ends at a BAR, the second at EXIT; 100 warp samples, 400
# executed warp instructions): the phases' shares, stall reasons and hottest
# instructions, --split and --hot, a gzipped file, and its refusals.
. "${top_srcdir:?}/tests/lib.sh"
tool="python3 $top_srcdir/tools/ncu-sass-phases.py"
csv="$WORK/sass.csv"
cat >"$csv" <<'CSV'
"Kernel Name","void k(args)",
"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)","Instructions Executed","stall_barrier","stall_wait"
"0x0","      LDS R1, [R2]","10","10","100","0","10"
"0x10","      BAR.SYNC.DEFER_BLOCKING 0x0","30","30","10","30","0"
"0x20","      IMAD R3, R1, 0x8, R4","40","35","200","0","20"
"0x30","      @!P0  BRA 0x20","10","5","50","0","0"
"0x40","      EXIT","10","10","40","0","0"
CSV
expect_exit 0 "phases of a made-up kernel" $tool "$csv"
expect_grep "$WORK/out" "# void k(args): 5 instructions, 100 warp samples, 400 warp instructions executed" "  its header"
expect_grep "$WORK/out" "^     0-1      samples  40.0%  instructions  27.5%  ends BAR    stalls barrier 30.0 wait 10.0  hottest: BAR.SYNC" \
  "  phase 0-1 (up to the barrier): 40% of samples, 27.5% of instructions, barrier then wait"
expect_grep "$WORK/out" "^     2-4      samples  60.0%  instructions  72.5%  ends EXIT   stalls wait 20.0  hottest: IMAD R3" \
  "  phase 2-4 (up to EXIT)"
expect_exit 0 "--min 50 leaves the larger phase only" $tool --min 50 "$csv"
expect_exit 0 "  (one phase line)" test "$(grep -c '^ ' "$WORK/out")" -eq 1
expect_exit 0 "--split 0:4:2" $tool --split 0:4:2 "$csv"
expect_grep "$WORK/out" "^     0 samples 40.00%  instructions 27.50%  LDS 25.00 BAR 2.50$" "  block 0: LDS and BAR"
expect_grep "$WORK/out" "^     2 samples 50.00%  instructions 62.50%  IMAD 50.00 BRA 12.50$" "  block 2: IMAD and the predicated BRA"
expect_grep "$WORK/out" "^     4 samples 10.00%  instructions 10.00%  EXIT 10.00$" "  block 4 (past B: cut at B)"
expect_exit 0 "--hot 0:4:30" $tool --hot 0:4:30 "$csv"
expect_exit 0 "  two instructions of 30 samples or more: 1 and 2" test "$(grep -v '^#' "$WORK/out" | awk '{print $1}' | tr '\n' ' ')" = "1 2 "
# with the shared-memory wavefront columns: phase 0-1 at 2x its ideal count, phase 2-4 none ("-")
awk -F, 'BEGIN { OFS = "," } NR == 1 { print; next } NR == 2 { print $0, "\"L1 Wavefronts Shared\"", "\"L1 Wavefronts Shared Ideal\""; next }
  NR == 3 { print $0, "\"20\"", "\"10\""; next } NR == 4 { print $0, "\"0\"", "\"0\""; next } { print $0, "\"-\"", "\"-\"" }' "$csv" >"$WORK/waves.csv"
expect_exit 0 "a report with shared-memory wavefronts" $tool "$WORK/waves.csv"
expect_grep "$WORK/out" "^     0-1 .*wait 10.0  shared wavefronts 2.00x ideal  hottest: BAR" "  phase 0-1: 2.00x its ideal"
expect_grep "$WORK/out" "^     2-4 .*wait 20.0  hottest: IMAD" "  phase 2-4: no shared wavefronts, no figure"
gzip -c "$csv" >"$csv.gz"
expect_exit 0 "a gzipped CSV" $tool "$csv.gz"
expect_grep "$WORK/out" "ends EXIT" "  the same phases"
expect_exit 0 "--help" $tool --help
expect_grep "$WORK/out" "Usage: tools/ncu-sass-phases.py" "  usage on stdout"
expect_exit 2 "not ncu's CSV" $tool "$top_srcdir/README.md"
expect_grep "$WORK/err" "not ncu's SASS source CSV" "  named"
sed 's/"Instructions Executed"/"Other"/' "$csv" >"$WORK/nocol.csv"
expect_exit 2 "no Instructions Executed column" $tool "$WORK/nocol.csv"
expect_grep "$WORK/err" "no column 'Instructions Executed'" "  named"
sed 's/"200"/"2x0"/' "$csv" >"$WORK/badnum.csv"
expect_exit 2 "a count that is not an integer" $tool "$WORK/badnum.csv"
expect_grep "$WORK/err" "badnum.csv:5: a count that is not an integer" "  with its line"
expect_exit 2 "a missing file" $tool "$WORK/none.csv"
expect_exit 2 "--min x" $tool --min x "$csv"
expect_exit 2 "--split 4:2:1" $tool --split 4:2:1 "$csv"
expect_exit 2 "--hot 1:2" $tool --hot 1:2 "$csv"
expect_exit 2 "two files" $tool "$csv" "$csv"
expect_exit 2 "an unknown option" $tool --frobnicate "$csv"
finish
