#!/bin/sh
# cplab-exec's NCCL backend (one MPI rank per GPU) against the simulator and
# against the single-device backend: cplab-diff agreement with sim (policy),
# bit-identity with the single-device backend's trace (every tolerance 0:
# an all-gather is a copy, the exact top-k merge equals one top-k), and
# rank-invariance on the real ranks; a mutant is stopped by plan consensus.
# World 1 needs one GPU, the world-2 layouts (TP1/PCP2/DCP2, TP2/PCP1/DCP2,
# TP1/PCP2/DCP1) two; skips (77) without NCCL, mpirun or a GPU.
. "$top_srcdir/tests/lib.sh"
EXEC="$top_builddir/cplab-exec"
DIFF="$top_builddir/cplab-diff"
if [ "$HAVE_CUDA" != yes ] || ! "$EXEC" --backend nccl --help >/dev/null 2>&1; then echo "SKIP: no CUDA/NCCL build"; exit 77; fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${gpus:-0}" -lt 1 ]; then echo "SKIP: no GPU"; exit 77; fi
if [ -z "$MPIRUN" ]; then echo "SKIP: no mpirun"; exit 77; fi
cat >"$WORK/exact.json" <<'JSON'
{ "attn_out": { "atol": 0, "rtol": 0, "ulp": 0, "cosine": 0 }, "attn_lse": { "atol": 0, "rtol": 0, "ulp": 0, "cosine": 0 },
  "attn_partial_out": { "atol": 0, "rtol": 0, "ulp": 0, "cosine": 0 }, "attn_partial_lse": { "atol": 0, "rtol": 0, "ulp": 0, "cosine": 0 },
  "topk_scores": { "atol": 0, "rtol": 0, "ulp": 0, "cosine": 0 }, "kth_score": { "atol": 0, "rtol": 0, "ulp": 0, "cosine": 0 },
  "topk": { "tie_eps": 0 } }
JSON
scenario() { # NAME TP PCP DCP INTERLEAVE SEED [NUM_HEADS]
  cat >"$WORK/$1.json" <<JSON
{ "cplab_scenario": 1, "name": "$1", "model": { "preset": "glm-5", "num_heads": ${7:-64}, "index_topk": 512 },
  "parallel": { "tp": $2, "pcp": $3, "dcp": $4, "interleave": $5, "block_size": 64, "max_model_len": 8192,
                "cudagraph_mode": "FULL_AND_PIECEWISE" },
  "layout": "vllm", "seed": $6, "check": { "sampled_rows": 12 },
  "workload": { "generator": { "steps": 4, "requests": { "dist": "uniform", "min": 1, "max": 4 },
    "decode_fraction": 0.4, "context": { "dist": "uniform", "min": 1, "max": 3000 },
    "prefill_tokens": { "dist": "uniform", "min": 1, "max": 1500 }, "chunked_fraction": 0.3 } } }
JSON
}
run() { # NAME WORLD
  n=$1; np=$2
  "$SIM" --scenario "$WORK/$n.json" --numeric -q -o "$WORK/$n-sim.h5" 2>/dev/null
  "$EXEC" --scenario "$WORK/$n.json" -q -o "$WORK/$n-single.h5" 2>"$WORK/err" || { fail "$n: single-device run"; cat "$WORK/err"; return; }
  if [ "$np" -eq 1 ]; then launcher=""; else launcher="timeout 300 $MPIRUN -np $np"; fi
  expect_exit 0 "$n: NCCL backend on $np GPU(s)" $launcher "$EXEC" --backend nccl --scenario "$WORK/$n.json" -o "$WORK/$n-nccl.h5"
  head -3 "$WORK/out"
  expect_exit 0 "$n: NCCL agrees with sim" "$DIFF" -q "$WORK/$n-sim.h5" "$WORK/$n-nccl.h5"
  expect_exit 0 "$n: NCCL = single-device, bit for bit" "$DIFF" --policy "$WORK/exact.json" "$WORK/$n-single.h5" "$WORK/$n-nccl.h5"
  tail -12 "$WORK/out" | sed 's/^/  /'
  expect_exit 0 "$n: rank-invariant on the real ranks" "$DIFF" --ranks -q "$WORK/$n-nccl.h5"
}
scenario w1 1 1 1 1 11
run w1 1
if [ "$gpus" -ge 2 ]; then
  scenario pcp2dcp2 1 2 2 1 21; run pcp2dcp2 2
  scenario pcp2dcp2i64 1 2 2 64 22; run pcp2dcp2i64 2
  # DCP without PCP: vLLM's mixed-batch path needs fewer than 32 heads per rank.
  scenario tp2dcp2 2 1 2 1 23 32; run tp2dcp2 2
  scenario pcp2 1 2 1 1 24; run pcp2 2
  for s in smoke; do
    "$SIM" --scenario $s --numeric -q -o "$WORK/$s-sim.h5" 2>/dev/null
    expect_exit 0 "$s: NCCL backend" timeout 300 "$MPIRUN" -np 2 "$EXEC" --backend nccl --scenario $s -q -o "$WORK/$s-nccl.h5"
    expect_exit 0 "$s: NCCL agrees with sim" "$DIFF" -q "$WORK/$s-sim.h5" "$WORK/$s-nccl.h5"
  done
  start=$(date +%s%N)
  expect_exit 1 "mutant-rank-local-plan stopped by consensus" timeout 300 "$MPIRUN" -np 2 "$EXEC" --backend nccl \
    --scenario smoke --layout mutant-rank-local-plan
  end=$(date +%s%N)
  expect_grep "$WORK/err" "stopping every rank before NCCL would hang" "names why"
  echo "# consensus abort: $(( (end - start) / 1000000 )) ms from mpirun start to exit (NCCL set-up included)"
else
  echo "one GPU: the world-2 NCCL runs need two"
fi
finish
