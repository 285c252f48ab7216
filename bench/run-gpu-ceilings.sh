#!/bin/sh
# Usage: bench/run-gpu-ceilings.sh BUILD_DIR OUT_DIR [ARGS...]
# The card's ceilings on one GPU: cplab-kernel-bench --kernel ceilings (see
# bench/README.md; the cases of bench/kernel_ceilings.c: a 2 GiB and a 1 GiB
# device copy, cuBLASLt bf16 and fp8 GEMMs at 8192^3 and 4096x7168x2048),
# checked, then timed by the driver. Writes OUT_DIR/ceilings.json (the
# program's kernels.json: one entry per case, and the driver's own ceilings
# block) and OUT_DIR/ceilings.txt (its table, between two snapshots of the
# GPU's clocks, power and temperature from nvidia-smi when it exists). ARGS
# go to the program (e.g. --reps 50, --case 'ceil-bf16-*').
# Needs a build configured with CUDA (`make -C BUILD_DIR bench`).
set -eu
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR [ARGS...]" >&2
  exit 2
fi
build=$1 out=$2
shift 2
. "$(dirname "$0")/gpu-run-env.sh"
gpu_program "$build" cplab-kernel-bench
# The commit of the sources, which may be newer than what configure saw;
# without git (a copied tree) the program records configure's.
top=$(cd "$(dirname "$0")/.." && pwd)
if commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null); then
  set -- --commit "$commit" "$@"
fi
mkdir -p "$out"
txt=$out/ceilings.txt
: >"$txt"
# smi WHEN: one '#' line of the GPU's state (nothing where nvidia-smi is missing).
smi() {
  q=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu
  s=$(nvidia-smi -i 0 --query-gpu=$q --format=csv,noheader 2>/dev/null) || return 0
  echo "# nvidia-smi $1 ($q): $s" >>"$txt"
}
smi before
rc=0
timeout 600 "$prog" --kernel ceilings --case 'ceil-*' --json "$out/ceilings.json" "$@" >>"$txt" || rc=$?
smi after
cat "$txt"
if [ "$rc" -ne 0 ]; then
  echo "$0: $prog failed (exit $rc; 1: a check failed; 124: over 600 s)" >&2
  exit 2
fi
echo "wrote $out/ceilings.json and $txt"
