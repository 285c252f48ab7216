#!/bin/sh
# cplab-bench's measurement engine on the GPU: the checks of
# tests/bench_engine.sh with the real kernels, then its NCCL backend (one
# rank, and two ranks on two GPUs). Skips (77) when this build has no CUDA or
# no GPU is visible (the probe says which).
if [ "$HAVE_CUDA" != yes ]; then echo "SKIP: built without CUDA"; exit 77; fi
"$top_builddir/tests/gpu/gpu_probe" >/dev/null 2>&1
case $? in 0) ;; 77) echo "SKIP: no GPU visible"; exit 77 ;; *) echo "the GPU probe failed"; exit 1 ;; esac
. "$top_srcdir/tests/lib.sh"
ENGINE="$top_builddir/bench/cplab-bench"
. "$top_srcdir/tests/bench_engine.sh"

# The NCCL backend (one process per rank and GPU): one rank without mpirun on
# any GPU; with two GPUs and mpirun, two ranks with DCP inside TP, inside PCP,
# and PCP alone (the MoE's general path), every configuration checked
# against cplab-exec's NCCL backend on the same plans, bit for bit.
if ! "$ENGINE" --backend nccl --help >/dev/null 2>&1 || ! nm "$ENGINE" 2>/dev/null | grep -q engine_nccl_shards; then
  echo "# no NCCL in this build: the NCCL backend is not run"
else
  expect_exit 0 "NCCL backend, one rank, checked" "$ENGINE" --backend nccl --model-set "$MODEL" --parallel tp1 \
    --prefill 48 --decode 80 --out-tokens 2 --graphs eager,full --reps 2 --check 16 -o "$WORK/n1" --no-plots
  expect_grep "$WORK/n1.md" "NCCL collectives" "the one-rank report names the NCCL backend"
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ "${gpus:-0}" -ge 2 ] && [ -n "$MPIRUN" ]; then
    expect_exit 0 "NCCL backend, two ranks on two GPUs, checked" timeout 600 "$MPIRUN" -np 2 "$ENGINE" --backend nccl \
      --model-set "$MODEL" --parallel tp2dcp2,pcp2dcp2,pcp2,tp2 --prefill 48 --decode 80 --out-tokens 2 --batch 2 \
      --graphs eager,piecewise,full --reps 2 --warmup 1 --layers 2 --check 16 -o "$WORK/n2" --no-plots
    sed 's/^/  /' "$WORK/err"
    n=$(grep -c "rows agree with cplab-exec's" "$WORK/err")
    if [ "$n" -eq 20 ]; then pass "20 configurations on two GPUs checked against cplab-exec's NCCL backend"
    else fail "$n configurations checked on two GPUs, expected 20"; fi
    expect_grep "$WORK/n2.md" "NCCL collectives" "the two-GPU report names the NCCL backend"
    expect_exit 0 "NCCL backend, mixed batches on two GPUs, checked" timeout 300 "$MPIRUN" -np 2 "$ENGINE" \
      --backend nccl --model-set "$MODEL" --parallel pcp2dcp2,tp2 --mixed 24+2@70 --graphs piecewise --reps 1 \
      --check 12
    expect_grep "$WORK/err" "rows agree with cplab-exec's" "mixed batches on two GPUs checked"
    expect_exit 2 "parallel sizes of 4 ranks under mpirun -np 2" timeout 300 "$MPIRUN" -np 2 "$ENGINE" --backend nccl \
      --model-set "$MODEL" --parallel tp4 --prefill 48
    expect_grep "$WORK/err" "parallel sizes tp4 have 4 ranks, but 2 process(es) run" "the refusal names the sizes"
  else
    echo "# fewer than two GPUs or no mpirun: the two-rank NCCL runs are not run"
  fi
fi
finish
