#!/bin/sh
# tests/gpu/test_gpu_moe.c under emulation: moe.cu against a double reference, the PCP general and
# fast paths, the plan's guard (GEMMs by the host stand-in of tests/emu/gemm_host.cpp, not cuBLASLt).
# Runs on the CPU through the CUDA emulation (tests/emu/cuda_emu.h), GPU or not,
# twice: threads and blocks in ascending, then in descending order. CPLAB_KT_SMALL=1
# leaves out the model-size cases (about 22.5 GB of weights); a GPU run has them.
prog="$top_builddir/tests/emu/test_emu_moe"
CPLAB_KT_SMALL=1 "$prog" || exit $?
echo "== again with CPLAB_EMU_ORDER=reverse"
CPLAB_KT_SMALL=1 CPLAB_EMU_ORDER=reverse exec "$prog"
