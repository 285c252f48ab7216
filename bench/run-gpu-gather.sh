#!/bin/sh
# Usage: bench/run-gpu-gather.sh BUILD_DIR OUT_DIR [NP]
# Runs cplab-gather-bench (see bench/README.md) under mpirun with NP ranks, one
# per GPU (default: the GPUs nvidia-smi lists), and once more with a single
# rank for the local kernel's numbers without a peer. Writes
# OUT_DIR/gather-bench-np<N>.json (the program's -o) and .txt (its table).
# Needs a build configured with CUDA and NCCL (`make -C BUILD_DIR bench`).
set -eu
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR [NP]" >&2
  exit 2
fi
build=$1 out=$2
prog=$build/bench/cplab-gather-bench
if [ ! -x "$prog" ]; then
  echo "$0: $prog is missing: build it with 'make -C $build bench' (needs --with-cuda --with-nccl)" >&2
  exit 2
fi
if [ $# -eq 3 ]; then
  np=$3
else
  np=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
case $np in
  '' | *[!0-9]* | 0) echo "$0: no GPU found (nvidia-smi -L) and no NP given" >&2; exit 2 ;;
esac
# The mpirun of the Open MPI the program was linked against (configure's
# choice, in the build's Makefile), else the one on PATH.
mpirun=$(sed -n 's/^MPIRUN = //p' "$build/Makefile" 2>/dev/null)
mpirun=${mpirun:-mpirun}
# As tests/local.mk's AM_TESTS_ENVIRONMENT: Open MPI as root without ssh, and
# NVLink multicast off (never on shared GPU hosts).
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_plm=isolated
OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe \
  OMPI_MCA_plm OMPI_MCA_btl_vader_single_copy_mechanism NCCL_NVLS_ENABLE
mkdir -p "$out"
status=0
# bench N: one run with N ranks; its table goes to the .txt and the terminal.
bench() {
  base=$out/gather-bench-np$1
  rc=0
  timeout 300 "$mpirun" -np "$1" "$prog" -o "$base.json" >"$base.txt" || rc=$?
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
