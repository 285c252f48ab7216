#!/bin/sh
# Usage: bench/run-gpu-moe.sh BUILD_DIR OUT_DIR [NP]
# Runs cplab-moe-bench (bench/README.md) under mpirun with NP ranks, one per
# GPU and MoE shard (default: the GPUs nvidia-smi lists), for the MoE sizes of
# both model presets, as bench/results/2026-11-30-moe-paths-h200x2 was made:
# the MoE block's general and fast PCP paths checked equal, then timed.
# Writes OUT_DIR/moe-PRESET-np<N>.json (the program's -o) and .txt (its table).
# Needs a build configured with CUDA and NCCL (`make -C BUILD_DIR bench`).
set -eu
. "$(dirname "$0")/gpu-run-env.sh"
gpu_mpi_setup cplab-moe-bench "$@"
status=0
for preset in glm-5 deepseek-v3.2; do
  base=$out/moe-$preset-np$np
  rc=0
  timeout 300 "$mpirun" -np "$np" "$prog" --preset "$preset" -o "$base.json" >"$base.txt" || rc=$?
  cat "$base.txt"
  if [ "$rc" -ne 0 ]; then
    echo "$0: $preset with $np rank(s) failed (exit $rc; 124: over 300 s)" >&2
    status=2
  else
    echo "wrote $base.json and $base.txt"
  fi
done
exit $status
