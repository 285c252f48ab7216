#!/bin/sh
# Usage: bench/run-gpu-moe.sh BUILD_DIR OUT_DIR [NP]
# Runs the MoE block's general and fast PCP paths (cplab-kernel-bench --kernel
# moe_paths, bench/README.md; once cplab-moe-bench) under mpirun with NP
# ranks, one per GPU and MoE shard (default: the GPUs nvidia-smi lists), for
# the MoE sizes of both model presets, as bench/results/2026-11-30-moe-paths-h200x2
# was made: the paths checked equal, then timed. Writes
# OUT_DIR/moe-PRESET-np<N>.json (the driver's kernels.json, --json) and .txt
# (its table). Needs a build configured with CUDA and NCCL
# (`make -C BUILD_DIR bench`).
set -eu
. "$(dirname "$0")/gpu-run-env.sh"
gpu_mpi_setup cplab-kernel-bench "$@"
status=0
for preset in glm-5 deepseek-v3.2; do
  base=$out/moe-$preset-np$np
  rc=0
  timeout 300 "$mpirun" -np "$np" "$prog" --kernel moe_paths --case "moe-$preset-*" --json "$base.json" >"$base.txt" ||
    rc=$?
  cat "$base.txt"
  if [ "$rc" -ne 0 ]; then
    echo "$0: $preset with $np rank(s) failed (exit $rc; 124: over 300 s)" >&2
    status=2
  else
    echo "wrote $base.json and $base.txt"
  fi
done
exit $status
