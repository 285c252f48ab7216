#!/bin/sh
# cplab-bench end to end, in the modes that need no GPU: --dry-run (every
# configuration's per-rank work from the plans, text and JSON) and --report
# (a results file rendered again); bad command lines exit 2 naming the problem.
. "$top_srcdir/tests/lib.sh"
BENCH="$top_builddir/bench/cplab-bench"

expect_exit 0 "--help" "$BENCH" --help
expect_grep "$WORK/out" "^       cplab-bench --dry-run" "usage names the modes"

# The change's table on 4 GPUs: every column's configurations, ranks and the MoE path.
expect_exit 0 "dry run of the default matrix" "$BENCH" --dry-run
for l in tp4 pcp4 tp4dcp4 pcp4dcp4; do
  expect_grep "$WORK/out" "^$l, prefill 32768 in / 1 out, eager" "$l prefill listed"
done
expect_grep "$WORK/out" "^pcp4, decode 1 in / 16 out @ 32768, batch 1, full" "decode under full graphs listed"
expect_grep "$WORK/out" "^pcp4, prefill 32768 in / 1 out, full" "with eager,full a prefill is listed under full"
expect_grep "$WORK/out" "runtime graph mode FULL, MoE PCP fast path (all-reduce)" "PCP decode under full graphs takes the fast path"
expect_grep "$WORK/out" "runtime graph mode NONE, MoE PCP general path" "PCP prefill takes the general path"
expect_grep "$WORK/out" "MoE experts over TP, no PCP path" "TP layouts have no PCP MoE path"
# pcp4's four ranks split the 32768-token prefill evenly (DualChunkSwap).
awk '/^pcp4, prefill 32768 in \/ 1 out, eager/ {on = 1; next} on && /^ +[0-3] / {print $2} on && /max\/mean/ {exit}' \
  "$WORK/out" >"$WORK/tokens"
if [ "$(sort -u "$WORK/tokens")" = 8192 ] && [ "$(wc -l <"$WORK/tokens")" -eq 4 ]; then
  pass "pcp4 ranks hold 8192 tokens each"
else fail "pcp4 ranks' tokens: $(tr '\n' ' ' <"$WORK/tokens")"; fi

# With piecewise listed too, a prefill under full would run piecewise again: listed once.
expect_exit 0 "dry run over three graph modes" "$BENCH" --dry-run --parallel pcp2 --prefill 1024 --decode 1024 \
  --graphs eager,piecewise,full
if grep -q "^pcp2, prefill 1024 in / 1 out, full" "$WORK/out"; then
  fail "a prefill under full graphs runs piecewise and must not be listed twice"
else pass "a prefill under full graphs is not measured twice"; fi
expect_grep "$WORK/out" "^pcp2, decode 1 in / 16 out @ 1024, batch 1, full" "a decode under full graphs is listed"

expect_exit 0 "dry run as JSON" "$BENCH" --dry-run --json --parallel tp2,pcp2dcp2 --decode 4096 --batch 4 --out-tokens 2
expect_grep "$WORK/out" '"cplab_bench_dry_run": "2.0.0"' "JSON names its format"
expect_grep "$WORK/out" '"parallel": "pcp2dcp2"' "JSON holds each set of parallel sizes"
expect_grep "$WORK/out" '"layout": "vllm"' "JSON names the layout apart from the sizes"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["configurations"]) == 4; \
assert all(len(c["ranks"]) == 2 for c in d["configurations"])' "$WORK/out" 2>/dev/null; then
  pass "JSON parses: 2 layouts x 2 graph modes, 2 ranks each"
else fail "JSON does not parse into 4 configurations of 2 ranks"; fi

