#!/bin/sh
# cplab-moe-bench on GPUs: the MoE block's general PCP path (all-gather, the
# shard over every rank's rows, reduce-scatter) and its fast path (the
# shard over the local rows, all-reduce) give the same output on every rank,
# checked by the program before it times them. One rank on any GPU (P = 1:
# the collectives are copies); with two GPUs and mpirun, two ranks, each
# holding one of two MoE shards, and the refusal of sizes that do not split
# over the ranks. Skips (77) without CUDA, NCCL or a GPU.
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
. "$top_srcdir/tests/lib.sh"
MOE="$top_builddir/bench/cplab-moe-bench"
if [ ! -x "$MOE" ]; then echo "SKIP: built without NCCL"; exit 77; fi
"$top_builddir/tests/gpu/gpu_probe" >/dev/null 2>&1
case $? in 0) ;; 77) echo "SKIP: no GPU visible"; exit 77 ;; *) echo "the GPU probe failed"; exit 1 ;; esac
# A small block: d 256, 16 experts, top-4, intermediate 128, 2 shared; batches
# of 1, 37 and 300 rows per rank (300 is more than one 256-row chunk of the
# permutation's scan).
SHAPE=256,16,4,128,2

# check_run NAME NP: the program's check lines and its JSON.
check_run() {
  n=$(grep -c "fast == general within tolerance" "$WORK/out")
  if [ "$n" -eq 3 ]; then pass "$1: the paths agreed on all 3 batches"; else fail "$1: $n of 3 batches checked"; fi
  if grep -q '"fast_over_general"' "$WORK/$1.json" && [ "$(grep -c '"rows_per_rank"' "$WORK/$1.json")" -eq 3 ]; then
    pass "$1: JSON with 3 timed batches"
  else fail "$1: the JSON lacks the timed batches"; fi
  expect_grep "$WORK/$1.json" "\"ranks\": $2" "$1: the JSON records $2 rank(s)"
}

expect_exit 0 "one rank, checked and timed" "$MOE" --shape $SHAPE --batch 1,37,300 --reps 3 --warmup 1 -o "$WORK/np1.json"
sed 's/^/  /' "$WORK/out"
check_run np1 1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${gpus:-0}" -ge 2 ] && [ -n "$MPIRUN" ]; then
  expect_exit 0 "two ranks on two GPUs, checked and timed" timeout 300 "$MPIRUN" -np 2 "$MOE" --shape $SHAPE \
    --batch 1,37,300 --reps 3 --warmup 1 -o "$WORK/np2.json"
  sed 's/^/  /' "$WORK/out"
  check_run np2 2
  expect_exit 2 "a shared slice that does not split over 2 ranks" timeout 300 "$MPIRUN" -np 2 "$MOE" \
    --shape 256,16,4,3,1 --batch 1 --reps 1
  expect_grep "$WORK/err" "2 ranks: cplab_moe: the shared intermediate size 3 .* must divide into 2 equal slices" \
    "the refusal names the rule and the rank count"
else
  echo "# fewer than two GPUs or no mpirun: the two-rank run is not run"
fi
finish
