# bench/gpu-run-env.sh: what the bench/run-gpu-*.sh scripts share (sourced,
# with $0 the calling script's name for messages).
#   gpu_program BUILD_DIR NAME [NEEDS]  $prog = BUILD_DIR/bench/NAME, or exit 2 naming it
#                                and what configure NEEDS (default --with-cuda)
#   gpu_count [N]                $ngpu = N, or the GPUs nvidia-smi lists; exit 2
#                                when it is not a positive number
#   gpu_mpi_env BUILD_DIR        $mpirun = the Open MPI the build was linked
#                                against (configure's, in the build's Makefile),
#                                else the one on PATH; and the environment of
#                                tests/local.mk's AM_TESTS_ENVIRONMENT: Open MPI
#                                as root without ssh, NVLink multicast off (never
#                                on shared GPU hosts)
#   gpu_mpi_setup NAME ARGS...   the MPI runners' BUILD_DIR OUT_DIR [NP]: exit 2
#                                with the usage unless 2 or 3 arguments; $build,
#                                $out (made), $prog (NAME, built with CUDA and
#                                NCCL), $np (NP or the GPUs listed), the MPI
#                                environment

gpu_program() {
  prog=$1/bench/$2
  if [ ! -x "$prog" ]; then
    echo "$0: $prog is missing: build it with 'make -C $1 bench' (needs ${3:---with-cuda})" >&2
    exit 2
  fi
}

gpu_count() {
  if [ $# -ge 1 ]; then ngpu=$1; else ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true); fi
  case $ngpu in
    '' | *[!0-9]* | 0)
      if [ $# -ge 1 ]; then echo "$0: GPUS '$ngpu' is not a positive number" >&2
      else echo "$0: no GPU found (nvidia-smi -L) and no GPU count given" >&2; fi
      exit 2 ;;
  esac
}

gpu_mpi_env() {
  mpirun=$(sed -n 's/^MPIRUN = //p' "$1/Makefile" 2>/dev/null)
  mpirun=${mpirun:-mpirun}
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_plm=isolated
  OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe \
    OMPI_MCA_plm OMPI_MCA_btl_vader_single_copy_mechanism NCCL_NVLS_ENABLE
}

gpu_mpi_setup() {
  name=$1
  shift
  if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR [NP]" >&2
    exit 2
  fi
  build=$1 out=$2
  gpu_program "$build" "$name" "--with-cuda --with-nccl"
  if [ $# -eq 3 ]; then gpu_count "$3"; else gpu_count; fi
  np=$ngpu
  gpu_mpi_env "$build"
  mkdir -p "$out"
}