# --layouts, the parallel sizes' deprecated name, still works and says so once on stderr.
expect_exit 0 "--layouts (deprecated) still works" "$BENCH" --dry-run --json --layouts tp2,pcp2 --prefill 64
cp "$WORK/out" "$WORK/old.json"
n=$(grep -c "note: --layouts is deprecated: it is --parallel now" "$WORK/err")
if [ "$n" -eq 1 ]; then pass "--layouts prints one deprecation line"; else fail "--layouts: $n deprecation lines"; fi
expect_exit 0 "--parallel gives the same" "$BENCH" --dry-run --json --parallel tp2,pcp2 --prefill 64
if cmp -s "$WORK/out" "$WORK/old.json"; then pass "--layouts and --parallel give the same dry run"
else fail "--layouts and --parallel differ"; fi
if [ -s "$WORK/err" ]; then fail "--parallel wrote to stderr: $(cat "$WORK/err")"; else pass "--parallel is quiet"; fi

# --layout NAME: any registered layout; the dry run derives its plans.
expect_exit 0 "--list-layouts" "$BENCH" --list-layouts
expect_grep "$WORK/out" "^block-aligned" "the layouts are listed"
expect_exit 0 "dry run of block-aligned" "$BENCH" --dry-run --json --layout block-aligned --parallel pcp2dcp2 \
  --prefill 4000 --graphs eager
expect_grep "$WORK/out" '"layout": "block-aligned"' "the dry run names the layout"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(r["comm_bytes"].get("mla_kv_gather", 0) for c in d["configurations"] for r in c["ranks"]))' \
  "$WORK/out" >"$WORK/ba" 2>/dev/null
expect_exit 0 "the same under vllm" "$BENCH" --dry-run --json --layout vllm --parallel pcp2dcp2 --prefill 4000 --graphs eager
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(r["comm_bytes"].get("mla_kv_gather", 0) for c in d["configurations"] for r in c["ranks"]))' \
  "$WORK/out" >"$WORK/vl" 2>/dev/null
if [ -s "$WORK/ba" ] && ! cmp -s "$WORK/ba" "$WORK/vl"; then
  pass "block-aligned's plans are its own (workspace bytes $(cat "$WORK/ba") vs vllm's $(cat "$WORK/vl"))"
else fail "block-aligned's dry run equals vllm's ($(cat "$WORK/ba") / $(cat "$WORK/vl"))"; fi
expect_exit 0 "dry run of a mutant" "$BENCH" --dry-run --layout mutant-bad-deinterleave --parallel pcp2dcp2 --prefill 64
expect_grep "$WORK/err" "note: layout mutant-bad-deinterleave is a mutant" "a mutant is said to be one"
expect_grep "$WORK/out" "^# layout mutant-bad-deinterleave" "the text dry run names the layout"
expect_exit 2 "unknown --layout" "$BENCH" --dry-run --layout nope
expect_grep "$WORK/err" "--layout: unknown layout 'nope'" "an unknown layout is named"
# Measuring a layout whose own conversion no kernel of the executor expresses: refused
# by name before a GPU is needed (in a build without CUDA, measuring itself is).
expect_exit 2 "measuring mutant-prefill-block-bound" env CUDA_VISIBLE_DEVICES= "$BENCH" \
  --layout mutant-prefill-block-bound --parallel pcp2dcp2 --prefill 64 --reps 1
if grep -q "built without CUDA" "$WORK/err"; then pass "no measuring in this build"
else
  expect_grep "$WORK/err" "layout mutant-prefill-block-bound: its own convert_prefill is no map the prefill conversion" \
    "the refusal names the layout and the op"
fi
expect_exit 2 "--layout with --report" "$BENCH" --report x.h5 --layout vllm
expect_grep "$WORK/err" "--report renders what the results file holds" "--layout with --report refused"

# --head-pad: the dry run counts the attention of the padding heads apart from the real heads'.
pad_flop() { # --head-pad VALUE -> "real run" attention FLOP of rank 0 of tp4's prefill
  "$BENCH" --dry-run --json --parallel tp4 --prefill 1024 --graphs eager --head-pad "$1" >"$WORK/pad.json" &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d["configurations"][0]; r=c["ranks"][0]; \
print(d["head_pad"], c["heads"]["real"], c["heads"]["run"], r["attn_flop"], r["attn_flop_run"])' "$WORK/pad.json"
}
set -- $(pad_flop auto)
if [ "$1" = 64 ] && [ "$2" = 16 ] && [ "$3" = 64 ] && python3 -c "import sys; assert abs($5 - 4 * $4) < 1e-6 * $5"; then
  pass "auto without a device pads GLM-5's 16 heads on tp4 to 64: 4x the real attention FLOP"
