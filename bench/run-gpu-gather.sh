#!/bin/sh
# Usage: bench/run-gpu-gather.sh BUILD_DIR OUT_DIR [NP]
# Runs the DCP gather against NCCL's all-gather (cplab-kernel-bench --kernel
# gather_nccl, see bench/README.md; once cplab-gather-bench) under mpirun with
# NP ranks, one per GPU (default: the GPUs nvidia-smi lists), and once more
# with a single rank for the local kernel's numbers without a peer. Writes
# OUT_DIR/gather-bench-np<N>.json (the driver's kernels.json, --json) and
# .txt (its table). Needs a build configured with CUDA and NCCL
# (`make -C BUILD_DIR bench`).
set -eu
. "$(dirname "$0")/gpu-run-env.sh"
gpu_mpi_setup cplab-kernel-bench "$@"
status=0
# bench N: one run with N ranks; its table goes to the .txt and the terminal.
bench() {
  base=$out/gather-bench-np$1
  rc=0
  timeout 300 "$mpirun" -np "$1" "$prog" --kernel gather_nccl --reps 50 --json "$base.json" >"$base.txt" || rc=$?
  cat "$base.txt"
  if [ "$rc" -ne 0 ]; then
    echo "$0: the run with $1 rank(s) failed (exit $rc; 124: over 300 s)" >&2
    status=2
  else
    echo "wrote $base.json and $base.txt"
  fi
}
bench "$np"
[ "$np" -eq 1 ] || bench 1
exit $status
