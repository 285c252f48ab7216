#!/bin/sh
# The MPI + NCCL benchmarks' command lines (bench/mpibench.c and its two
# programs): usage errors exit 2 naming the option, --help exits 0, and
# without a GPU they exit 2 saying so rather than crash. Runs without a GPU;
# skips (77) where the build has no NCCL (the programs are not built).
. "$top_srcdir/tests/lib.sh"
GATHER="$top_builddir/bench/cplab-gather-bench"
MOE="$top_builddir/bench/cplab-moe-bench"
if [ ! -x "$GATHER" ] || [ ! -x "$MOE" ]; then echo "SKIP: built without NCCL"; exit 77; fi

expect_exit 0 "cplab-moe-bench --help" "$MOE" --help
expect_grep "$WORK/out" "general = all-gather" "the help says what the two paths are"
expect_exit 2 "--batch 0" "$MOE" --batch 0
expect_grep "$WORK/err" "\-\-batch: '0' is not a count in \[1, 65536\]" "the refusal names --batch and its range"
expect_exit 2 "--batch with an empty item" "$MOE" --batch 1,,4
expect_grep "$WORK/err" "\-\-batch: bad list '1,,4'" "the refusal quotes the list"
expect_exit 2 "an unknown preset" "$MOE" --preset llama
expect_grep "$WORK/err" "unknown model 'llama'" "the refusal names the preset"
expect_exit 2 "--shape with four values" "$MOE" --shape 64,8,2,32
expect_grep "$WORK/err" "want 5 values" "the refusal says how many values --shape takes"
expect_exit 2 "--shape with top_k above the experts" "$MOE" --shape 64,8,9,32,1
expect_grep "$WORK/err" "top_k must be 1..experts" "the refusal names the MoE rule"
expect_exit 2 "--reps 0" "$MOE" --reps 0
expect_grep "$WORK/err" "\-\-reps" "the refusal names --reps"
expect_exit 2 "an unexpected argument" "$MOE" extra
expect_grep "$WORK/err" "unexpected argument 'extra'" "the refusal names the argument"
expect_exit 2 "an unknown option" "$MOE" --nope
expect_exit 0 "cplab-gather-bench --help" "$GATHER" --help
expect_exit 2 "cplab-gather-bench --rows 0" "$GATHER" --rows 0
expect_grep "$WORK/err" "\-\-rows: '0' is not a count" "the refusal names --rows"

# The node script refuses what it cannot run.
expect_exit 2 "run-gpu-moe.sh without arguments" sh "$top_srcdir/bench/run-gpu-moe.sh"
expect_exit 2 "run-gpu-moe.sh without cplab-moe-bench" sh "$top_srcdir/bench/run-gpu-moe.sh" "$WORK/none" "$WORK/o"
expect_grep "$WORK/err" "cplab-moe-bench is missing" "the missing program is named"
expect_exit 2 "run-gpu-moe.sh with NP not a number" sh "$top_srcdir/bench/run-gpu-moe.sh" "$top_builddir" "$WORK/o" two
expect_grep "$WORK/err" "is not a positive number" "a bad rank count is refused"

# Without a GPU, the set-up's refusal (and no NCCL call).
if ! "$top_builddir/tests/gpu/gpu_probe" >/dev/null 2>&1; then
  for prog in "$MOE" "$GATHER"; do
    name=$(basename "$prog")
    expect_exit 2 "$name without a GPU" "$prog" --reps 1
    expect_grep "$WORK/err" "needs one GPU per MPI rank" "$name says it needs a GPU"
  done
fi
finish