else fail "--head-pad auto: $*"; fi
set -- $(pad_flop none)
if [ "$1" = 0 ] && [ "$3" = 16 ] && [ "$4" = "$5" ]; then pass "none runs the real heads"; else fail "--head-pad none: $*"; fi
set -- $(pad_flop 48)
if [ "$1" = 48 ] && [ "$3" = 48 ]; then pass "48 rounds 16 heads up to 48"; else fail "--head-pad 48: $*"; fi
expect_exit 0 "text dry run with padding" "$BENCH" --dry-run --parallel tp4 --prefill 1024 --graphs eager --head-pad 128
expect_grep "$WORK/out" "query heads per rank 16, run 128, padded to a multiple of 128" "the text names real and run heads"
for bad in 0 1 2000 x -4 ""; do
  expect_exit 2 "--head-pad '$bad'" "$BENCH" --dry-run --head-pad "$bad"
  expect_grep "$WORK/err" "--head-pad $bad: expected auto, none or a multiple in \[2, 1024\]" "--head-pad '$bad' named"
done

# --report: a results file (a fixture: no GPU makes one here) rendered again.
FIXTURE="$top_builddir/tests/cli/bench_fixture"
expect_exit 0 "fixture results written" "$FIXTURE" "$WORK/fx.h5"
expect_exit 0 "--report to standard output" "$BENCH" --report "$WORK/fx.h5"
expect_grep "$WORK/out" "^| workload | tp4 | pcp4 | tp4dcp4 | pcp4dcp4 |$" "the table has the change's columns"
expect_grep "$WORK/out" "^| prefill 32768 in / 1 out, TTFT ms | [0-9.]* | [0-9.]* (0.6[0-9]*×)" "prefill row with pcp4's ratio"
expect_grep "$WORK/out" "Communication was device copies" "the single-device note is said plainly"
cp "$WORK/out" "$WORK/first.md"
expect_exit 0 "--report -o writes every output" "$BENCH" --report "$WORK/fx.h5" -o "$WORK/again"
for f in again.h5 again.json again.md again.gp again.dat; do
  if [ -s "$WORK/$f" ]; then pass "$f written"; else fail "$f missing"; fi
done
if cmp -s "$WORK/first.md" "$WORK/again.md"; then pass "the markdown file equals standard output"
else fail "again.md differs from the standard output rendering"; fi
expect_exit 0 "the written results render again" "$BENCH" --report "$WORK/again.h5"
if cmp -s "$WORK/first.md" "$WORK/out"; then pass "a results file survives a round trip through --report -o"
else fail "rendering again.h5 differs from rendering the fixture"; fi
if command -v gnuplot >/dev/null 2>&1; then
  set -- "$WORK"/again-*.png
  if [ -s "$1" ]; then pass "gnuplot drew the plots"; else fail "gnuplot is here but no PNG was drawn"; fi
fi
expect_exit 0 "--report -o --no-plots" "$BENCH" --report "$WORK/fx.h5" -o "$WORK/plain" --no-plots
if [ ! -e "$WORK/plain.gp" ]; then pass "--no-plots writes no plot script"; else fail "--no-plots wrote plain.gp"; fi

