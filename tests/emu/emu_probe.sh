#!/bin/sh
# tests/gpu/gpu_probe.c under emulation: the device query and the self-test kernel (kernels/probe.cu).
# Runs on the CPU through the CUDA emulation (tests/emu/cuda_emu.h), GPU or not,
# twice: threads and blocks in ascending, then in descending order.
prog="$top_builddir/tests/emu/test_emu_probe"
"$prog" || exit $?
echo "== again with CPLAB_EMU_ORDER=reverse"
CPLAB_EMU_ORDER=reverse exec "$prog"
