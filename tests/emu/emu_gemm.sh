#!/bin/sh
# tests/gpu/test_gpu_gemm.c under emulation, against the host stand-in tests/emu/gemm_host.cpp: this checks
# the stand-in and the test's own arithmetic, not cuBLASLt (kernels/gemm.cu runs only on a GPU).
# Runs on the CPU through the CUDA emulation (tests/emu/cuda_emu.h), GPU or not,
# twice: threads and blocks in ascending, then in descending order.
prog="$top_builddir/tests/emu/test_emu_gemm"
"$prog" || exit $?
echo "== again with CPLAB_EMU_ORDER=reverse"
CPLAB_EMU_ORDER=reverse exec "$prog"