# Bad command lines.
# No mode measures; with no GPU visible that is an error that says so.
expect_exit 2 "measuring with no GPU visible" env CUDA_VISIBLE_DEVICES= "$BENCH" --prefill 1024 --reps 2
expect_grep "$WORK/err" "measuring needs a GPU" "measuring without a GPU: the message says what is needed"
expect_exit 2 "both modes" "$BENCH" --dry-run --report x.h5
expect_grep "$WORK/err" "choose --dry-run" "both modes: the message names the modes"
expect_exit 2 "--reps with --dry-run" "$BENCH" --dry-run --reps 3
expect_grep "$WORK/err" "go with measuring" "measuring options outside measuring are named"
expect_exit 2 "bad --gemm" "$BENCH" --gemm fp16 --prefill 64
expect_grep "$WORK/err" "expected bf16 or fp8" "a bad --gemm is named"
expect_exit 2 "bad --backend" "$BENCH" --backend mpi --prefill 64
expect_grep "$WORK/err" "expected single or nccl" "a bad --backend is named"
expect_exit 2 "--backend with --report" "$BENCH" --report x.h5 --backend nccl
expect_grep "$WORK/err" "go with measuring" "--backend outside measuring is named"
# The NCCL backend runs one process per rank: a two-rank layout in one process
# is refused before anything runs (in a build without NCCL, the backend is).
expect_exit 2 "--backend nccl, two ranks, one process" "$BENCH" --backend nccl --parallel tp1,tp2 --prefill 64
expect_grep "$WORK/err" "--backend nccl: " "the refusal names the backend"
if [ -n "$MPIRUN" ]; then
  expect_exit 2 "the single-device backend under mpirun -np 2" timeout 120 "$MPIRUN" -np 2 "$BENCH" --prefill 64
  expect_grep "$WORK/err" "without mpirun" "the message says to run without mpirun"
  n=$(grep -c "cplab-bench: error" "$WORK/err")
  if [ "$n" -eq 1 ]; then pass "a usage error is said once, not by every process"; else fail "said $n times"; fi
fi
# The node script of the layout comparison refuses what it cannot run.
expect_exit 2 "run-gpu-layers.sh without arguments" sh "$top_srcdir/bench/run-gpu-layers.sh"
expect_exit 2 "run-gpu-layers.sh without cplab-bench" sh "$top_srcdir/bench/run-gpu-layers.sh" "$WORK/none" "$WORK/o"
expect_grep "$WORK/err" "is missing" "the missing program is named"
expect_exit 2 "run-gpu-layers.sh with GPUS not a number" sh "$top_srcdir/bench/run-gpu-layers.sh" \
  "$top_builddir" "$WORK/o" two
expect_grep "$WORK/err" "is not a positive number" "a bad GPU count is refused"
expect_exit 2 "bad --model-set" "$BENCH" --dry-run --model-set hidden_size
expect_grep "$WORK/err" "is not FIELD=VALUE" "a malformed --model-set is named"
expect_exit 2 "unknown --model-set field" "$BENCH" --dry-run --model-set hidden_sise=1024 --prefill 64
expect_grep "$WORK/err" "hidden_sise" "an unknown model field is named"
expect_exit 0 "--model-set over the preset" "$BENCH" --dry-run --json --model-set n_routed_experts=16,num_heads=16 \
  --parallel tp2 --prefill 64
expect_exit 2 "bad parallel sizes" "$BENCH" --dry-run --parallel pcp4tp2
expect_grep "$WORK/err" "parallel sizes 'pcp4tp2': expected tp, pcp and dcp sizes in that order" "bad sizes named"
expect_exit 2 "parallel sizes the rules reject" "$BENCH" --dry-run --parallel tp2dcp4 --prefill 64
expect_grep "$WORK/err" "tp2dcp4, prefill 64 in / 1 out" "the rejected configuration is named"
expect_exit 2 "unknown graph mode" "$BENCH" --dry-run --graphs fast
expect_exit 2 "unknown preset" "$BENCH" --dry-run --preset llama
expect_exit 2 "bad batch" "$BENCH" --dry-run --batch 0
expect_exit 2 "--scenario is not taken" "$BENCH" --dry-run --scenario smoke
expect_exit 2 "--dry-run with -o" "$BENCH" --dry-run -o x
expect_exit 2 "missing results file" "$BENCH" --report "$WORK/none.h5"
expect_grep "$WORK/err" "none.h5" "the missing results file is named"
printf 'not hdf5\n' >"$WORK/junk.h5"
expect_exit 2 "a results file that is not HDF5" "$BENCH" --report "$WORK/junk.h5"
finish
