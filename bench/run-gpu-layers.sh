#!/bin/sh
# Usage: bench/run-gpu-layers.sh BUILD_DIR OUT_DIR [GPUS [PRESET]]
# The layout comparison of cplab-bench (bench/layers/README.md) on this node,
# as bench/results/*-cplab-bench-h200* were made: for N = GPUS (default: the
# GPUs nvidia-smi lists) the layouts tpN, pcpN, tpNdcpN and pcpNdcpN (N 1:
# tp4, pcp4, tp4dcp4 and pcp4dcp4, all on the one GPU), prefill 4096, 16384
# and 32768 in / 1 out, decode at 32768 with 8 out, batch 1 and 16, eager,
# piecewise and full graphs, every configuration checked against cplab-exec.
#   - N >= 2: the NCCL backend under mpirun -np N (PRESET-Ngpu-nccl*), and
#     the single-device backend on one GPU, for the same layouts
#     (PRESET-Ngpu-single*), so that the two can be compared;
#   - N = 1: the single-device backend (PRESET-4rank-single*).
# Each run writes OUT_DIR/NAME.h5, .json, .md, the plots (gnuplot, or the
# .gp script), NAME.err (the progress lines) and NAME.cmd (the command).
# PRESET: glm-5 (default) or deepseek-v3.2. Needs a build configured with
# CUDA (and NCCL for N >= 2): `make -C BUILD_DIR bench`.
set -eu
if [ $# -lt 2 ] || [ $# -gt 4 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR [GPUS [PRESET]]" >&2
  exit 2
fi
build=$1 out=$2 preset=${4:-glm-5}
. "$(dirname "$0")/gpu-run-env.sh"
gpu_program "$build" cplab-bench
if [ $# -ge 3 ]; then gpu_count "$3"; else gpu_count; fi
n=$ngpu
if [ "$n" -ge 2 ] && ! nm "$prog" 2>/dev/null | grep -q engine_nccl_shards; then
  echo "$0: $prog has no NCCL backend: configure with --with-nccl for $n GPUs" >&2
  exit 2
fi
gpu_mpi_env "$build"
mkdir -p "$out"
w=$n
[ "$n" -eq 1 ] && w=4
layouts=tp$w,pcp$w,tp${w}dcp$w,pcp${w}dcp$w
status=0

# run NAME LAUNCHER...: one cplab-bench run per workload set, the launcher
# ("" or mpirun -np N ... --backend nccl) before the common options.
run() {
  name=$1
  shift
  echo "$*" >"$out/$name.cmd"
  rc=0
  timeout 1800 "$@" -o "$out/$name" 2>"$out/$name.err" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "$0: $name failed (exit $rc; 124: over 30 minutes); see $out/$name.err" >&2
    tail -3 "$out/$name.err" >&2
    status=2
  else
    echo "wrote $out/$name.md ($(grep -c "rows agree with cplab-exec's" "$out/$name.err") configurations checked)"
  fi
}

common="--preset $preset --parallel $layouts --out-tokens 8 --graphs eager,piecewise,full --warmup 2"
for backend in nccl single; do
  if [ "$n" -eq 1 ]; then
    [ $backend = nccl ] && continue
    base=$preset-4rank-single
    set -- "$prog"
  elif [ $backend = nccl ]; then
    base=$preset-${n}gpu-nccl
    set -- "$mpirun" -np "$n" "$prog" --backend nccl
  else
    base=$preset-${n}gpu-single
    set -- "$prog"
  fi
  # shellcheck disable=SC2086 # $common is a list of options
  run "$base" "$@" $common --prefill 4096,16384,32768 --decode 32768 --reps 10 --check 4
  # shellcheck disable=SC2086
  run "$base-b16" "$@" $common --decode 32768 --batch 16 --reps 10 --check 2
done
exit $status
